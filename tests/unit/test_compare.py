"""Comparing runs: medians, relative differences and the Mann-Whitney significance test."""

from __future__ import annotations

import json

import numpy as np
import pytest

from commscope.analysis.compare import compare_runs, grouped, mann_whitney_p
from commscope.data.record_parse import record_from_dict
from commscope.data.records import Coll, Point
from commscope.data.store import Store


def pp(nbytes, samples, op="pingpong", window=None, pair="inter-node"):
    data = {
        "type": "point",
        "op": op,
        "pair": pair,
        "ranks": [0, 1],
        "bytes": nbytes,
        "bytes_per_sample": nbytes * (window or 1),
        "iters_per_sample": 1,
        "warmup": 0,
        "samples_s": [float(s) for s in samples],
        "stop": "rse",
    }
    if window:
        data["window"] = window
    rec = record_from_dict(data, "test")
    assert isinstance(rec, Point)
    return rec


def coll(nbytes, times, flags=None):
    rec = record_from_dict(
        {
            "type": "coll",
            "op": "allreduce",
            "group": "world",
            "nranks": 4,
            "bytes": nbytes,
            "method": "window",
            "times_s": list(times),
            "flags": flags or [0] * len(times),
            "stop": "rule_b",
        },
        "test",
    )
    assert isinstance(rec, Coll)
    return rec


RNG = np.random.default_rng(3)
BASE = 10e-6 * np.exp(RNG.normal(0, 0.02, 40))


def test_clearly_different_samples_are_significant():
    slower = BASE * 1.2
    (row,) = compare_runs([(1, [pp(1024, BASE)]), (2, [pp(1024, slower)])])
    (d,) = row.differences
    assert d.significant and d.p_value < 1e-6
    assert d.relative_difference == pytest.approx(0.2, rel=1e-9)
    assert row.values[0].latency_s == pytest.approx(float(np.median(BASE)))
    assert row.values[1].bandwidth_Bps == pytest.approx(1024 / float(np.median(slower)))


def test_identical_samples_are_not_significant():
    (row,) = compare_runs([(1, [pp(8, BASE)]), (2, [pp(8, BASE.copy())])])
    (d,) = row.differences
    assert not d.significant and d.p_value == pytest.approx(1.0)
    assert d.relative_difference == 0.0


def test_same_distribution_other_draw_is_usually_not_significant():
    hits = 0
    for seed in range(50):
        rng = np.random.default_rng(100 + seed)
        a, b = rng.normal(1.0, 0.05, 30), rng.normal(1.0, 0.05, 30)
        p = mann_whitney_p(list(a), list(b))
        hits += p < 0.01
    assert hits <= 3  # about 1 % false positives expected


def test_single_values_get_no_p_value_and_missing_sizes_none():
    rows = compare_runs([(1, [pp(8, [1e-6]), pp(16, [2e-6])]), (2, [pp(8, [1.5e-6])])])
    by_size = {r.bytes: r for r in rows}
    d = by_size[8].differences[0]
    assert d.p_value is None and not d.significant
    assert d.relative_difference == pytest.approx(0.5)
    assert by_size[16].values[1] is None and by_size[16].differences == (None,)


def test_pairs_of_no_fixed_rank_keep_their_sizes_together():
    # A node matrix names its pairs "0->1", "1->0": one group per pair, whatever the sizes.
    run = [pp(m, [1e-6], op="matrix_lat", pair=pair) for m in (8, 64) for pair in ("1->0", "0->1")]
    groups = [key for key, _ in grouped(compare_runs([(1, run), (2, run)]))]
    assert groups == [("p2p", "matrix_lat", "0->1"), ("p2p", "matrix_lat", "1->0")]


def test_bandwidth_runs_with_other_windows_compare_per_message():
    per_message = BASE / 64
    a = pp(4096, per_message * 64, op="bw", window=64)
    b = pp(4096, per_message * 16, op="bw", window=16)
    (row,) = compare_runs([(1, [a]), (2, [b])])
    assert row.differences[0].relative_difference == pytest.approx(0.0, abs=1e-12)
    assert row.values[0].bandwidth_Bps == pytest.approx(a.bandwidth_Bps)
    assert row.values[0].latency_s is None


def test_collectives_compare_their_valid_launches():
    rows = compare_runs(
        [(1, [coll(8, [1e-5] * 10 + [9.0], [0] * 10 + [2])]), (2, [coll(8, [2e-5] * 10)])]
    )
    (row,) = rows
    assert row.kind == "coll" and row.values[0].n_samples == 10
    assert row.differences[0].relative_difference == pytest.approx(1.0)
    assert row.differences[0].significant


def store_two_runs(path, labels=("tcp", "ib")):
    with Store.open(path) as store:
        ids = []
        for k, label in enumerate(labels):
            run = store.create_run("p2p", label, "openmpi", "mpirun", 2, {})
            seg = store.start_segment(run, ["mpirun"])
            scale = 1.0 + 0.3 * k
            for size in (0, 8, 1024):
                store.add_point(run, seg, pp(size, BASE * scale * (1 + size / 1000)))
            store.add_point(run, seg, pp(4096, BASE * 64, op="bw", window=64))
            store.add_point(run, seg, coll(8, list(BASE * scale)))
            store.finish_segment(seg, "complete")
            store.set_run_status(run, "complete")
            ids.append(run)
    return ids


def test_cli_compare_json_table_and_html(cli, tmp_path):
    store_two_runs(cli.store)
    data = json.loads(cli("compare", "1", "2", "--json", check=True).stdout)
    assert data["alpha"] == 0.01 and [r["label"] for r in data["runs"]] == ["tcp", "ib"]
    row = next(r for r in data["rows"] if r["op"] == "pingpong" and r["bytes"] == 8)
    assert set(row["runs"][0]) == {"run_id", "n_samples", "median_s", "latency_s", "bandwidth_Bps"}
    assert set(row["differences"][0]) == {"run_id", "relative_difference", "p_value", "significant"}
    assert row["differences"][0]["significant"] is True
    assert row["differences"][0]["relative_difference"] == pytest.approx(0.3)
    bw = next(r for r in data["rows"] if r["op"] == "bw")
    assert bw["differences"][0]["significant"] is False
    out = cli(
        "compare", "1", "latest", "--labels", "a,b", "-o", str(tmp_path / "c.html"), check=True
    )
    assert "+30.0 %*" in out.stdout and "comparison:" in out.stdout
    page = (tmp_path / "c.html").read_text()
    assert page.count("<svg") == 3 and "allreduce (collective), world" in page


@pytest.mark.parametrize(
    "args", [["1"], ["1", "2", "--labels", "only-one"], ["1", "2", "--labels", "a,"]]
)
def test_cli_compare_usage_errors(cli, args):
    store_two_runs(cli.store)
    out = cli("compare", *args)
    assert out.returncode == 2 and len(out.stderr.strip().splitlines()) == 1
