"""Simulated vs measured: the summaries `simulate validate` prints and the report's plot."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from commscope.data.records import Point
from commscope.report.html import environment
from commscope.report.simulation_agreement import validations
from commscope.simulate import agreement

HOSTILE = "<script>alert(1)</script>"
SIZES = [0, 8, 64, 1024, 65536, 1 << 20]


def ping(pair: str, m: int, t: float) -> Point:
    return Point("pingpong", pair, (0, 1), m, m, None, 1, 1, (t,) * 3, "rse", {})


def measured_times(error: dict[str, float]) -> tuple[dict, list[Point]]:
    """Measured 1 us + m / 1 GB/s on both levels; simulated off by ``error[level]`` x size."""
    measured, simulated = {}, []
    for level, pair in (("inter-node", "inter-node"), ("intra-node", "intra-socket")):
        for i, m in enumerate(SIZES):
            t = 1e-6 + m / 1e9
            measured[("p2p", "pingpong", level, m)] = t
            simulated.append(ping(pair, m, t * (1 + error[level] * (i + 1))))
    return measured, simulated


def test_groups_per_level_and_segment_are_the_median_and_p90_of_abs_error() -> None:
    measured, sim_points = measured_times({"inter-node": 0.01, "intra-node": -0.1})
    rows = agreement.agreement(measured, agreement.point_times(sim_points, [], [])).rows
    levels = agreement.by_level(rows)
    assert [g.level for g in levels] == ["inter-node", "intra-node"]
    inter_errs = [0.01 * (i + 1) for i in range(len(SIZES))]
    assert levels[0].median_abs == pytest.approx(float(np.median(inter_errs)))
    assert levels[0].p90_abs == pytest.approx(float(np.percentile(inter_errs, 90)))
    assert levels[1].median_abs == pytest.approx(10 * levels[0].median_abs)
    segments = agreement.by_segment(rows, [0, 1024])
    assert [(g.level, g.start, g.end, g.points) for g in segments] == [
        ("inter-node", 0, 1024, 3),
        ("inter-node", 1024, None, 3),
        ("intra-node", 0, 1024, 3),
        ("intra-node", 1024, None, 3),
    ]
    assert segments[1].median_abs == pytest.approx(0.05)
    assert agreement.segment_starts([[0, 1.0], [4096, 2.0]], [1]) == [0, 4096]
    assert agreement.segment_starts(None, [0, 100000]) == [0, 64, 256, 1024, 4096, 16384, 65536]


def test_a_validated_run_gets_its_plot_and_table_in_the_report() -> None:
    measured, sim_points = measured_times({"inter-node": 0.02, "intra-node": 0.2})
    sim = {"np": 4, **agreement.measured_record(7, measured)}
    runs = [
        {
            "name": HOSTILE,
            "info": SimpleNamespace(request={"simulate": sim}),
            "run": SimpleNamespace(points=sim_points, colls=[], contentions=[]),
        },
        {  # simulated but never validated: no plot
            "name": "plain",
            "info": SimpleNamespace(request={"simulate": {"np": 4}}),
            "run": SimpleNamespace(points=sim_points, colls=[], contentions=[]),
        },
    ]
    found = validations(runs)
    assert len(found) == 1 and found[0]["measured_run"] == 7
    assert [g.level for g in found[0]["levels"]] == ["inter-node", "intra-node"]
    assert found[0]["plot"].startswith("<svg") and "intra-node (6 sizes)" in found[0]["plot"]
    page = (
        environment()
        .get_template("simulation_section.html.j2")
        .render(simulation={"runs": [], "sweeps": [], "validations": found})
    )
    assert HOSTILE not in page and "&lt;script&gt;" in page
    assert "against run 7" in page
    median = found[0]["levels"][1].median_abs
    assert f"{median * 100:.1f} %" in page
