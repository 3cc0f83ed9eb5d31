"""Ranking placements, and `commscope predict` end to end on synthetic tables."""

from __future__ import annotations

import dataclasses
import json
import math
import os
import stat
from pathlib import Path

import numpy as np
import pytest

from commscope.analysis.contention import tables
from commscope.predict import build, enumerate_placements, predict, rank, rank_placements
from commscope.predict.cost import HockneyCost, TableCost
from commscope.predict.model import ClusterModel, Link, Switch
from commscope.predict.patterns import ListStep, Pattern
from commscope.predict.placement import regular
from tests import synthetic_runs
from tests.synthetic_contention import as_measured, records, store_run

B = 1e9
SIZES = [1 << 16, 1 << 20, 1 << 24]


def nic_only(m: float, cf: float) -> float:
    return cf * m / B


def cost_with(levels: dict[str, object]) -> TableCost:
    """Tables as the benchmark would measure them where transfers take ``levels[level]``."""
    recs = []
    for level, fn in levels.items():
        recs += records(level, as_measured(fn), SIZES, [1, 2, 4, 8])  # type: ignore[arg-type]
    return TableCost.from_tables(tables(recs), "synthetic")


def test_nic_contention_orders_the_paper_placements() -> None:
    model = ClusterModel("m", tuple(f"n{i}" for i in range(8)), 1, 8)
    cost = cost_with({"memory": lambda m, c: 0.0001 * m / B, "nic": nic_only})
    ranked = rank_placements(model, build("alltoall", 8, 1 << 20, block=8), cost)
    order = [pr.placement.label for pr in ranked if "cyclic" not in pr.placement.label]
    assert order == ["1x8", "8x1", "4x2", "2x4"]
    times = {pr.placement.label: pr.time_s for pr in ranked}
    assert times["2x4"] == pytest.approx(16 * (1 << 20) / B, rel=1e-3)  # 16 transfers/NIC side
    assert times["4x2"] == pytest.approx(12 * (1 << 20) / B, rel=1e-3)
    assert times["8x1"] == pytest.approx(7 * (1 << 20) / B, rel=1e-9)


def test_step_times_add_up() -> None:
    model = ClusterModel("m", tuple(f"n{i}" for i in range(4)), 1, 2)
    cost = cost_with({"memory": nic_only, "nic": nic_only})
    pattern = build("alltoall", 8, 1 << 20, block=3)
    pr = predict(model, enumerate_placements(model, 8)[0], pattern, cost)
    assert len(pr.step_s) == 3 and pr.time_s == pytest.approx(float(np.sum(pr.step_s)))
    assert sum(pr.transfers.values()) == 8 * 7


@pytest.mark.parametrize(
    ("op", "algorithm"),
    [("bcast", "binomial"), ("allreduce", "recursive-doubling"), ("alltoall", "pairwise")],
)
def test_batched_steps_price_as_steps_alone(
    monkeypatch: pytest.MonkeyPatch, op: str, algorithm: str
) -> None:
    # Two sockets and two switches (an uplink half a NIC) so every channel kind is shared.
    model = ClusterModel(
        "m",
        tuple(f"n{i}" for i in range(4)),
        2,
        2,
        nic=Link(B),
        switches=(Switch("a", (0, 1), Link(B / 2)), Switch("b", (2, 3), Link(B / 2))),
    )
    cost = cost_with({"memory": nic_only, "socket": nic_only, "nic": nic_only})
    pattern = build(op, 12, 1 << 20, algorithm)
    every = enumerate_placements(model, 12)
    placements = [dataclasses.replace(pl, symmetric=False) for pl in every]
    together = rank_placements(model, pattern, cost, placements)
    monkeypatch.setattr(rank, "BATCH", 1)  # every step counted on its own
    alone = rank_placements(model, pattern, cost, placements)
    assert [pr.placement.label for pr in together] == [pr.placement.label for pr in alone]
    for a, b in zip(together, alone, strict=True):
        assert a.step_s.tolist() == b.step_s.tolist() and a.max_cf == b.max_cf
    assert len({pr.time_s for pr in together}) > 1


def test_ranks_wait_for_their_partners_not_for_the_step() -> None:
    # Two chains on 2 nodes of 4 ranks: A sends across (slow S) then inside a node (fast f),
    # B the other way round. Each step lasts S, yet no rank waits for the other chain.
    model = ClusterModel("m", ("a", "b"), 1, 4, memory=Link(1e12), nic=Link(1e9))
    cost = HockneyCost.from_model(model)
    m = 1 << 20
    step = [
        ListStep(np.array(s, dtype=np.int64), np.array(d, dtype=np.int64), np.full(2, m))
        for s, d in (([0, 2], [4, 3]), ([0, 3], [1, 6]))
    ]
    pattern = Pattern("allreduce", "two chains", 8, m, tuple(step))
    pr = predict(model, regular(model, 2, 4), pattern, cost)
    slow, fast = m / 1e9, m / 1e12
    assert pr.step_s.tolist() == pytest.approx([slow, slow])
    assert pr.time_s == pytest.approx(slow + fast)
    # A Bcast's root sends in every step, so its chain is the sum of the steps.
    bcast = predict(model, regular(model, 2, 4), build("bcast", 8, m, "binomial-halving"), cost)
    assert bcast.time_s == pytest.approx(float(bcast.step_s.sum()))


def test_a_fabric_table_bounds_every_inter_node_transfer_by_the_pairs_in_flight() -> None:
    # A fabric that carries one node pair at full rate and two at 1.5x the time each, NIC
    # tables linear in cf, memory free: 4 ranks on 4 nodes or on 2 nodes of 2.
    model = ClusterModel("m", tuple(f"n{i}" for i in range(4)), 1, 2)
    slow = {1: 1.0, 2: 1.5, 4: 3.0, 8: 6.0}
    free = {"memory": lambda m, c: 1e-12 * m, "nic": nic_only}
    plain = cost_with(free)
    fabric = cost_with({**free, "fabric": lambda m, c: slow[c] * m / B})
    m = 1 << 20
    one = m / B  # a transfer alone (the tables are as the benchmark would measure it)
    spread, paired = regular(model, 4, 1), regular(model, 2, 2)
    # Recursive doubling (no shift symmetry: priced transfer by transfer, chained).
    rd = build("allreduce", 4, m, "recursive-doubling")
    # 4x1: each step has two node pairs exchanging on links of their own: 1.5x each.
    assert predict(model, spread, rd, plain).time_s == pytest.approx(2 * one)
    assert predict(model, spread, rd, fabric).time_s == pytest.approx(2 * 1.5 * one)
    # 2x2: the inter-node step has two exchanges on one NIC pair: the NIC (2x) binds.
    assert predict(model, paired, rd, fabric).time_s == pytest.approx(
        predict(model, paired, rd, plain).time_s
    )
    # The symmetric path (block all-to-all) and the timeline (Open MPI's Bcast) apply it too.
    a2a = build("alltoall", 4, m, block=4)
    assert spread.symmetric and a2a.shift_invariant
    # 12 transfers in flight among 4 nodes: 6 pairs' worth, 4.5x; the NIC sides carry 3 each.
    assert predict(model, spread, a2a, fabric).time_s == pytest.approx(4.5 * one)
    assert predict(model, spread, a2a, plain).time_s == pytest.approx(3 * one)
    fanout = build("bcast", 4, m, "binomial-fanout")
    assert fanout.timeline
    # The root sends to 1 and 2 at once (NIC cf 2, two transfers: one pair's worth), then 1
    # sends to 3 alone: the fabric never binds; 2 + 1 transfer times.
    assert predict(model, spread, fanout, fabric).time_s == pytest.approx(3 * one)


def test_unpriced_levels_come_last() -> None:
    model = ClusterModel("m", tuple(f"n{i}" for i in range(8)), 1, 8)
    ranked = rank_placements(model, build("alltoall", 8, 1024), cost_with({"nic": nic_only}))
    assert ranked[0].placement.label == "8x1" and ranked[0].priced
    last = ranked[-1]
    assert not last.priced and last.missing == ("memory",) and math.isinf(last.time_s)
    assert last.to_json()["time_s"] is None


CLUSTER = """\
name: synthetic
nodes: 8
sockets: 2
cores: 4
"""


@pytest.fixture
def tables_run(cli) -> tuple[int, Path]:
    recs = (
        records("memory", lambda m, c: 0.2 * c * m / B, SIZES, [1, 2, 4])
        + records("socket", lambda m, c: 0.5 * c * m / B, SIZES, [1, 2, 4])
        + records("nic", nic_only, SIZES, [1, 2, 4, 8])
    )
    run_id = store_run(cli.store, recs)
    path = cli.store.parent / "cluster.yaml"
    path.write_text(CLUSTER)
    return run_id, path


def test_cli_json_and_handoff(cli, tables_run) -> None:
    run_id, cluster = tables_run
    rankfile, hostfile = cli.store.parent / "rf", cli.store.parent / "hosts"
    out = cli(
        "predict",
        "alltoall",
        "--np",
        "8",
        "--sizes",
        "1MiB",
        "--tables",
        str(run_id),
        "--cluster",
        str(cluster),
        "--block",
        "8",
        "--json",
        "--write-rankfile",
        str(rankfile),
        "--write-hostfile",
        str(hostfile),
        check=True,
    )
    data = json.loads(out.stdout)
    times = [p["time_s"] for p in data["predictions"]]
    assert times == sorted(times) and len(times) == len(data["predictions"]) >= 7
    assert data["chosen"] == data["predictions"][0]["placement"]["label"]
    assert set(data["cost"]) == {"memory", "socket", "nic"}
    assert data["pattern"]["block"] == 8 and data["handoff"]["slurm"][0] == "-N"
    assert rankfile.read_text() == data["handoff"]["rankfile"]
    assert hostfile.read_text() == data["handoff"]["hostfile"]


def test_cli_handoff_files_refuse_a_fifo_and_a_missing_folder(cli, tables_run) -> None:
    run_id, cluster = tables_run
    fifo = cli.store.parent / "fifo"
    os.mkfifo(fifo)
    for flag, path in (
        ("--write-hostfile", fifo),
        ("--write-rankfile", cli.store.parent / "nowhere" / "rf"),
    ):
        out = cli(
            "predict",
            "bcast",
            "--np",
            "8",
            "--sizes",
            "1MiB",
            "--tables",
            str(run_id),
            "--cluster",
            str(cluster),
            flag,
            str(path),
        )
        assert out.returncode == 2, out.stderr
        assert len(out.stderr.splitlines()) == 1 and f"{flag} {path}" in out.stderr
    assert stat.S_ISFIFO(fifo.stat().st_mode)
    assert not (cli.store.parent / "nowhere").exists()


def test_cli_text_names_the_cost_model(cli, tables_run) -> None:
    run_id, cluster = tables_run
    out = cli(
        "predict",
        "bcast",
        "--np",
        "16",
        "--sizes",
        "4MiB",
        "--tables",
        str(run_id),
        "--cluster",
        str(cluster),
        "--choose",
        "4x4/2s",
        check=True,
    )
    assert f"cost of nic: t(m, cf) table of run {run_id}" in out.stdout
    assert "placements, fastest first" in out.stdout
    assert "hand-off for 4x4/2s" in out.stdout and "slurm: -N 4 --ntasks-per-node 4" in out.stdout


def test_cli_hockney_from_p2p(cli, tmp_path) -> None:
    run_id = synthetic_runs.store_run(cli.store, "p2p", with_colls=False)
    cluster = tmp_path / "c.yaml"
    cluster.write_text(CLUSTER.replace("sockets: 2", "sockets: 1"))
    out = cli(
        "predict",
        "allreduce",
        "--np",
        "8",
        "--p2p",
        str(run_id),
        "--cluster",
        str(cluster),
        "--json",
        check=True,
    )
    data = json.loads(out.stdout)
    assert data["cost"]["nic"].startswith("Hockney fit of inter-node ping-pong")
    assert all(p["time_s"] is not None for p in data["predictions"])


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--choose", "3x3"], "--choose 3x3: no such placement"),
        (["--np", "1000"], "fit no n x c placement"),
        (["--block", "x"], "--block"),
        (["--sizes", "1K,1MiB"], "predict prices one size at a time"),
        (["--cluster", "/nonexistent.yaml"], "/nonexistent.yaml: cannot read"),
    ],
)
def test_cli_errors_are_one_line(cli, tables_run, extra, message) -> None:
    run_id, cluster = tables_run
    args = [
        "predict",
        "alltoall",
        "--np",
        "8",
        "--tables",
        str(run_id),
        "--cluster",
        str(cluster),
    ]
    for flag, value in zip(extra[::2], extra[1::2], strict=True):
        if flag in args:
            args[args.index(flag) + 1] = value
        else:
            args += [flag, value]
    out = cli(*args)
    assert out.returncode == 2, out.stderr
    lines = [ln for ln in out.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and message in lines[0], out.stderr


def test_cli_without_contention_tables(cli, tmp_path) -> None:
    run_id = synthetic_runs.store_run(cli.store, "p2p", with_colls=False)
    cluster = tmp_path / "c.yaml"
    cluster.write_text(CLUSTER)
    out = cli(
        "predict", "alltoall", "--np", "8", "--tables", str(run_id), "--cluster", str(cluster)
    )
    assert out.returncode == 2 and "has no contention measurements" in out.stderr


def test_fanout_bcast_overlaps_a_child_with_its_parent() -> None:
    """2x2: 1 forwards to 3 while 0 still sends to 2, both over node 0's NIC; 4x1: the root's
    two sends share its NIC, then 1 sends alone. t = cf m / B on every level."""
    model = ClusterModel("m", tuple(f"n{i}" for i in range(4)), 1, 4)
    cost = cost_with({"memory": lambda m, c: 0.001 * c * m / B, "nic": nic_only})
    m = 1 << 20
    pattern = build("bcast", 4, m, "binomial-fanout")
    t = m / B
    two = predict(model, regular(model, 2, 2), pattern, cost)
    # 0 -> 1 takes some tau inside the node, during which 0 -> 2 runs alone; then 0 -> 2 and
    # 1 -> 3 share node 0's NIC at half speed until 0 -> 2 ends at 2 t - tau, and 1 -> 3 has
    # tau / t left alone: it ends at 2 t whatever tau is. Step by step it would be t + tau.
    assert two.time_s == pytest.approx(2 * t, rel=1e-6)
    assert two.max_cf["nic"] == 2
    four = predict(model, regular(model, 4, 1), pattern, cost)
    assert four.time_s == pytest.approx(2 * t + t, rel=1e-6)
    assert four.max_cf["nic"] == 2 and four.step_s.tolist() == pytest.approx([2 * t, t])


def test_one_way_transfers_move_at_the_nominal_rate() -> None:
    """The tables price exchanges; a fan-in with no traffic back moves at cf m / B."""
    model = ClusterModel("m", tuple(f"n{i}" for i in range(4)), 1, 4, nic=Link(bandwidth_Bps=B))

    def slow(m: float, c: float) -> float:  # exchanges at 80 % of the rate
        return 1.25 * c * m / B

    tabled = cost_with({"memory": nic_only, "nic": slow})
    floored = TableCost.from_tables(
        tables(records("nic", as_measured(slow), SIZES, [1, 2, 4])), "synthetic", model
    )
    m = 1 << 20
    gather = build("gather", 4, m)
    assert predict(model, regular(model, 4, 1), gather, tabled).time_s == pytest.approx(
        3 * 1.25 * m / B, rel=1e-3
    )
    assert predict(model, regular(model, 4, 1), gather, floored).time_s == pytest.approx(
        3 * m / B, rel=1e-9
    )
    # A pair exchange keeps the table's price.
    rd = build("allreduce", 2, m)
    assert predict(model, regular(model, 2, 1), rd, floored).time_s == pytest.approx(
        1.25 * m / B, rel=1e-3
    )
