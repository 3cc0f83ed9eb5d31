"""Fault injection for the window method: Alltoall 1 MiB with a busy loop on one core.

Not a timing bound: the same point is measured quietly a few times (which gives this
machine's run-to-run noise: the cores are shared), then with a process spinning on one of the
ranks' cores. Each loaded median must lie within 10 % of the range of the quiet medians, or
the point must say it has too few valid launches, with its late-start share.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from tests.conftest import have_mpi, need

pytestmark = pytest.mark.mpi
QUIET_RUNS = 3
LOADED_RUNS = 2


@contextmanager
def busy_core(cpu: int) -> Iterator[None]:
    """A process spinning on ``cpu`` for as long as the block runs; always killed after."""
    hog = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        os.sched_setaffinity(hog.pid, {cpu})
        yield
    finally:
        hog.kill()
        hog.wait()


def alltoall(cli, family: str) -> dict:
    """One run of Alltoall 1 MiB on 2 ranks; its row of `commscope show --json`."""
    cli("run", "coll", "--mpi", family, "--np", "2", "--ops", "alltoall", "--sizes", "1MiB",
        "--coll-budget", "1", "--json", check=True, timeout=300)
    shown = json.loads(cli("show", "latest", "--json", check=True).stdout)
    [row] = shown["collectives"]
    return row


@pytest.mark.parametrize("family", ["openmpi", "mpich"])
def test_a_busy_core_leaves_the_median_alone_or_the_point_says_why(cli, family):
    need(have_mpi(family), f"{family} is not installed")
    quiet = [alltoall(cli, family)["median_s"] for _ in range(QUIET_RUNS)]
    assert all(q is not None and q > 0 for q in quiet), quiet
    low, high = 0.9 * min(quiet), 1.1 * max(quiet)
    # Open MPI binds rank 0 to the first core of the affinity; MPICH lets ranks float, so the
    # busy loop takes a core from one of them either way.
    cpu = min(os.sched_getaffinity(0))
    with busy_core(cpu):
        loaded = [alltoall(cli, family) for _ in range(LOADED_RUNS)]
    print(f"\n{family}: quiet medians {[f'{q * 1e6:.0f}' for q in quiet]} us, accepted "
          f"{low * 1e6:.0f}-{high * 1e6:.0f} us; loaded: " + ", ".join(
              f"{(r['median_s'] or float('nan')) * 1e6:.0f} us ({r['nc']}/{r['nt']} valid, "
              f"{r['late_share']:.0%} late, {r['warnings']})" for r in loaded))
    for row in loaded:
        assert 0 <= row["late_share"] <= 1
        if "too_few_valid" in row["warnings"]:
            continue  # flagged with its cause: says so instead of reporting a number
        assert row["nc"] >= 10
        assert low <= row["median_s"] <= high, (row, quiet)
