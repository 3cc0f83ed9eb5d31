"""LogGP: records, store, fit from synthetic data of known L, o_s, o_r, g, G, findings."""

from __future__ import annotations

import json
import math
import re

import pytest

from commscope.analysis import loggp
from commscope.data.record_parse import parse_record
from commscope.data.records import LogGP
from commscope.data.store import Store
from commscope.errors import RecordError
from tests import synthetic_loggp as syn

TRUE = syn.Model()


def params(f: loggp.LogGPFit) -> dict[str, float]:
    return {"L": f.L_s, "o_s": f.o_s_s, "o_r": f.o_r_s, "g": f.g_s, "G": f.G_s_per_byte}


def expected(m: syn.Model) -> dict[str, float]:
    return {"L": m.L, "o_s": m.o_s, "o_r": m.o_r, "g": m.g, "G": m.G}


def assert_close(got: dict[str, float], want: dict[str, float], rel: float) -> None:
    for k, v in want.items():
        assert got[k] == pytest.approx(v, rel=rel), (k, got[k], v)


def test_exact_records_give_back_every_parameter():
    (f,) = loggp.fits(syn.records(TRUE))
    assert_close(params(f), expected(TRUE), 1e-6)
    assert f.bandwidth_Bps == pytest.approx(1e10, rel=1e-6)
    assert f.message_rate_per_s == pytest.approx(1 / TRUE.g, rel=1e-6)
    # The protocol switch above 64 KiB splits the sizes: constants from below, G from above.
    assert f.small_bytes == (0, 65536)
    assert f.lines["G"].first_bytes == 98304 and f.lines["G"].last_bytes == 4 << 20
    assert not any(line.dropped_bytes for line in f.lines.values())


@pytest.mark.parametrize(
    "model",
    [
        TRUE,
        syn.Model(
            L=1.5e-6,
            o_s=0.8e-6,
            o_r=0.6e-6,
            g=1.2e-6,
            G=8e-10,
            Os=1e-10,
            Or=2e-10,
            switch_bytes=16384,
            switch_s=20e-6,
        ),  # a slow network: 1.25 GB/s
        syn.Model(
            L=0.05e-6,
            o_s=0.03e-6,
            o_r=0.12e-6,
            g=0.09e-6,
            G=1e-10,
            switch_bytes=3072,
            switch_s=3e-6,
            timer_s=40e-9,
        ),  # shared memory, as measured on this machine
    ],
)
def test_noisy_records_with_descheduled_sizes_come_back_within_one_percent(model):
    # 0.5 % noise on every sample, and three large sizes whose trains were stretched 2-4x.
    recs = syn.records(
        model, noise=0.005, samples=21, stretched={1 << 20: 3.0, 3 << 20: 2.0, 4 << 20: 4.0}
    )
    (f,) = loggp.fits(recs)
    assert_close(params(f), expected(model), 0.01)
    assert set(f.lines["G"].dropped_bytes) == {1 << 20, 3 << 20, 4 << 20}


def test_timer_cost_is_taken_off_the_send_and_receive_times():
    recs = syn.records(syn.Model(timer_s=80e-9))
    assert loggp.timer_cost_s(recs) == pytest.approx(80e-9)
    c = loggp.size_curves(recs)
    assert c.o_s_s[0] == pytest.approx(TRUE.o_s, rel=1e-9)  # size 0: no per-byte part
    # Netgauge's own o_s, from PRTT(n,d,s), agrees where the delay exceeds the gap.
    assert c.o_s_prtt_s[0] == pytest.approx(TRUE.o_s, rel=1e-9)


def test_pairs_are_fitted_separately_nearest_first():
    near = syn.records(TRUE, pair="intra-socket")
    far_model = syn.Model(L=20e-6, G=8e-9, switch_s=0.0)  # no protocol switch: one line
    far = syn.records(far_model, pair="inter-node")
    fitted = loggp.fits(far + near)
    assert [f.pair for f in fitted] == ["intra-socket", "inter-node"]
    assert_close(params(fitted[1]), expected(far_model), 1e-6)


def test_findings_name_what_stands_out():
    text = " ".join(loggp.findings(loggp.fits(syn.records(TRUE))))
    # Overheads 0.45 us of a 0.75 us one-way time: 60 %.
    assert "make up 60 % of the small-message one-way time" in text
    assert "g = 400 ns, 2.0x the send call's overhead" in text
    assert re.search(r"LogGP bandwidth of 10\.0+ GB/s", text)
    # The sender's per-byte time (Os = 0.2 G) is no copy at G's rate: not claimed.
    assert "busy for the whole transfer" not in text
    copying = syn.Model(Os=0.9e-10)
    assert "busy for the whole transfer" in " ".join(
        loggp.findings(loggp.fits(syn.records(copying)))
    )


def test_a_single_size_gives_no_fit_and_json_is_plain():
    assert loggp.fits(syn.records(TRUE, sizes=[8])) == []
    (f,) = loggp.fits(syn.records(TRUE))
    data = json.loads(json.dumps(f.to_json()))
    assert data["G_s_per_byte"] == pytest.approx(TRUE.G)
    assert len(data["sizes"]) == 45 and data["lines"]["G"]["n_sizes"] == 12
    assert all(math.isfinite(row["g_s"]) for row in data["sizes"])


def test_record_needs_n_send_times_per_sample():
    (rec,) = syn.records(TRUE, sizes=[64])
    bad = dict(rec.raw, send_s=rec.raw["send_s"][:-1])
    with pytest.raises(RecordError, match="n = 10 send times per sample"):
        parse_record(json.dumps(bad), "line 3")
    bad = dict(rec.raw, recv_s=rec.raw["recv_s"][:-1])
    with pytest.raises(RecordError, match="one entry per sample"):
        parse_record(json.dumps(bad), "line 3")
    with pytest.raises(RecordError, match="timer_s"):
        parse_record(json.dumps({k: v for k, v in rec.raw.items() if k != "timer_s"}), "x")


def test_store_keeps_loggp_points_apart_from_the_others(tmp_path):
    recs = syn.records(TRUE, sizes=[0, 8, 1024])
    run_id = syn.store_run(tmp_path / "s.sqlite", recs)
    with Store.open(tmp_path / "s.sqlite") as store:
        back = store.loggps(run_id)
        assert [p.bytes for p in back] == [0, 8, 1024]
        assert all(isinstance(p, LogGP) for p in back)
        assert store.points(run_id) == [] and store.contentions(run_id) == []
        assert store.measured_keys(run_id) == {("loggp", "intra-socket", s) for s in (0, 8, 1024)}
    assert back[2].prtt_n_d_s == recs[2].prtt_n_d_s


def test_the_runner_counts_and_passes_loggp_sizes_and_skips():
    from commscope.data.request import EngineOptions
    from commscope.measure import engine_options, runner

    opts = EngineOptions(ops="pingpong,loggp", sizes=(0, 8, 1024), loggp_sizes=(0, 1, 2, 4))
    assert engine_options.expected_points(opts, 2) == 2 * 3 + 2 * 4
    argv = runner.engine_argv("/x/commscope-engine", opts, {("loggp", "intra-socket", 4)})
    assert argv[argv.index("--loggp-sizes") + 1] == "0,1,2,4"
    assert argv[argv.index("--skip") + 1] == "loggp:intra-socket:4"


def test_run_requests_loggp_alone_and_in_the_default_job():
    import argparse

    from commscope.cli import run_cmd, run_request
    from commscope.units import netpipe_schedule

    parser = argparse.ArgumentParser()
    run_cmd.setup_parser(parser)
    alone = run_request.build_request(parser.parse_args(["loggp", "--sizes", "0,8,64K"])).engine
    assert alone.ops == "loggp"
    assert alone.loggp_sizes == (0, 8, 65536)
    default = run_request.build_request(parser.parse_args([])).engine
    ops = (default.ops or "").split(",")
    assert ops[:4] == ["pingpong", "bw", "bibw", "loggp"]
    # The NetPIPE bases without the +-3-byte perturbations: 45 sizes up to 4 MiB.
    assert default.loggp_sizes == tuple(netpipe_schedule(4 << 20, 0))
    assert len(default.sizes or ()) > len(default.loggp_sizes)
