"""Shared helpers: run the installed CLI as a user would, against a private store."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest


def in_ci() -> bool:
    """CI runs (CI=true) as root with everything installed: nothing may be skipped there."""
    return os.environ.get("CI") == "true"


def need(condition: bool, reason: str) -> None:
    """Skip loudly when a real part is missing; in CI (CI=true) a missing part fails instead.

    The one place a test may skip: tests/unit/test_no_skips.py fails on any other skip.
    """
    if condition:
        return
    if in_ci():
        pytest.fail(f"CI must provide this: {reason}")
    pytest.skip(f"SKIPPED, NOT TESTED: {reason}")


def no_vcluster_up() -> None:
    """Make sure no virtual cluster is up before a test builds its own.

    Elsewhere a cluster that is up may be someone's: the test skips, loudly. In CI
    (CI=true) the machine is the test's own, so a left-over cluster is removed instead of
    hiding every cluster test behind a skip.
    """
    from commscope.measure import vcluster

    if vcluster.STATE_FILE.exists() and in_ci():
        vcluster.down()
    need(
        not vcluster.STATE_FILE.exists(),
        "a vcluster is up on this machine and this test would remove it; run"
        " 'commscope vcluster down' first",
    )


def have_mpi(family: str) -> bool:
    launcher = {"openmpi": "mpirun.openmpi", "mpich": "mpiexec.mpich"}[family]
    return shutil.which(launcher) is not None


class CLI:
    """Runs `python -m commscope --store STORE ...` and returns the CompletedProcess."""

    def __init__(self, store: Path, home: Path) -> None:
        self.store = store
        self.env = dict(os.environ, COMMSCOPE_STORE=str(store), COMMSCOPE_HOME=str(home))
        # The tests run 4 ranks on 2 cores on purpose; a user's --np past the cores is refused.
        self.env["COMMSCOPE_OVERSUBSCRIBE"] = "1"
        self.env.pop("COMMSCOPE_MPI", None)

    def argv(self, *args: str) -> list[str]:
        return [sys.executable, "-m", "commscope", *args]

    def __call__(
        self, *args: str, timeout: float = 600, check: bool = False, cwd: str | None = None
    ) -> subprocess.CompletedProcess[str]:
        out = subprocess.run(
            self.argv(*args), capture_output=True, text=True, env=self.env, timeout=timeout, cwd=cwd
        )
        if check and out.returncode != 0:
            raise AssertionError(
                f"commscope {' '.join(args)} failed ({out.returncode}):\n{out.stdout}\n{out.stderr}"
            )
        return out


@pytest.fixture
def cli(tmp_path: Path) -> CLI:
    # Engines built on demand are shared between tests: building one takes seconds.
    home = Path(os.environ.get("COMMSCOPE_TEST_HOME", "/tmp/commscope-test-home"))
    return CLI(tmp_path / "store.sqlite", home)
