"""Shared parts of the SimGrid tests: every test needs smpicc and smpirun."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from commscope.data.store import Store
from tests.conftest import CLI, need

GIGE = 125e6


@pytest.fixture(autouse=True)
def simgrid() -> None:
    need(
        shutil.which("smpicc") is not None and shutil.which("smpirun") is not None,
        "SimGrid's smpicc and smpirun (apt-get install libsimgrid-dev)",
    )


def model(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "cluster.yaml"
    path.write_text(text)
    return path


def one_way(cli: CLI, run: int) -> dict[tuple[str, int], float]:
    with Store.open(cli.store) as store:
        return {(p.pair, p.bytes): p.median_s for p in store.points(run) if p.op == "pingpong"}
