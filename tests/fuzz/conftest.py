"""Print how many generated inputs each fuzz test ran."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.fuzz.harness import ACCEPTED, COUNTS


@pytest.fixture
def workdir() -> Iterator[Path]:
    """A folder for the inputs and stores of one fuzz test, in memory where Linux has one.

    Thousands of small stores are created: on a disk each commit's fsync would dominate.
    """
    shm = Path("/dev/shm")
    path = Path(tempfile.mkdtemp(prefix="commscope-fuzz-", dir=shm if shm.is_dir() else None))
    yield path
    shutil.rmtree(path, ignore_errors=True)


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if not COUNTS:
        return
    terminalreporter.section("fuzz inputs")
    for name, count in sorted(COUNTS.items()):
        terminalreporter.write_line(f"{name}: {count} inputs, {ACCEPTED[name]} accepted")
    terminalreporter.write_line(f"total: {sum(COUNTS.values())} inputs")
