"""Collectives over process counts (--procs) and the collectives beyond MPI 2.2's list, under
real Open MPI and MPICH: Alltoallw, neighbourhood collectives, MPI-4 persistent collectives."""

from __future__ import annotations

import json
import os
import subprocess

import numpy as np
import pytest

from commscope.data.request import EngineOptions
from commscope.data.store import Store
from commscope.measure import engine_options
from tests.conftest import have_mpi, need

pytestmark = pytest.mark.mpi
FAMILIES = ["openmpi", "mpich"]
NEIGHBOUR = [
    f"{i}neighbor_{op}_{d}"
    for op in ("allgather", "alltoall")
    for d in ("1d", "2d")
    for i in ("", "i")
]
PERSISTENT = [
    f"{op}_init"
    for op in ("bcast", "reduce", "allreduce", "allgather", "alltoall", "barrier")
    + ("reduce_scatter_block", "scan", "exscan")
]


def _run(cli, family, *args):
    need(have_mpi(family), f"{family} is not installed")
    out = cli("run", "coll", "--mpi", family, "--np", "4", *args, "--json", timeout=900)
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    assert result["status"] == "complete"
    with Store.open(cli.store) as store:
        run = store.get_run(result["run"])
        return run, store.colls(run.id), store.segments(run.id)


@pytest.mark.parametrize("family", FAMILIES)
def test_procs_measures_each_group_in_one_run(cli, family):
    run, colls, _ = _run(
        cli, family, "--procs", "2,4", "--ops", "bcast,barrier", "--sizes", "1MiB",
        "--max-launches", "100", "--coll-budget", "1",
    )  # fmt: skip
    assert run.header["options"]["procs"] == "2,4"
    keys = {(c.op, c.group, c.nranks, c.bytes) for c in colls}
    assert keys == {
        ("bcast", "ranks 0-1", 2, 1 << 20),
        ("bcast", "world", 4, 1 << 20),
        ("barrier", "ranks 0-1", 2, 0),
        ("barrier", "world", 4, 0),
    }
    for c in colls:
        assert len(c.times_s) >= 8 and all(t > 0 for t in c.times_s)
    # Broadcasting 1 MiB to three ranks moves three times the data of one: its fastest launch
    # cannot beat the 2-rank one by more than the 2-rank launches' own spread (their median
    # above their fastest), measured here.
    two = np.array(next(c for c in colls if c.op == "bcast" and c.nranks == 2).times_s)
    four = np.array(next(c for c in colls if c.op == "bcast" and c.nranks == 4).times_s)
    spread = float(np.median(two) - two.min())
    print(f"{family}: bcast 1 MiB fastest p=2 {two.min() * 1e6:.1f} us (spread "
          f"{spread * 1e6:.1f} us), p=4 {four.min() * 1e6:.1f} us")  # fmt: skip
    assert four.min() >= two.min() - spread


def test_a_stored_group_is_skipped_and_the_others_measured(cli):
    """--resume hands the engine the stored keys: a group's key skips that group alone."""
    need(have_mpi("openmpi"), "openmpi is not installed")
    info = json.loads(cli("engine", "build", "--mpi", "openmpi", "--json", check=True).stdout)
    options = EngineOptions(ops="allgather,barrier", coll_sizes=(8,), procs="2,4", max_launches=12)
    stored = {("allgather", "ranks 0-1", 8), ("barrier", "world", 0)}
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    out = subprocess.run(
        ["mpirun.openmpi", "--oversubscribe", "-np", "4", info["path"],
         *engine_options.argv(options, skip=stored)],
        capture_output=True, text=True, env=env, timeout=300,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    records = [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]
    measured = {(r["op"], r["group"], r["bytes"]) for r in records if r["type"] == "coll"}
    assert measured == {("allgather", "world", 8), ("barrier", "ranks 0-1", 0)}


@pytest.mark.parametrize("family", FAMILIES)
def test_alltoallw_and_neighbourhood_collectives_deliver(cli, family):
    # 3 ranks: a 1-D ring with two distinct neighbours and a 3x1 grid; 4: a 2x2 grid.
    ops = ["alltoallw", "ialltoallw", *NEIGHBOUR]
    # Delivery is the point, so the back-to-back loop times them (--sync barrier): under the
    # window scheduler MPICH's four polling ranks on two cores began most launches late, and
    # the test took 70-78 s against 18.
    run, colls, _ = _run(
        cli, family, "--procs", "3,4", "--ops", ",".join(ops), "--sizes", "8,4096",
        "--check", "--max-launches", "12", "--coll-budget", "0.5", "--sync", "barrier",
    )  # fmt: skip
    assert run.header["options"]["check"] == 1  # wrong data would have aborted the run
    want = {(op, p, s) for op in ops for p in (3, 4) for s in (8, 4096)}
    assert {(c.op, c.nranks, c.bytes) for c in colls} == want
    for c in colls:
        assert all(t > 0 for t in c.times_s) and c.root is None
        if c.op.startswith("i"):
            assert 0 <= c.raw["overlap"]["overlap_pct"] <= 100


def test_persistent_collectives_run_under_mpich(cli):
    run, colls, segments = _run(
        cli, "mpich", "--ops", ",".join(PERSISTENT), "--sizes", "8,4096", "--check",
        "--max-launches", "12", "--coll-budget", "0.5", "--sync", "barrier",  # as above
    )  # fmt: skip
    assert run.header["mpi"]["standard"].startswith("4.")
    sizes = {op: (0,) if op == "barrier_init" else (8, 4096) for op in PERSISTENT}
    assert {(c.op, c.bytes) for c in colls} == {(op, s) for op in PERSISTENT for s in sizes[op]}
    assert all(t > 0 for c in colls for t in c.times_s)
    assert "refused" not in segments[-1].end


def test_persistent_collectives_refused_under_open_mpi_with_the_reason(cli):
    run, colls, segments = _run(
        cli, "openmpi", "--ops", "bcast,bcast_init,alltoall_init", "--sizes", "8",
        "--max-launches", "12",
    )  # fmt: skip
    assert [c.op for c in colls] == ["bcast"]  # the rest of the run is measured
    refused = segments[-1].end["refused"]
    assert [r["op"] for r in refused] == ["bcast_init", "alltoall_init"]
    assert all("need an MPI-4 library" in r["reason"] for r in refused)
    assert "implements MPI 3.1" in refused[0]["reason"]
    shown = cli("show", str(run.id), check=True).stdout
    assert "bcast_init not measured: persistent collectives" in " ".join(shown.split())
    as_json = json.loads(cli("show", str(run.id), "--json", check=True).stdout)
    assert [r["op"] for r in as_json["coll_refused"]] == ["alltoall_init", "bcast_init"]
