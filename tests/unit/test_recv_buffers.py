"""Receive-buffer policy of bw and bibw: request, engine flags, series, show, report, compare."""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pytest

from commscope import kinds
from commscope.analysis import p2p
from commscope.analysis import recv_buffers as rbuf
from commscope.cli import run_cmd, run_request
from commscope.data.record_parse import record_from_dict
from commscope.data.records import Header, Point
from commscope.data.request import EngineOptions, RunRequest
from commscope.data.run_data import read_run
from commscope.data.store import Store
from commscope.errors import UsageError
from commscope.measure import engine_options, runner

SIZES = [65536, 1 << 20]
WINDOW = 64


def header(recv_buffers: str | None) -> Header:
    options = {"ops": "bw,bibw", "sizes": SIZES, "window": WINDOW}
    if recv_buffers is not None:
        options["recv_buffers"] = recv_buffers
    rec = record_from_dict(
        {
            "type": "header",
            "schema_version": 1,
            "engine_version": "0.1.0",
            "mpi": {"library_version": "Open MPI v4.1.4", "standard": "3.1"},
            "nranks": 2,
            "ranks": [
                {
                    "rank": i,
                    "node": "n0",
                    "node_index": 0,
                    "socket": 0,
                    "cpu": i,
                    "pid": 100 + i,
                    "affinity": [i],
                }
                for i in range(2)
            ],
            "timer": {"name": "monotonic_raw", "resolution_s": 1e-9, "overhead_s": 2.5e-8},
            "pairs": [{"label": "intra-socket", "ranks": [0, 1]}],
            "options": options,
            "started_unix": 1.0,
        },
        "test header",
    )
    assert isinstance(rec, Header)
    return rec


def point(op: str, size: int, rate_Bps: float, seed: int = 0) -> Point:
    """A windowed point whose samples are one window at ``rate_Bps`` with 1 % noise."""
    msgs = WINDOW * (2 if op.startswith("bibw") else 1)
    noise = np.exp(np.random.default_rng(seed).normal(0, 0.01, 20))
    data = {
        "type": "point",
        "op": op,
        "pair": "intra-socket",
        "ranks": [0, 1],
        "bytes": size,
        "bytes_per_sample": size * msgs,
        "window": WINDOW,
        "iters_per_sample": 1,
        "warmup": 10,
        "samples_s": [float(size * msgs / rate_Bps * x) for x in noise],
        "stop": "rse",
        "recv_buffers": "each" if op.endswith("_each") else "one",
    }
    rec = record_from_dict(data, f"test {op} {size}")
    assert isinstance(rec, Point)
    return rec


def both(slower_each: float) -> list[Point]:
    """bw under both policies; at 1 MiB the per-message series is ``slower_each`` slower."""
    out = []
    for k, size in enumerate(SIZES):
        out.append(point("bw", size, 13e9, seed=k))
        out.append(point("bw_each", size, 13e9 * (1 - slower_each * (size > 65536)), seed=9 + k))
    return out


def request(*argv: str) -> RunRequest:
    parser = argparse.ArgumentParser()
    run_cmd.setup_parser(parser)
    return run_request.build_request(parser.parse_args(["p2p", *argv]))


def opts(**values) -> EngineOptions:
    return EngineOptions.from_json(values)


def test_a_p2p_request_defaults_to_one_buffer_and_takes_both_in_order():
    assert request().engine.recv_buffers == "one"
    assert request("--recv-buffers", "each,one").engine.recv_buffers == "each,one"
    for bad in ("both", "one,one", "", "one,each,one"):
        with pytest.raises(UsageError, match="--recv-buffers"):
            request("--recv-buffers", bad)


def test_the_engine_gets_the_flag_and_both_series_are_counted():
    both = request("--sizes", "8,1K", "--ops", "pingpong,bw,bibw", "--recv-buffers", "one,each")
    argv = runner.engine_argv("/x/commscope-engine", both.engine, set())
    assert argv[argv.index("--recv-buffers") + 1] == "one,each"
    assert engine_options.expected_points(both.engine, 1) == 2 + 2 * 2 + 2 * 2
    one = both.engine.replace(recv_buffers="one")
    assert engine_options.expected_points(one, 1) == 2 + 2 + 2


def test_a_stored_request_from_before_the_option_resumes_with_its_own_policy():
    old = opts(ops="pingpong,bw", sizes=[8])
    argv = runner.engine_argv("/x/commscope-engine", old, set())
    assert argv[argv.index("--recv-buffers") + 1] == "each"
    assert "--recv-buffers" not in runner.engine_argv("/x/e", opts(ops="pingpong"), set())
    kept = runner.engine_argv("/x/e", opts(ops="bw", recv_buffers="one"), set())
    assert kept[kept.index("--recv-buffers") + 1] == "one"


def test_series_names_and_policies():
    assert rbuf.series("bw", "one") == "bw" and rbuf.series("bibw", "each") == "bibw_each"
    assert rbuf.base_op("bibw_each") == "bibw" and rbuf.policy_of("bw_each") == "each"
    assert rbuf.policy_of("bw") == "one" and rbuf.policy_of("pingpong") is None
    assert p2p.OP_ORDER.index("bw") < p2p.OP_ORDER.index("bw_each") < p2p.OP_ORDER.index("bibw")


def test_a_run_says_which_buffers_it_used_including_runs_from_before_the_option():
    pts = both(0.3)
    assert rbuf.run_policies(header("one,each").raw, pts) == ("one", "each")
    assert rbuf.run_policies(header("one").raw, pts) == ("one",)
    legacy = header(None).raw
    assert rbuf.run_policies(legacy, [point("bw", 8, 1e9)]) == ("each",)
    assert "before --recv-buffers" in rbuf.describe(("each",), rbuf.recorded(legacy))
    assert rbuf.run_policies(None, pts) == ()  # imported output: no engine header
    assert rbuf.run_policies(legacy, []) == ()  # nothing windowed
    assert rbuf.run_policies(header("one").raw, []) == ()


def test_both_series_are_kept_apart_in_rows_and_compared_with_a_reason():
    pts = both(0.3)
    rows = {r.bytes: r for r in p2p.size_rows(pts)}
    assert rows[1 << 20].bandwidth_Bps == pytest.approx(13e9, rel=0.02)
    assert rows[1 << 20].bandwidth_each_Bps == pytest.approx(9.1e9, rel=0.02)
    [k] = p2p.key_figures(pts)
    assert k.recv_buffers == "one" and k.peak_bandwidth_Bps == pytest.approx(13e9, rel=0.02)
    [c] = rbuf.contrasts(pts)
    assert (c.op, c.bytes, c.window, c.material, c.sizes) == ("bw", 1 << 20, WINDOW, True, 2)
    assert c.relative == pytest.approx(-0.3, abs=0.02)
    assert "64 messages x 1 MiB = 64 MiB of receive buffers against 1 MiB" in c.reason()
    assert c.to_json()["footprint_bytes"] == 64 << 20


def test_series_within_noise_are_not_material():
    [c] = rbuf.contrasts(both(0.0))
    assert not c.material
    assert "the same within 10 %" in c.reason()


def test_a_run_of_the_per_message_series_alone_reports_its_peaks():
    pts = [p for p in both(0.3) if p.op == "bw_each" and p.bytes == 1 << 20]
    [k] = p2p.key_figures(pts)
    assert k.recv_buffers == "each" and k.peak_bandwidth_Bps == pytest.approx(9.1e9, rel=0.02)
    assert rbuf.contrasts(pts) == []


def store(path: Path, pts: list[Point], recv: str | None, label: str) -> int:
    with Store.open(path) as s:
        run_id = s.create_run("p2p", label, "openmpi-4.1.4", "mpirun", 2, {"np": 2})
        seg = s.start_segment(run_id, ["mpirun", "commscope-engine"])
        s.set_header(run_id, seg, header(recv))
        for p in pts:
            s.add_point(run_id, seg, p)
        s.finish_segment(seg, "complete")
        s.set_run_status(run_id, "complete")
    return run_id


def test_the_report_draws_both_curves_and_the_reason_only_where_they_differ(tmp_path):
    path = tmp_path / "s.sqlite"
    differ = store(path, both(0.3), "one,each", "differ")
    same = store(path, both(0.0), "one,each", "same")
    with Store.open(path) as s:
        page_differ = kinds.render_report([read_run(s, differ)])
        page_same = kinds.render_report([read_run(s, same)])
        drawn = kinds.report_contexts([read_run(s, same)])[0]
    assert "Receive buffers" in page_differ and "measured both ways" in page_differ
    assert "64 MiB of receive buffers against 1 MiB: both curves are drawn" in page_differ
    assert "bw (receive buffer per message)" in page_differ  # the second curve's legend
    assert "only the reused buffer's curve is drawn" in page_same
    assert "bw (receive buffer per message)" not in page_same
    assert {c.op for f in drawn["figures"] for c in f.curves} == {"bw"}
    assert all(r.bandwidth_each_Bps for r in drawn["rows"])  # the table keeps both


def test_compare_warns_when_bw_rows_stand_for_different_buffers(tmp_path):
    path = tmp_path / "s.sqlite"
    bw_only = [p for p in both(0.3) if p.op == "bw"]
    new = store(path, bw_only, "one", "new")
    old = store(path, bw_only, None, "old")
    with Store.open(path) as s:
        runs = [
            (label, s.get_run(i).header, s.points(i)) for label, i in (("new", new), ("old", old))
        ]
    note = rbuf.mixed_note(runs)
    assert "new: one receive buffer reused" in note and "old: one receive buffer per" in note
    assert rbuf.mixed_note(runs[:1] * 2) == ""
