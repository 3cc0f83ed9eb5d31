"""The one-sided kind: series, key figures, JSON, tables and report from known records."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from rich.console import Console

from commscope import kinds
from commscope.analysis import rma
from commscope.data.point_ops import RMA_OPS
from commscope.data.record_parse import record_from_dict
from commscope.data.records import Point
from commscope.data.run_data import read_run
from commscope.data.store import Store
from commscope.kinds import rma as rma_kind

HOSTILE = "<script>alert(1)</script>"
SIZES = (0, 8, 1024, 65536)
WINDOW = 64
SYNC_S = {"fence": 1.0e-6, "lock": 0.2e-6, "pscw": 1.5e-6}  # per epoch
RATE = {"put": 5e9, "get": 4e9, "acc": 2e9}  # bytes/s


def model_s(op: str, size: int) -> float:
    """Known time of one sample: one operation (lat) or a window per epoch (bw)."""
    operation, mode, sync = op.split("_")
    ops = 1 if mode == "lat" else WINDOW
    return SYNC_S[sync] + ops * size / RATE[operation]


def point(op: str, size: int, pair: str = "intra-socket") -> Point:
    window = 1 if "_lat_" in op else WINDOW
    t = model_s(op, size)
    record = record_from_dict(
        {
            "type": "point",
            "op": op,
            "pair": pair,
            "ranks": [0, 1],
            "bytes": size,
            "bytes_per_sample": window * size,
            "window": window,
            "iters_per_sample": 10,
            "warmup": 2,
            "samples_s": [t * 0.99, t, t * 1.01],
            "stop": "rse",
            "rma_sync": "MPI_Win_fence",
        },
        "test",
    )
    assert isinstance(record, Point)
    return record


def records(ops: tuple[str, ...] = RMA_OPS) -> list[Point]:
    return [point(op, size) for op in ops for size in SIZES]


def store_run(path: Path, recs: list[Point], label: str = "rma") -> int:
    with Store.open(path) as store:
        run_id = store.create_run("rma", label, "synthetic", "none", 2, {})
        seg = store.start_segment(run_id, ["synthetic"])
        for rec in recs:
            store.add_point(run_id, seg, rec)
        store.finish_segment(seg, "complete")
        store.set_run_status(run_id, "complete")
    return run_id


def test_figures_are_the_smallest_latency_and_the_peak_rate():
    summary = rma.summarize(records())
    assert summary is not None
    assert len(summary.series) == len(RMA_OPS) and len(summary.figures) == 9
    for f in summary.figures:
        # 0 bytes is the synchronisation alone; the figure is the smallest size moving data.
        assert f.latency_bytes == 8
        assert f.latency_s == pytest.approx(model_s(f"{f.operation}_lat_{f.sync}", 8))
        assert f.peak_bytes == 65536
        moved = WINDOW * 65536
        want = moved / model_s(f"{f.operation}_bw_{f.sync}", 65536)
        assert f.peak_bandwidth_Bps == pytest.approx(want)
    put = next(s for s in summary.series if s.name == "put_bw_lock")
    assert put.bytes == SIZES and put.bandwidth_Bps[0] == 0.0


def test_findings_order_the_synchronisations_by_latency():
    summary = rma.summarize(records())
    assert summary is not None
    found = rma.findings(summary)
    assert "intra-socket: put latency at 8 B: lock 202 ns < fence 1.00 us < pscw 1.50 us" in found
    assert len(found) == 3


def test_non_rma_points_are_not_series():
    assert rma.summarize([]) is None
    assert rma.series(records(("put_lat_fence",))) != []
    pp = record_from_dict(
        {
            "type": "point",
            "op": "pingpong",
            "pair": "intra-socket",
            "ranks": [0, 1],
            "bytes": 8,
            "bytes_per_sample": 8,
            "iters_per_sample": 1,
            "warmup": 0,
            "samples_s": [1e-6],
            "stop": "rse",
        },
        "test",
    )
    assert isinstance(pp, Point) and rma.summarize([pp]) is None


def test_the_run_keeps_rma_points_apart_from_p2p(tmp_path):
    path = tmp_path / "s.sqlite"
    run_id = store_run(path, records(("put_lat_lock", "get_bw_fence")))
    with Store.open(path) as store:
        run = read_run(store, run_id)
    assert run.points == [] and len(run.family("rma")) == 2 * len(SIZES)
    found = kinds.summaries(run, kinds.View())
    out = kinds.to_json(found)
    assert out["key_figures"] == [] and out["sizes"] == []
    figures = out["rma"]["figures"]
    assert {(f["operation"], f["sync"]) for f in figures} == {("put", "lock"), ("get", "fence")}
    json.dumps(out, allow_nan=False)  # show --json prints strict JSON


def test_json_of_a_run_without_rma_has_the_same_keys():
    assert rma_kind.to_json(None) == {"rma": {"figures": [], "series": []}}


def test_terminal_tables_show_latency_and_bandwidth_per_size():
    summary = rma.summarize(records(("put_lat_fence", "put_bw_fence", "acc_lat_pscw")))
    assert summary is not None
    console = Console(width=200, record=True)
    for item in rma_kind.terminal(summary):
        console.print(item)
    text = console.export_text()
    assert "one-sided (RMA)" in text and "intra-socket: one-sided latency" in text
    # put under fence at 8 B: 1 us + 8 B at 5 GB/s
    assert re.search(r"\b8 │\s+1\.00 │", text)
    # bandwidth at 64 KiB: 64 x 64 KiB in 1 us + 64 x 64 KiB / 5 GB/s
    rate = WINDOW * 65536 / model_s("put_bw_fence", 65536) / 1e6
    assert f"{rate:.1f}" in text


def test_report_section_has_figures_plot_and_escapes(tmp_path):
    path = tmp_path / "s.sqlite"
    run_id = store_run(path, records(), HOSTILE)
    with Store.open(path) as store:
        page = kinds.render_report([read_run(store, run_id)])
    assert "<h3>One-sided communication (RMA)</h3>" in page
    row = (
        '<td class="l">intra-socket</td><td class="l">put</td><td class="l">lock</td><td>0.20</td>'
    )
    assert row in page
    plot = re.search(
        r"<figcaption>One-sided latency and bandwidth: intra-socket <span>.*?</figcaption>"
        r"(<svg.*?</svg>)",
        page,
        re.S,
    )
    assert plot is not None and "put lock" in plot.group(1)
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "<script>alert(1)" not in page


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (["--sizes", "8,12"], "acc sums doubles"),
        (["--ops", "put,pingpong"], "--ops"),
        (["--rma-sync", "fence,barrier"], "--rma-sync"),
        (["--ops", "put", "--sizes", "8,lots"], "--sizes"),
    ],
)
def test_bad_rma_input_is_one_line_exit_2_and_stores_nothing(cli, args, named):
    out = cli("run", "rma", "--np", "2", *args)
    assert out.returncode == 2, out.stderr
    lines = [ln for ln in out.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and named in lines[0], out.stderr
    assert not cli.store.exists()
