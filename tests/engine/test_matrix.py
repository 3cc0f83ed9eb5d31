"""The all-pairs matrix and the effective bisection under real Open MPI and MPICH, 4 ranks here."""

from __future__ import annotations

import json
import os
import subprocess
from collections import Counter

import pytest

from commscope.data.request import EngineOptions
from commscope.data.store import Store
from commscope.measure import engine, engine_options
from commscope.measure import mpi as mpi_mod
from tests.conftest import have_mpi, need

pytestmark = pytest.mark.mpi
N = 4
ORDERED = {(a, b) for a in range(N) for b in range(N) if a != b}


def _run(cli, *args: str) -> tuple[dict, list]:
    out = cli("run", *args, "--np", str(N), "--samples", "3", "--json", check=True)
    result = json.loads(out.stdout)
    assert result["status"] == "complete"
    with Store.open(cli.store) as store:
        return store.get_run(result["run"]).header, store.points(result["run"])


@pytest.mark.parametrize("schedule", ["shifted", "serial"])
@pytest.mark.parametrize("family", ["openmpi", "mpich"])
def test_every_ordered_pair_once_with_positive_values(cli, family, schedule):
    need(have_mpi(family), f"{family} is not installed")
    # The first pass alone: with 4 ranks on 2 cores it may name suspects to confirm.
    header, points = _run(
        cli, "matrix", "--mpi", family, "--sizes", "1K,64K", "--matrix-schedule", schedule,
        "--no-confirm",
    )  # fmt: skip
    assert header["options"]["matrix_schedule"] == schedule
    keys = [p.key for p in points]
    assert len(keys) == len(set(keys)) == N * (N - 1) * 3
    by = Counter((p.op, p.bytes) for p in points)
    assert by == {("matrix_lat", 8): 12, ("matrix_bw", 1024): 12, ("matrix_bw", 65536): 12}
    for op, nbytes in by:
        mine = [p for p in points if (p.op, p.bytes) == (op, nbytes)]
        assert {p.ranks for p in mine} == ORDERED
        for p in mine:
            assert p.pair == f"{p.ranks[0]}->{p.ranks[1]}" and p.n_samples == 3
            assert min(p.samples_s) > 0
            if op == "matrix_bw":
                assert p.bytes_per_sample == p.window * p.bytes and p.bandwidth_Bps > 0

    shown = json.loads(cli("show", "latest", "--json", check=True).stdout)
    lat, small, large = shown["matrix"]
    assert [m["op"] for m in (lat, small, large)] == ["matrix_lat", "matrix_bw", "matrix_bw"]
    assert (small["bytes"], large["bytes"]) == (1024, 65536)
    for m in (lat, small, large):
        assert len(m["nodes"]) == N
        for i, row in enumerate(m["values"]):
            assert row[i] is None and all(x > 0 for j, x in enumerate(row) if j != i)
    # The p2p part of the run is empty: these points are the matrix kind's alone.
    assert shown["key_figures"] == [] and shown["sizes"] == []


@pytest.mark.parametrize("family", ["openmpi", "mpich"])
def test_bisection_draws_perfect_matchings_from_its_seed(cli, family):
    need(have_mpi(family), f"{family} is not installed")
    args = ("bisection", "--mpi", family, "--sizes", "64K", "--repeats", "3")
    header, points = _run(cli, *args, "--seed", "5")
    assert header["options"]["bisection_seed"] == 5
    assert len({p.key for p in points}) == len(points) == 3 * N // 2
    matchings: dict[str, list[tuple[int, int]]] = {}
    for p in points:
        assert p.op == "bisection_bw" and p.bandwidth_Bps > 0
        name, pair = p.pair.split("/")
        assert pair == f"{p.ranks[0]}->{p.ranks[1]}"
        matchings.setdefault(name, []).append(p.ranks)
    assert sorted(matchings) == ["m0", "m1", "m2"]
    for pairs in matchings.values():  # every rank in exactly one pair
        assert sorted(r for pair in pairs for r in pair) == list(range(N))
    # The same seed draws the same matchings: a resumed run measures the same pairs.
    _, again = _run(cli, *args, "--seed", "5")
    assert {p.key for p in again} == {p.key for p in points}

    shown = json.loads(cli("show", "latest", "--json", check=True).stdout)
    (dist,) = shown["bisection"]
    assert dist["matchings"] == 3 and dist["pairs"] == 6
    assert dist["min_Bps"] <= dist["mean_Bps"] <= dist["max_Bps"]


@pytest.mark.parametrize("family", ["openmpi", "mpich"])
def test_stored_points_are_skipped_when_resumed(family, monkeypatch):
    # --resume hands the engine the stored keys as --skip: it measures and writes the rest.
    need(have_mpi(family), f"{family} is not installed")
    monkeypatch.setenv(
        "COMMSCOPE_HOME", os.environ.get("COMMSCOPE_TEST_HOME", "/tmp/commscope-test-home")
    )
    mpi = mpi_mod.resolve(family)
    path = str(engine.find(mpi).path)
    stored = {("matrix_bw", f"{a}->{(a + 1) % N}", 1024) for a in range(N)}  # step 1, whole
    stored.add(("matrix_lat", "0->2", 8))  # one pair of step 2
    options = EngineOptions(ops="matrix", matrix_sizes=(1024,), matrix_samples=2)
    launcher = "mpirun.openmpi" if family == "openmpi" else "mpiexec.mpich"
    extra = ["--oversubscribe"] if family == "openmpi" else []
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    out = subprocess.run(
        [launcher, *extra, "-np", str(N), path, *engine_options.argv(options, stored)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr
    lines = [json.loads(line) for line in out.stdout.splitlines()]
    written = {(d["op"], d["pair"], d["bytes"]) for d in lines if d["type"] == "point"}
    everything = {
        (op, f"{a}->{b}", n)
        for a, b in ORDERED
        for op, n in (("matrix_lat", 8), ("matrix_bw", 1024))
    }
    assert written == everything - stored
    assert lines[-1]["points"] == len(everything) - len(stored)


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (("--pairs", "quick"), {(a, a ^ m) for a in range(N) for m in (1, 2)}),
        (("--partners", "1"), None),  # one shift, drawn: every rank sends once, receives once
    ],
)
def test_quick_and_sampled_matrices_measure_fewer_pairs(cli, args, expected):
    need(have_mpi("openmpi"), "openmpi is not installed")
    header, points = _run(cli, "matrix", "--sizes", "1K", "--no-confirm", *args)
    plan = header["options"]["matrix_plan"]
    assert plan.startswith("xor:" if "quick" in args else "sample:")
    for op in ("matrix_lat", "matrix_bw"):
        pairs = {p.ranks for p in points if p.op == op}
        if expected is not None:
            assert pairs == expected
        else:
            assert len(pairs) == N and {a for a, _ in pairs} == set(range(N))
            assert len({(b - a) % N for a, b in pairs}) == 1  # one shift for every rank


def test_a_plan_of_rank_pairs_labels_its_points_and_refuses_a_bad_one():
    need(have_mpi("openmpi"), "openmpi is not installed")
    mpi = mpi_mod.resolve("openmpi")
    path = engine.find(mpi).path
    base = ["--ops", "matrix", "--matrix-sizes", "1024", "--matrix-samples", "2"]
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    launch = ["mpirun", "--oversubscribe", "-np", str(N), str(path)]
    out = subprocess.run([*launch, *base, "--matrix-plan", "pairs:0>1,2>3;1>0",
                          "--matrix-prefix", "c1/"], capture_output=True, text=True, env=env,
                         timeout=300)  # fmt: skip
    lines = [json.loads(x) for x in out.stdout.splitlines() if x.startswith("{")]
    labels = Counter(x["pair"] for x in lines if x["type"] == "point")
    assert labels == {"c1/0->1": 2, "c1/2->3": 2, "c1/1->0": 2}  # latency and bandwidth
    bad = subprocess.run([*launch, *base, "--matrix-plan", "pairs:0>1,0>2"],
                         capture_output=True, text=True, env=env, timeout=300)  # fmt: skip
    assert bad.returncode != 0 and "rank 0 sends or rank 2 receives twice" in bad.stderr
