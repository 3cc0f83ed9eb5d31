"""Degradation tables: t(m,cf)/t(m,1), cells above cf, processes per channel.

As in Peryshkova and Kurnosov 2018 (contention-aware placement).
"""

from __future__ import annotations

import math

import numpy as np

from commscope.analysis.contention import tables
from commscope.data.record_parse import record_from_dict


def cell(level: str, cf: int, size: int, t_slowest: float, reps: int = 3) -> object:
    pairs = [[2 * i, 2 * i + 1] for i in range(cf)]
    # Every process a bit faster than the slowest, whose time is the cell's value.
    samples = [[t_slowest * 0.9] * (2 * cf - 1) + [t_slowest] for _ in range(reps)]
    return record_from_dict(
        {
            "type": "contention",
            "level": level,
            "cf": cf,
            "bytes": size,
            "pairs": pairs,
            "nruns": 10,
            "start": "window",
            "samples_s": samples,
        },
        "test",
    )


def test_degradation_divides_by_cf1_and_marks_cells_above_cf():
    # The paper's IB QDR row at 128 MB: 1, 2.0, 2.8, 3.8, 4.4, 5.7, 6.4, 7.6 -> none above cf;
    # a memory-controller-like row that exceeds cf from cf = 3 on.
    qdr = [1, 2.0, 2.8, 3.8, 4.4, 5.7, 6.4, 7.6]
    points = [cell("nic", cf, 128 << 20, 0.1 * d) for cf, d in enumerate(qdr, start=1)]
    points += [cell("memory", cf, 4 << 20, 0.01 * d) for cf, d in enumerate([1, 1.9, 3.3, 4.9], 1)]
    t = tables(points)
    assert list(t) == ["memory", "nic"]
    nic = t["nic"]
    assert np.allclose(nic.degradation[0], qdr)
    assert not nic.above_cf.any()
    assert nic.max_processes() == {128 << 20: 8}
    mem = t["memory"]
    assert mem.above_cf[0].tolist() == [False, False, True, True]
    assert mem.max_processes() == {4 << 20: 2}
    assert math.isclose(mem.t_s[0, 0], 0.01)


def test_missing_cells_are_nan_and_never_highlighted():
    t = tables([cell("nic", 1, 1024, 1e-3), cell("nic", 2, 4096, 3e-3)])["nic"]
    assert t.sizes.tolist() == [1024, 4096] and t.cfs.tolist() == [1, 2]
    assert math.isnan(t.degradation[0, 1]) and math.isnan(t.degradation[1, 1])
    assert not t.above_cf.any()
    as_json = t.to_json()
    assert as_json["degradation"][0][1] is None
    assert as_json["max_processes"] == {"1024": 1, "4096": 0}


def test_the_cell_is_the_median_over_repetitions_of_the_slowest_process():
    rec = record_from_dict(
        {
            "type": "contention",
            "level": "nic",
            "cf": 1,
            "bytes": 8,
            "pairs": [[0, 1]],
            "nruns": 1,
            "start": "barrier",
            "samples_s": [[1.0, 3.0], [2.0, 9.0], [5.0, 4.0]],
        },
        "test",
    )
    assert rec.median_s == 5.0  # slowest per repetition: 3, 9, 5


def test_shown_tables_say_when_more_than_one_message_was_in_flight() -> None:
    from rich.console import Console

    from commscope.kinds import contention
    from tests.synthetic_contention import records

    def title(in_flight: int) -> str:
        console = Console(record=True, width=200)
        points = records("nic", lambda m, cf: cf * m / 1e9, [1 << 20], [1, 2], in_flight=in_flight)
        tables = contention.contention_analysis.tables(points)
        run = contention.ContentionRun(tables, [in_flight], [], [])
        for item in contention.tables(run):
            console.print(item)
        return console.export_text()

    assert "4 messages in flight" in title(4)
    assert "in flight" not in title(1)
