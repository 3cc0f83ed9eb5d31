"""The report's trend section: a baseline's key figures over the stored runs.

Each figure is one plot: its value per run in time order, the baseline's center, the limit
past which a check may call it worse (its tolerance or decision threshold, whichever is
wider), and the runs a recorded check called WARNING or CRITICAL marked. The series come
from ``commscope.check.history.trend``; this module only draws them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from markupsafe import Markup

from commscope.report.plotting import figure, finish, to_svg

_STATUS_COLOURS = {"CRITICAL": "#c00", "WARNING": "#e90"}


def _scale(unit: str) -> tuple[float, str]:
    return {
        "seconds": (1e6, "us"),
        "bytes_per_second": (1e-6, "MB/s"),
        "flops": (1e-9, "GFLOPS"),
    }.get(unit, (1.0, unit))


def plot(series: Any) -> str:
    """One series as SVG text: values per run, the limit, flagged runs marked."""
    scale, label = _scale(series.unit)
    with figure((7.0, 2.8)) as (fig, (ax,)):
        runs = [p[0] for p in series.points]
        x = list(range(len(runs)))
        y = [p[2] * scale for p in series.points]
        ax.axhline(series.center * scale, color="#393", linewidth=1.0, label="baseline")
        ax.axhline(series.limit * scale, color="#c00", linewidth=1.0, linestyle="--",
                   label="check limit")  # fmt: skip
        ax.plot(x, y, "o-", color="C0", markersize=3.5, linewidth=1.0, label="run")
        for status, colour in _STATUS_COLOURS.items():
            marked = [(i, v) for i, v, p in zip(x, y, series.points, strict=True) if p[3] == status]
            if marked:
                ax.plot(*zip(*marked, strict=True), "s", color=colour, markersize=7,
                        label=f"check {status}")  # fmt: skip
        step = max(1, len(runs) // 12)
        ax.set_xticks(x[::step], [str(r) for r in runs[::step]])
        finish(ax, f"run ({series.better} is better)", label)
        return to_svg(fig)


def build(name: str, series: Sequence[Any]) -> dict[str, Any]:
    """The report's trend entry: the baseline's name and a plot per figure."""
    return {
        "name": name,
        # SVG that matplotlib produced from numbers and escaped labels.
        "plots": [(s, Markup(plot(s))) for s in series],
    }
