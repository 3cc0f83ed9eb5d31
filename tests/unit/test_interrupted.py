"""Samples during which a rank lost its core: parsed, left out of medians, named in show."""

from __future__ import annotations

import csv
import io
import json

import numpy as np
import pytest

from commscope.analysis import compare, curve, p2p
from commscope.data.record_parse import record_from_dict
from commscope.data.records import Point
from commscope.errors import RecordError

FAST, SLOW = 0.3e-3, 4.3e-3  # a 4 MiB one-way time, and the same with a lost 4 ms time slice


def point(samples: list[float], switches: list[list[int]] | None, size: int = 4 << 20) -> Point:
    data = {
        "type": "point",
        "op": "pingpong",
        "pair": "intra-socket",
        "ranks": [0, 1],
        "bytes": size,
        "bytes_per_sample": size,
        "window": 1,
        "iters_per_sample": 1,
        "warmup": 10,
        "samples_s": samples,
        "stop": "budget",
    }
    if switches is not None:
        data["switches"] = switches
    rec = record_from_dict(data, "test point")
    assert isinstance(rec, Point)
    return rec


def busy() -> Point:
    """Six of ten samples lost a time slice: the plain median would be the slow one."""
    samples = [FAST, SLOW, SLOW, FAST, SLOW, FAST, SLOW, SLOW, FAST, SLOW]
    return point(samples, [[i, 1, 0] for i, s in enumerate(samples) if s == SLOW])


def test_the_median_leaves_out_interrupted_samples_and_keeps_them_stored():
    p = busy()
    assert p.n_samples == 10 and len(p.kept_samples_s) == 4
    assert p.median_s == FAST and p.interrupted_share == 0.6
    assert float(np.median(p.samples_s)) == SLOW  # what the median was before
    assert np.all(curve.message_samples(p) == FAST)
    assert p.bandwidth_Bps == pytest.approx((4 << 20) / FAST)


def test_a_switch_of_rank_b_holds_up_this_exchange_or_the_next_whichever_is_longer():
    # b switched out while copying: this sample; while waiting for its send to end: the next.
    samples = [FAST, SLOW, FAST, FAST, FAST, SLOW, FAST]
    p = point(samples, [[1, 0, 1], [4, 0, 2], [6, 0, 1]])
    assert p.interrupted == (1, 5, 6)
    assert point(samples, [[0, 0, 1], [2, 1, 0]]).interrupted == (1, 2)


def test_points_without_counts_or_with_too_few_others_use_every_sample():
    assert point([FAST, SLOW, SLOW], None).median_s == SLOW
    assert point([FAST, SLOW, SLOW], []).median_s == SLOW
    one_left = point([FAST, SLOW, SLOW], [[1, 1, 0], [2, 1, 0]])
    assert one_left.interrupted == (1, 2)
    assert one_left.kept_samples_s == one_left.samples_s


def test_a_sample_beyond_the_samples_is_refused():
    with pytest.raises(RecordError, match="switches name sample 3 of 3"):
        point([FAST, FAST, FAST], [[3, 1, 0]])


def test_compare_tests_the_kept_samples():
    quiet = point([FAST * (1 + 0.01 * i) for i in range(10)], [])
    [row] = compare.compare_runs([(1, [quiet]), (2, [busy()])])
    assert row.values[1] is not None and row.values[1].n_samples == 4
    d = row.differences[0]
    assert d is not None and abs(d.relative_difference) < 0.05


def test_show_names_points_with_many_interrupted_samples():
    quiet = point([FAST] * 10, [[4, 0, 1]], size=1 << 20)
    points = [quiet, busy()]
    [named] = p2p.interrupted(points)
    assert (named.bytes, named.n_interrupted, named.n_kept) == (4 << 20, 6, 4)
    assert "6 of 10 samples had a rank lose its core" in named.text()
    assert "use the other 4" in named.text()
    summary = p2p.interrupted_summary(points)
    assert summary.startswith("7 of 20 samples in 2 of 2 points")
    assert p2p.interrupted_summary([point([FAST] * 10, [])]) == ""


def test_export_marks_each_interrupted_sample(tmp_path, capsys):
    from commscope.cli import build_parser, export_cmd
    from commscope.data.store import Store
    from tests.unit.test_recv_buffers import header

    path = tmp_path / "s.sqlite"
    with Store.open(path) as store:
        run_id = store.create_run("p2p", None, "openmpi-4.1.4", "mpirun", 2, {"np": 2})
        seg = store.start_segment(run_id, ["mpirun"])
        store.set_header(run_id, seg, header("one"))
        store.add_point(run_id, seg, busy())
    args = build_parser().parse_args(["--store", str(path), "export", str(run_id)])
    assert export_cmd.run(args) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert [int(r["interrupted"]) for r in rows] == [0, 1, 1, 0, 1, 0, 1, 1, 0, 1]
    args = build_parser().parse_args(
        ["--store", str(path), "export", str(run_id), "--format", "json"]
    )
    export_cmd.run(args)
    lines = capsys.readouterr().out.splitlines()
    assert [s[0] for s in json.loads(lines[1])["switches"]] == [1, 2, 4, 6, 7, 9]


def test_when_nearly_every_sample_is_held_up_every_sample_counts():
    # Ranks sharing cores (the virtual cluster): 18 of 20 samples held up. The two untouched
    # ones are luck, not the machine's time; a median of them would make the curve jump.
    samples = [SLOW] * 9 + [FAST] + [SLOW] * 9 + [FAST]
    p = point(samples, [[i, 1, 0] for i, s in enumerate(samples) if s == SLOW])
    assert len(p.interrupted) == 18
    assert p.kept_samples_s == p.samples_s and p.median_s == SLOW
    # A quarter untouched is enough to leave the held-up ones out.
    quarter = [FAST] * 5 + [SLOW] * 15
    q = point(quarter, [[i, 1, 0] for i in range(5, 20)])
    assert q.kept_samples_s == (FAST,) * 5 and q.median_s == FAST
