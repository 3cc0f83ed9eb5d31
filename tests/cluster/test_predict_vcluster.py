"""Placement predictions against the collective run on each placement (root).

Four nodes at 50 mbit, 4 ranks: 2x2 and 4x1 (two nodes for a two-rank cell: 1x2 and 2x1). The
t(m, cf) tables come from the same cluster.
At 200 mbit 4x1 moves more bytes between nodes than two shared cores can shape and copy: it
measured 44-48 % of its NICs' rate and fell behind 2x2, which the network alone would not do.

CI keeps one representative cell per MPI; the full grids (every modelled operation, p and
size, under both MPIs) are bench/predict_vcluster.py's, named in each test.
"""

from __future__ import annotations

import json
import math
import subprocess
from pathlib import Path

import pytest

from commscope.data.store import Store
from tests.conftest import have_mpi, need

NO_PUT = "btl_tcp_flags=send,inplace,need-ack,need-csum,hetero-rdma"

pytestmark = pytest.mark.cluster


def tables_run(cli, mpi: str, sizes: str, levels: tuple[str, ...] = (), cf_max: int = 0) -> int:
    """Measure t(m, cf) tables, two ranks per node, under the protocol the checks run with.

    ``cf_max``: the most transfers sharing a channel that are measured (0: all there are).
    """
    # Without the TCP BTL's PUT protocol a pair exchange moves both directions at once, as
    # the tables' t / 2 assumes; validate predict runs the placements with the same setting.
    settings = ["--mca", NO_PUT] if mpi == "openmpi" else []
    return int(
        json.loads(
            cli(
                "run",
                "contention",
                "--vcluster",
                "--mpi",
                mpi,
                "--ranks-per-node",
                "2",
                "--sizes",
                sizes,
                *(["--levels", ",".join(levels)] if levels else []),
                *(["--cf-max", str(cf_max)] if cf_max else []),
                *settings,
                "--json",
                "--quiet",
                timeout=900,
                check=True,
            ).stdout
        )["run"]
    )


@pytest.mark.parametrize("cluster", [(4, "50mbit")], indirect=True)
def test_predicted_order_of_placements_matches_the_measured_one(cli, cluster):
    """The block All-to-all at 1 MiB, one stage of 8 launches a point; the grid over sizes
    (256 KiB to 4 MiB, 40 launches) is the bench's: `flock /tmp/commscope-bench.lock
    .venv/bin/python bench/predict_vcluster.py --ops alltoall:block --sizes 256KiB,1MiB,4MiB
    --runs 2 --max-launches 40`."""
    need(have_mpi("openmpi"), "openmpi is not installed")
    sizes = "1MiB"
    tables = tables_run(cli, "openmpi", sizes)
    # The two placements' times differ by 12-20 % here. One validation runs every placement
    # twice in turn and judges their mean (--runs 2); at 1 MiB 31-40 of 40 launches were
    # valid (at 256 KiB 3-9): one stage of 8 launches after the 4 warm-up ones leaves each point
    # several (a limit of 10 took a second stage of 8: 18-20 s a run against 12-14 s).
    out = json.loads(
        cli(
            "validate",
            "predict",
            "--np",
            "4",
            "--tables",
            str(tables),
            "--sizes",
            sizes,
            "--repeats",
            "2",
            "--max-launches",
            "8",
            "--vcluster",
            "--json",
            timeout=1800,
            check=True,
        ).stdout
    )
    rows = out["placements"]
    assert {r["placement"] for r in rows} == {"2x2", "4x1"}
    for r in rows:
        print(
            f"\n{r['placement']} {r['bytes']} B: predicted {r['predicted_s'] * 1e3:.1f} ms,"
            f" measured {r['measured_s'] * 1e3:.1f} ms ({r['relative_error']:+.0%})",
            end="",
        )
    assert not any(v["unmeasured"] for v in out["sizes"]), out["sizes"]
    # Each time comes from the valid launches of the point's own run, counted beside it.
    assert all(r["launches"] >= r["valid_launches"] >= 1 for r in rows), rows
    assert all(0 <= r["late_launches"] <= r["launches"] for r in rows), rows
    # Each placement's time is the mean of its two runs' own.
    for r in rows:
        assert len(r["run_times_s"]) == 2, r
        ran = [t for t in r["run_times_s"] if t is not None]
        assert r["measured_s"] == pytest.approx(sum(ran) / len(ran), rel=1e-9), r
    # The nodes inherit the host's congestion control; BBR on them is named per placement.
    bbr = Path("/proc/sys/net/ipv4/tcp_congestion_control").read_text().strip() == "bbr"
    assert all(len(r["bbr_nodes"]) == (r["nodes"] if bbr else 0) for r in rows), rows
    # The order holds (the aim of Peryshkova and Kurnosov 2018, contention-aware placement)
    # wherever the measured gap beats the launch-to-launch noise of the same runs: a reversal
    # within that noise is the machine's, not the prediction's.
    with Store.open(cli.store) as store:
        by = {r["placement"]: r for r in rows}
        a, b = by["2x2"], by["4x1"]
        noise = relative_spread(store, a["run_id"], a["bytes"]) + relative_spread(
            store, b["run_id"], b["bytes"]
        )
        run = store.get_run(rows[0]["run_id"])
        labels = [r.label for r in store.list_runs() if r.kind == "validate"]
    gap = abs(a["measured_s"] - b["measured_s"]) / min(a["measured_s"], b["measured_s"])
    print(f"\nmeasured gap {gap:.0%}, noise {noise:.0%}, tau {out['sizes'][0]['kendall_tau']}")
    predicted_first = a["predicted_s"] < b["predicted_s"]
    assert (a["measured_s"] < b["measured_s"]) == predicted_first or gap <= noise, (a, b, noise)
    # Every run of every placement is kept in the store as a run of its own.
    assert sorted(labels) == sorted(
        f"predict alltoall_block {pl}" for pl in ("2x2", "4x1") for _ in range(2)
    )
    assert out["mca"] == run.request["mca"] == {"btl_tcp_flags": NO_PUT.split("=", 1)[1]}
    # Pinned by global rank: ranks 0 and 2 share a core on 2x2 as on 4x1, where the tables'
    # node rotation would put rank 2 (the second node's first) on rank 1's core.
    two_by_two = next(r["run_id"] for r in out["placements"] if r["placement"] == "2x2")
    with Store.open(cli.store) as store:
        header = store.get_run(two_by_two).header
    assert header["options"]["pin"] == 2
    (first,), (second,) = header["ranks"][0]["affinity"], header["ranks"][1]["affinity"]
    assert first != second
    assert [r["affinity"] for r in header["ranks"]] == [[first], [second], [first], [second]]
    # Sanity, not the accuracy goal (bench/predict_vcluster.py measures that): a transfer
    # priced at half its exchange, as tables read the wrong way give, would be -50 %.
    assert all(v["median_relative_error"] <= 0.35 for v in out["sizes"]), out["sizes"]


def relative_spread(store: Store, run_id: int, size: int) -> float:
    """Range of a point's valid launch times over their median: the launch-to-launch noise.

    Below three valid launches the noise is unknown (infinite): no order is asserted on it.
    """
    (point,) = [c for c in store.colls(run_id) if c.bytes == size]
    times = point.valid_times_s
    if len(times) < 3:
        return math.inf
    return (max(times) - min(times)) / point.median_s


def ordered_where_the_gap_beats_the_noise(rows: list[dict], store: Store) -> int:
    """Assert the measured order of every placement pair whose predicted gap exceeds the noise.

    The noise of a pair is the sum of both placements' launch ranges (relative), measured in
    the same runs; returns the number of pairs asserted.
    """
    asserted = 0
    for i, a in enumerate(rows):
        for b in rows[i + 1 :]:
            if a["bytes"] != b["bytes"]:
                continue
            gap = abs(a["predicted_s"] - b["predicted_s"]) / min(a["predicted_s"], b["predicted_s"])
            noise = relative_spread(store, a["run_id"], a["bytes"]) + relative_spread(
                store, b["run_id"], b["bytes"]
            )
            print(
                f"\n  {a['placement']} vs {b['placement']} at {a['bytes']} B: predicted gap"
                f" {gap:.0%}, noise {noise:.0%}",
                end="",
            )
            if gap > noise:
                faster_predicted = a["predicted_s"] < b["predicted_s"]
                assert (a["measured_s"] < b["measured_s"]) == faster_predicted, (a, b)
                asserted += 1
    return asserted


def validate_measured(
    cli, mpi: str, op: str, procs: int, tables: int, size: int, launches: int
) -> dict:
    """`validate predict --json` until every placement has a valid launch (three tries).

    With four ranks on two cores that other work shares too, a launch is often invalid (a
    rank started late); a point of ``launches`` such launches has no time, and the check is
    repeated.
    """
    for _attempt in range(3):
        out = json.loads(
            cli(
                "validate",
                "predict",
                "--mpi",
                mpi,
                "--op",
                op,
                "--np",
                str(procs),
                "--tables",
                str(tables),
                "--sizes",
                str(size),
                "--max-launches",
                str(launches),
                "--vcluster",
                "--json",
                timeout=900,
                check=True,
            ).stdout
        )
        if not any(v["unmeasured"] for v in out["sizes"]):
            return out
        print(f"\n{mpi} {op} p={procs}: {out['sizes'][0]['unmeasured']} without a valid launch")
    raise AssertionError(f"{mpi} {op} p={procs}: three validations left placements unmeasured")


def forced_cell(
    cli, op: str, procs: int, tables: int, size: int, launches: int = 40
) -> tuple[dict, int]:
    """`validate predict` of one operation forced to Open MPI's modelled algorithm, checked.

    ``launches``: each point's most (`--max-launches`). Returns the output and the number of
    placement pairs whose measured order was asserted.
    """
    from commscope.validate import forcing

    mpi = "openmpi"
    placements = {"1x2", "2x1"} if procs == 2 else {"2x2", "4x1"}
    out = validate_measured(cli, mpi, op, procs, tables, size, launches)
    rows = out["placements"]
    assert {r["placement"] for r in rows} == placements
    expected = forcing.forced(op, forcing.algorithm_of(op, None, mpi), mpi, procs)
    assert out["forced"] == expected.to_json()
    # 1 MiB messages between nodes: above Open MPI's TCP eager limit, read from the runs.
    assert out["rendezvous"]["largest_message_bytes"] == size
    assert out["rendezvous"]["eager_limit"]["setting"] == "btl_tcp_eager_limit"
    assert out["rendezvous"]["eager_enough_bytes"] == size + 128
    assert out["rendezvous"]["answer_wait"]["bytes"] == size  # the tables' queue level
    assert out["rendezvous"]["answer_wait"]["samples"] > 0
    # Each ring hop between nodes races its receiver's stream: priced from the level.
    waiting = {r["placement"]: r["answer_wait_s"] for r in rows}
    if (op, procs) == ("allgather", 4):
        assert out["rendezvous"]["answers_priced"] is True
        assert waiting["4x1"] > waiting["2x2"] > 0
    else:  # trees, pairs and recursive doubling: no answer idles a link
        assert set(waiting.values()) == {0.0}
    (verdict,) = out["sizes"]
    tau = verdict["kendall_tau"]
    print(
        f"\n{mpi} {op} p={procs}: Kendall tau {tau}, median |error|"
        f" {verdict['median_relative_error']:.0%}; "
        + ", ".join(
            f"{r['placement']} {r['predicted_s'] * 1e3:.2f}/{r['measured_s'] * 1e3:.2f} ms"
            for r in rows
        ),
        end="",
    )
    if rows[0]["predicted_s"] == rows[1]["predicted_s"]:
        assert tau is None  # a predicted tie orders nothing
    else:
        assert tau in (-1.0, 1.0)  # two placements, measured apart
    errors = sorted(abs(r["relative_error"]) for r in rows)
    assert verdict["median_relative_error"] == pytest.approx(sum(errors) / 2)
    with Store.open(cli.store) as store:
        for r in rows:
            # Each real run recorded the settings that forced the algorithm.
            request = store.get_run(r["run_id"]).request
            assert request["engine"]["ops"] == expected.engine_op == op
            recorded = request.get("mca") or {}
            assert expected.mca and expected.mca.items() <= recorded.items()
        return out, ordered_where_the_gap_beats_the_noise(rows, store)


# Open MPI's representative cell (operation, p, launches a point); see the test's docstring.
# The four-rank ring's launches take 0.6 s at 1 MiB, 30 s a point at the default 40: 16 (two
# stages of 8 after the warm-up) left 13-14 valid launches a point, 13 s.
FORCED_CELL = ("allgather", 4, 16)


@pytest.mark.parametrize("cluster", [(4, "50mbit")], indirect=True)
def test_forced_collectives_are_predicted_on_one_node_and_across_nodes(cli, cluster):
    """A collective forced to its modelled algorithm, on one node and across nodes.

    Open MPI's cell: the four-rank ring Allgather, whose answers only Open MPI's recorded
    eager limit and queue level price (its 4x1 must carry more waiting answers than 2x2), then
    the two-rank Bcast (1x2, 2x1) under another TCP setting than the tables', which the check
    names. MPICH's forcing (its CVARs recorded with each run) is tested on the engine and the
    virtual cluster (tests/engine/test_cvars.py, tests/cluster/test_cvars_vcluster.py), its
    refusals in tests/unit/test_validate_forcing.py; its predictions against measurements are
    the bench's, with Open MPI's grid (Bcast, Allreduce, Allgather at p = 2 and 4; each MPI
    refuses the Bcast it cannot run as modelled): `flock /tmp/commscope-bench.lock
    .venv/bin/python bench/predict_vcluster.py --procs 2,4 --sizes 1MiB --ops
    bcast:binomial-fanout,bcast:binomial-halving,allreduce:recursive-doubling,allgather:ring
    --max-launches 40`, and the same with `--mpi mpich`.
    """
    mpi = "openmpi"
    need(have_mpi(mpi), f"{mpi} is not installed")
    # 168 ms a transfer at 50 mbit: bandwidth-bound, and long enough that a rank a few ms late
    # (four ranks on two cores) stays within the 2 % start delay a launch may carry.
    size = 1 << 20
    # The tables also time the answers behind a busy node's queue, which the note names.
    # No transfer of these cells shares its channel (a ring hop, a tree edge or the one pair
    # per node and direction): cf = 1 is every cell their prices read.
    tables = tables_run(cli, mpi, str(size), ("memory", "nic", "queue"), cf_max=1)
    op, procs, launches = FORCED_CELL
    out, asserted = forced_cell(cli, op, procs, tables, size, launches)
    assert out["tcp_settings_differ"] == []  # tables and runs on the same nodes, as set up
    # Measured under another TCP setting than the tables were: the check says which.
    for node in cluster.nodes:
        subprocess.run(
            ["ip", "netns", "exec", node.name, "sysctl", "-q", "-w",
             "net.ipv4.tcp_slow_start_after_idle=0"],
            check=True,
        )  # fmt: skip
    out, pairs = forced_cell(cli, "bcast", 2, tables, size)
    assert out["tcp_settings_differ"] == ["slow start after idle 1 against 0"]
    asserted += pairs
    # One node against two is a gap of orders of magnitude: the two-rank pair was asserted.
    assert asserted >= 1
