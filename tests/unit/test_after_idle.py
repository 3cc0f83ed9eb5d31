"""The first exchange after an idle period (``run contention --idle``): records, verdict, views."""

from __future__ import annotations

import json
import re

import pytest
from rich.console import Console

from commscope import kinds
from commscope.analysis import after_idle
from commscope.data.record_parse import parse_record, record_from_dict
from commscope.data.records import Contention
from commscope.data.run_data import read_run
from commscope.data.store import Store
from commscope.kinds import contention as contention_kind
from commscope.kinds.base import View
from tests import synthetic_contention

HOSTILE = "<script>alert(1)</script>"


def cell(cf: int, warm: list[float], after: list[float] | None, size: int = 1 << 20) -> dict:
    """A NIC cell whose slowest process took ``warm`` / ``after`` (exchange times) per rep."""
    # Samples are half an exchange (two transfers per exchange); the other processes faster.
    rec = {
        "type": "contention",
        "level": "nic",
        "cf": cf,
        "bytes": size,
        "pairs": [[2 * i, 2 * i + 1] for i in range(cf)],
        "nruns": 3,
        "start": "window",
        "samples_s": [[t / 2 * 0.9] * (2 * cf - 1) + [t / 2] for t in warm],
    }
    if after is not None:
        rec["idle_s"] = 0.5
        rec["after_idle_s"] = [[t / 2] + [t / 2 * 0.8] * (2 * cf - 1) for t in after]
    return rec


def parsed(rec: dict) -> Contention:
    point = record_from_dict(rec, "test")
    assert isinstance(point, Contention)
    return point


def test_the_exchanges_after_idle_are_read_in_exchange_times_beside_the_warm_ones():
    point = parsed(cell(1, [0.70, 0.72, 0.71], [0.75, 0.74, 0.76]))
    assert point.idle_s == 0.5 and point.after_idle_median_s == pytest.approx(0.75 / 2)
    [found] = after_idle.cells([point])
    assert found.warm_s == pytest.approx((0.70, 0.72, 0.71))
    assert found.after_s == pytest.approx((0.75, 0.74, 0.76))
    assert found.cost_s == pytest.approx(0.04)
    assert found.every_one_slower
    # The warm samples still make the t(m, cf) table, as without idle.
    assert point.median_s == pytest.approx(0.71 / 2)


def test_a_cost_is_claimed_only_where_every_exchange_after_idle_was_slower():
    # One after-idle exchange as fast as the slowest warm one: the medians differ, no claim.
    point = parsed(cell(2, [0.70, 0.72, 0.71], [0.72, 0.80, 0.81]))
    [found] = after_idle.cells([point])
    assert found.cost_s == pytest.approx(0.09) and not found.every_one_slower
    assert found.to_json()["every_one_slower"] is False


def test_cells_without_idle_are_left_out_and_the_rest_come_by_cf_then_size():
    points = [
        parsed(cell(2, [1.0], [1.1], 1 << 20)),
        parsed(cell(1, [1.0], [1.1], 1 << 22)),
        parsed(cell(1, [1.0], None, 1 << 18)),
        parsed(cell(1, [1.0], [1.1], 1 << 20)),
    ]
    assert [(c.cf, c.bytes) for c in after_idle.cells(points)] == [
        (1, 1 << 20),
        (1, 1 << 22),
        (2, 1 << 20),
    ]


@pytest.mark.parametrize(
    "change",
    [
        {"after_idle_s": [[0.1, 0.1]]},  # one repetition of two
        {"after_idle_s": [[0.1], [0.1]]},  # one process of two
    ],
)
def test_after_idle_times_not_shaped_like_the_samples_are_refused(change):
    rec = {**cell(1, [0.7, 0.7], [0.7, 0.7]), **change}
    with pytest.raises(Exception, match="after_idle_s"):
        parse_record(json.dumps(rec), "test")


@pytest.mark.parametrize("drop", ["idle_s", "after_idle_s"])
def test_the_schema_wants_the_idle_and_its_times_together(drop):
    rec = cell(1, [0.7, 0.7], [0.7, 0.7])
    del rec[drop]
    with pytest.raises(Exception, match="contention"):
        parse_record(json.dumps(rec), "test")


def test_terminal_json_and_report_give_each_cell_and_only_shown_costs(tmp_path):
    recs = [
        parsed(cell(1, [0.70, 0.71, 0.72], [0.70, 0.705, 0.73])),
        parsed(cell(2, [1.40, 1.41, 1.42], [1.45, 1.46, 1.44])),
    ]
    path = tmp_path / "s.sqlite"
    run_id = synthetic_contention.store_run(path, recs, HOSTILE)
    with Store.open(path) as store:
        run = read_run(store, run_id)
        page = kinds.render_report([run])
    console = Console(record=True, width=200)
    found = contention_kind.summarize(run, View())
    assert found is not None
    for item in contention_kind.tables(found):
        console.print(item)
    text = console.export_text()
    assert "after 0.5 s idle" in text
    rows = [ln for ln in text.splitlines() if "NIC" in ln and "1048576" in ln]
    assert len(rows) == 2 and "none shown" in rows[0] and "+40.00" in rows[1]
    shown = contention_kind.KIND.to_json(found)["contention_after_idle"]
    assert [(c["cf"], c["every_one_slower"]) for c in shown] == [(1, False), (2, True)]
    assert shown[1]["cost_s"] == pytest.approx(0.04)
    [table] = re.findall(r'<table class="contention-after-idle".*?</table>', page, re.S)
    cells = re.findall(r"<tr><td>NIC</td>.*?</tr>", table)
    assert len(cells) == 2 and "none shown" in cells[0] and "+40.00 ms" in cells[1]
    assert "<td>0.5 s</td>" in cells[0] and "<td>1 MiB</td>" in cells[0]
