"""One-sided communication under real Open MPI and MPICH, 2 ranks on this node."""

from __future__ import annotations

import json

import pytest

from commscope.data.point_ops import RMA_OPS
from commscope.data.store import Store
from tests.conftest import have_mpi, need

pytestmark = pytest.mark.mpi
SIZES = (8, 1024, 65536, 1 << 20)


@pytest.mark.parametrize("family", ["openmpi", "mpich"])
def test_every_operation_and_sync_is_measured_and_checked(cli, family):
    need(have_mpi(family), f"{family} is not installed")
    out = cli(
        "run", "rma", "--mpi", family, "--np", "2", "--sizes", ",".join(map(str, SIZES)),
        "--check", "--point-budget", "0.05", "--json", check=True,
    )  # fmt: skip
    result = json.loads(out.stdout)
    # --check compares every byte after each (op, sync, size); a mismatch would end the run.
    assert result["status"] == "complete"
    with Store.open(cli.store) as store:
        run = store.get_run(result["run"])
        points = store.points(run.id)
    options = run.header["options"]
    assert options["check"] == 1 and options["rma_ops"] == "put,get,acc"
    assert options["rma_sync"] == "fence,lock,pscw"
    assert sorted((p.op, p.bytes) for p in points) == sorted(
        (op, size) for op in RMA_OPS for size in SIZES
    )
    by = {(p.op, p.bytes): p for p in points}
    for p in points:
        assert p.pair == "intra-socket" or p.pair == "intra-node"
        assert p.stop in ("rse", "budget", "max_samples") and p.n_samples >= 2
        assert p.raw["rma_window"] == "MPI_Win_allocate"
        lock = p.op.endswith("_lock")
        assert ("MPI_Win_flush" in p.raw["rma_sync"]) == lock
        assert p.window == (1 if "_lat_" in p.op else 64)
        assert p.bytes_per_sample == p.window * p.bytes
    for op in RMA_OPS:
        small, large = by[(op, 8)], by[(op, 1 << 20)]
        assert small.median_s > 0
        # Fastest samples: a point may have only two under the short budget, and one time
        # slice lost to another process (16 ms seen on a busy machine) would decide a median.
        if "_lat_" in op:
            # A mebibyte takes longer to move than eight bytes, whatever the synchronisation.
            assert min(large.samples_s) > min(small.samples_s), op
        else:
            # A window of 64 KiB operations moves data faster than one of 8-byte ones: the
            # synchronisation's fixed cost is spread over 8192 times the bytes.
            mid = by[(op, 65536)]
            fastest = {p.bytes: p.bytes_per_sample / min(p.samples_s) for p in (small, mid)}
            assert fastest[65536] > fastest[8], (op, fastest)
    print(
        f"{family}: put latency at 8 B (us):",
        {s: round(by[(f"put_lat_{s}", 8)].median_s * 1e6, 3) for s in ("fence", "lock", "pscw")},
    )


@pytest.mark.parametrize("family", ["openmpi", "mpich"])
def test_selection_measures_only_what_was_asked(cli, family):
    need(have_mpi(family), f"{family} is not installed")
    out = cli(
        "run", "rma", "--mpi", family, "--np", "2", "--ops", "get", "--rma-sync", "pscw",
        "--sizes", "0,24", "--check", "--point-budget", "0.02", "--json", check=True,
    )  # fmt: skip
    result = json.loads(out.stdout)
    with Store.open(cli.store) as store:
        points = store.points(result["run"])
    assert sorted((p.op, p.bytes) for p in points) == [
        ("get_bw_pscw", 0),
        ("get_bw_pscw", 24),
        ("get_lat_pscw", 0),
        ("get_lat_pscw", 24),
    ]
    shown = json.loads(cli("show", str(result["run"]), "--json", check=True).stdout)
    figures = shown["rma"]["figures"]
    assert [(f["operation"], f["sync"], f["latency_bytes"]) for f in figures] == [
        ("get", "pscw", 24)
    ]
    # The point-to-point part of the run stays empty: one-sided points are not ping-pongs.
    assert shown["key_figures"] == [] and shown["sizes"] == []


def test_an_mpi_without_a_one_sided_path_is_named_with_the_fix(cli):
    # Open MPI's osc/rdma over the TCP BTL has no one-sided path: the state of two nodes
    # joined by TCP, here between two local ranks.
    need(have_mpi("openmpi"), "openmpi is not installed")
    out = cli(
        "run", "rma", "--mpi", "openmpi", "--np", "2", "--sizes", "8", "--mca", "osc=rdma",
        "--mca", "btl=self,tcp", "--json",
    )  # fmt: skip
    assert out.returncode != 0
    lines = [ln for ln in out.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and "MPI_Win_allocate" in lines[0] and "--mca osc=ucx" in lines[0]
