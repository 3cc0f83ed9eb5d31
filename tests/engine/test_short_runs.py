"""A default `run` prints one screen; a timeout before the engine starts keeps no run."""

from __future__ import annotations

import pytest

from tests.conftest import have_mpi, need

pytestmark = pytest.mark.mpi
SCREEN = 50


def test_a_timeout_before_the_engine_starts_keeps_no_run(cli):
    need(have_mpi("openmpi"), "openmpi is not installed")
    out = cli("run", "p2p", "--mpi", "openmpi", "--sizes", "8", "--timeout", "0.001")
    assert out.returncode == 1 and len(out.stderr.strip().splitlines()) == 1, out.stderr
    assert "no run was kept" in out.stderr and "raise --timeout" in out.stderr
    listed = cli("runs", check=True).stdout
    assert "p2p" not in listed


def test_a_short_run_prints_its_summary_and_full_its_tables(cli):
    need(have_mpi("openmpi"), "openmpi is not installed")
    args = ("run", "p2p", "--mpi", "openmpi", "--np", "2", "--max-size", "64K")
    brief = cli(*args, check=True, timeout=900).stdout.splitlines()
    assert len(brief) <= SCREEN and "--full" in brief[-1]
    full = cli("show", "latest", "--full", check=True).stdout.splitlines()
    assert len(full) > len(brief)
