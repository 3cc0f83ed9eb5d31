"""The matrix kind from synthetic records: outliers named, JSON, tables, report section."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from rich.console import Console

from commscope import kinds
from commscope.analysis import matrix as mx
from commscope.data.record_parse import record_from_dict
from commscope.data.records import Header, Point
from commscope.data.run_data import read_run
from commscope.data.store import Store
from commscope.errors import RecordError
from commscope.kinds import matrix as matrix_kind

NODES = ("csnode1", "csnode2", "csnode3", "csnode4", "csnode5", "csnode6")
BYTES = 131072
WINDOW = 16
HOSTILE = "<script>alert(1)</script>"


def point(
    op: str,
    a: int,
    b: int,
    value: float,
    prefix: str = "",
    nbytes: int = BYTES,
    fastest: float = 0.99,
) -> Point:
    """A point whose median gives ``value``: bytes/s for bandwidth, seconds for latency.

    Its fastest sample takes ``fastest`` times the median's time.
    """
    lat = op == "matrix_lat"
    per_sample = 8 if lat else WINDOW * nbytes
    t = value if lat else per_sample / value
    rec = record_from_dict(
        {
            "type": "point",
            "op": op,
            "pair": f"{prefix}{a}->{b}",
            "ranks": [a, b],
            "bytes": 8 if lat else nbytes,
            "bytes_per_sample": per_sample,
            "window": 1 if lat else WINDOW,
            "iters_per_sample": 1,
            "warmup": 1,
            "samples_s": [t * fastest, t, t * 1.01],
            "stop": "max_samples",
        },
        "synthetic matrix point",
    )
    assert isinstance(rec, Point)
    return rec


def bw_matrix(n: int, rate, noise: float = 0.0, seed: int = 7) -> list[Point]:
    """Every ordered pair's bandwidth from rate(a, b), with lognormal noise of ``noise``."""
    rng = np.random.default_rng(seed)
    return [
        point("matrix_bw", a, b, rate(a, b) * float(np.exp(rng.normal(0, noise))))
        for a in range(n)
        for b in range(n)
        if a != b
    ]


def analysed(points: list[Point], n: int) -> list[mx.Matrix]:
    return mx.matrices(points, NODES[:n])


def outliers(m: mx.Matrix) -> set[tuple[str, str]]:
    return {(o.where, o.name) for o in m.outliers}


def test_a_uniform_matrix_names_nothing():
    (m,) = analysed(bw_matrix(4, lambda a, b: 25e6), 4)
    assert m.outliers == () and m.median == pytest.approx(25e6)
    assert m.values[0][0] is None and m.values[0][1] == pytest.approx(25e6)


@pytest.mark.parametrize("n", [4, 6])
def test_noise_within_the_floor_names_nothing(n):
    # 2 % lognormal noise stays inside the 10 % floor: nothing is ever named.
    for seed in range(50):
        (m,) = analysed(bw_matrix(n, lambda a, b: 25e6, noise=0.02, seed=seed), n)
        assert m.outliers == (), (seed, [o.text("Bps") for o in m.outliers])


@pytest.mark.parametrize("n", [4, 6])
def test_chance_outliers_under_noise_stay_rare(n):
    # 5 % lognormal noise, 200 matrices: k = 3 names a link by chance with probability
    # 0.13 % when the spread is known; estimated from a dozen links it is a few times that.
    named = links = 0
    for seed in range(200):
        (m,) = analysed(bw_matrix(n, lambda a, b: 25e6, noise=0.05, seed=seed), n)
        named += len(m.outliers)
        links += n * (n - 1)
    assert named / links < 0.01, named


def test_a_slow_sender_is_named_as_its_row_alone():
    (m,) = analysed(bw_matrix(4, lambda a, b: 6e6 if a == 2 else 25e6, noise=0.03), 4)
    assert outliers(m) == {("sender", "csnode3")}
    (o,) = m.outliers
    assert o.value == pytest.approx(6e6, rel=0.1) and o.typical == pytest.approx(25e6, rel=0.1)
    assert m.named_nodes == ("csnode3",)
    assert "csnode3 as sender: 6." in o.text("Bps") and "MADs worse" in o.text("Bps")


def test_a_node_slow_both_ways_is_named_though_half_the_links_are_slow():
    # On 4 nodes its row and column hold 6 of the 12 links: a plain median breaks down here.
    def rate(a: int, b: int) -> float:
        return 5e6 if 2 in (a, b) else 22e6

    (m,) = analysed(bw_matrix(4, rate, noise=0.03), 4)
    assert outliers(m) == {("sender", "csnode3"), ("receiver", "csnode3")}
    assert m.named_nodes == ("csnode3",)


def test_a_slow_single_link_is_named_and_not_its_nodes():
    (m,) = analysed(bw_matrix(6, lambda a, b: 8e6 if (a, b) == (1, 4) else 25e6, noise=0.03), 6)
    assert outliers(m) == {("link", "csnode2->csnode5")}
    assert m.named_nodes == ("csnode2", "csnode5")


def test_a_link_whose_best_sample_keeps_up_is_not_named():
    # Its median round trip is 8 times the others' (a rank waited for a core), its best
    # sample is as fast as theirs: held up, not slow. The same median with slow best
    # samples is named.
    def lat(fastest: float) -> list[Point]:
        return [
            point("matrix_lat", a, b, 400e-6 if (a, b) == (0, 2) else 50e-6, fastest=f)
            for a in range(4)
            for b in range(4)
            if a != b
            for f in [fastest if (a, b) == (0, 2) else 0.99]
        ]

    (held_up,) = analysed(lat(0.125), 4)
    assert held_up.outliers == ()
    (slow,) = analysed(lat(0.99), 4)
    assert outliers(slow) == {("link", "csnode1->csnode3")}


def test_latency_names_the_slow_receiver_as_the_high_column():
    pts = [
        point("matrix_lat", a, b, 400e-6 if b == 0 else 50e-6 * (1 + 0.02 * ((a + b) % 3)))
        for a in range(5)
        for b in range(5)
        if a != b
    ]
    (m,) = analysed(pts, 5)
    assert m.unit == "s" and outliers(m) == {("receiver", "csnode1")}
    # Fast links are never outliers for latency: lower is better.
    fast = [
        point("matrix_lat", a, b, 5e-6 if a == 1 else 50e-6)
        for a in range(4)
        for b in range(4)
        if a != b
    ]
    (m,) = analysed(fast, 4)
    assert m.outliers == ()


def test_bisection_distribution_per_size():
    pts = [
        point("bisection_bw", a, b, rate, prefix=f"m{r}/", nbytes=nbytes)
        for nbytes in (BYTES, 4 * BYTES)
        for r, (a, b, rate) in enumerate([(0, 1, 10e6), (2, 3, 20e6), (1, 2, 30e6), (3, 0, 40e6)])
    ]
    small, large = mx.bisection(pts)
    assert (small.bytes, large.bytes) == (BYTES, 4 * BYTES)
    assert small.pairs == 4 and small.matchings == 4
    assert small.min_Bps == pytest.approx(10e6) and small.max_Bps == pytest.approx(40e6)
    assert small.mean_Bps == pytest.approx(25e6) and small.median_Bps == pytest.approx(25e6)
    assert small.to_json()["effective_bisection_Bps"] == pytest.approx(25e6)


def test_pair_names_outside_the_pattern_are_refused():
    with pytest.raises(RecordError, match="pair"):
        point("matrix_bw", 0, 1, 1e6, prefix="x<")


def test_node_names_fall_back_to_ranks_when_ranks_share_a_node():
    one = {"ranks": [{"rank": i, "node": "vm"} for i in range(3)]}
    assert mx.node_names(one, 3) == ("vm/r0", "vm/r1", "vm/r2")
    many = {"ranks": [{"rank": i, "node": n} for i, n in enumerate(NODES[:3])]}
    assert mx.node_names(many, 3) == NODES[:3]


def test_a_matrix_of_sockets_names_each_rank_by_node_and_socket():
    ranks = [{"rank": i, "node": f"n{i // 2}", "socket": i % 2} for i in range(4)]
    header = {"ranks": ranks, "options": {"matrix_per": "socket"}}
    assert mx.node_names(header, 4) == ("n0/s0", "n0/s1", "n1/s0", "n1/s1")
    # The same ranks measured one per node would be named by rank within the node.
    assert mx.node_names({"ranks": ranks}, 4) == ("n0/r0", "n0/r1", "n1/r2", "n1/r3")


def _header(n: int, names: tuple[str, ...]) -> Header:
    rec = record_from_dict(
        {
            "type": "header",
            "schema_version": 1,
            "engine_version": "0.1.0",
            "mpi": {"library_version": "Open MPI v4.1.4", "standard": "3.1"},
            "nranks": n,
            "ranks": [
                {
                    "rank": i,
                    "node": names[i],
                    "node_index": i,
                    "socket": -1,
                    "cpu": i,
                    "pid": 10 + i,
                }
                for i in range(n)
            ],
            "timer": {"name": "monotonic_raw", "resolution_s": 1e-9, "overhead_s": 2.5e-8},
            "pairs": [],
            "options": {"ops": "matrix"},
            "started_unix": 1732230000.0,
        },
        "synthetic header",
    )
    assert isinstance(rec, Header)
    return rec


def store_run(path, points: list[Point], names: tuple[str, ...]) -> int:
    with Store.open(path) as store:
        run_id = store.create_run("matrix", HOSTILE, "synthetic", "none", len(names), {})
        seg = store.start_segment(run_id, ["synthetic"])
        store.set_header(run_id, seg, _header(len(names), names))
        for p in points:
            store.add_point(run_id, seg, p)
        store.finish_segment(seg, "complete")
        store.set_run_status(run_id, "complete")
    return run_id


def test_kind_json_tables_and_report_name_the_slow_node(tmp_path):
    names = (*NODES[:3], "<b>n4</b>")  # a hostile node name must come out escaped
    pts = bw_matrix(4, lambda a, b: 5e6 if 2 in (a, b) else 22e6, noise=0.02)
    pts += [point("matrix_lat", a, b, 60e-6) for a in range(4) for b in range(4) if a != b]
    pts += [point("bisection_bw", 0, 2, 5e6, "m0/"), point("bisection_bw", 1, 3, 22e6, "m0/")]
    run_id = store_run(tmp_path / "s.sqlite", pts, names)
    with Store.open(tmp_path / "s.sqlite") as store:
        run = read_run(store, run_id)
    # The p2p series never see these points.
    assert run.points == [] and len(run.family("paired")) == len(pts)
    summary = matrix_kind.summarize(run, kinds.View())
    assert summary is not None
    shown = json.loads(json.dumps(matrix_kind.to_json(summary)))
    lat, bw = shown["matrix"]
    assert lat["op"] == "matrix_lat" and lat["named_nodes"] == []
    assert bw["named_nodes"] == ["csnode3"] and bw["nodes"] == list(names)
    assert {(o["where"], o["name"]) for o in bw["outliers"]} == {
        ("sender", "csnode3"),
        ("receiver", "csnode3"),
    }
    assert shown["bisection"][0]["effective_bisection_Bps"] == pytest.approx(13.5e6)
    assert matrix_kind.to_json(None) == {"matrix": [], "bisection": [], "confirmation": []}

    console = Console(record=True, width=160)
    for item in matrix_kind.terminal(summary):
        console.print(item)
    text = console.export_text()
    assert "csnode3 as sender" in text and "csnode3 as receiver" in text
    assert re.search(r"csnode1 +│ +- +│ +2\d\.\d", text), text  # MB/s, diagonal empty
    assert "effective bisection bandwidth" in text

    page = kinds.render_report([run])
    assert "<h3>All-pairs matrix</h3>" in page and "<h3>Effective bisection bandwidth</h3>" in page
    assert page.count("<svg") >= 2
    assert "csnode3 as sender" in page and "csnode3 as receiver" in page
    assert "<b>n4</b>" not in page and "&lt;b&gt;n4&lt;/b&gt;" in page
    assert "<script>alert" not in page


def test_runs_without_matrix_points_have_no_matrix_section(tmp_path):
    from tests import synthetic_runs

    path = tmp_path / "s.sqlite"
    run_id = synthetic_runs.store_run(path, "p2p only")
    with Store.open(path) as store:
        run = read_run(store, run_id)
    assert matrix_kind.summarize(run, kinds.View()) is None
    assert "All-pairs matrix" not in kinds.render_report([run])


@pytest.mark.parametrize("benchmark", ["matrix", "bisection"])
def test_one_rank_is_refused_before_anything_is_stored(cli, benchmark):
    out = cli("run", benchmark, "--np", "1")
    assert out.returncode == 2
    assert out.stderr.strip().splitlines() == [
        f"commscope run: error: --np 1: {benchmark} pairs ranks, so it needs at least 2; give"
        " --np 2 or more, or run on 2 or more nodes"
    ]
    assert not cli.store.exists()


def test_a_large_matrix_is_summarised_not_drawn_on_the_terminal():
    n = 40
    names = tuple(f"node{i}" for i in range(n))
    pts = bw_matrix(n, lambda a, b: 5e6 if 7 in (a, b) else 22e6, noise=0.02)
    found = mx.matrices(pts, names)
    (summary,) = matrix_kind.terminal(matrix_kind.PairedRun(found, []))[:1]
    console = Console(width=200, record=True)
    console.print(summary)
    text = console.export_text()
    assert f"{n} nodes, {n * (n - 1)} links" in text
    assert re.search(r"median 2[12]\.\d", text)
    assert "worst nodes (median of their links) │ node7 5.0" in text
    assert text.count("\n") < 12  # a few lines, not a 40 x 40 grid


def test_a_heat_map_of_a_thousand_nodes_names_every_k_th_node():
    from commscope.report import matrix_section

    n = 1024
    names = tuple(f"n{i}" for i in range(n))
    values = tuple(tuple(None if i == j else 1e8 for j in range(n)) for i in range(n))
    m = mx.Matrix("matrix_bw", 1 << 20, names, values, 1e8, 0.0, ())
    svg = matrix_section.heat_map(m)
    labels = set(re.findall(r">(n\d+)<", svg))
    assert 16 <= len(labels) <= 2 * matrix_section.TICKS
    assert len(svg) < 3_000_000
