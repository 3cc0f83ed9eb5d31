"""The report's trend section: a baseline's key figures over the stored runs.

Each figure is one plot: its value per run in time order, the baseline's center, the limit
past which a check may call it worse (its tolerance or decision threshold, whichever is
wider), and the runs a recorded check called WARNING or CRITICAL marked. Its change points
(those of the baseline's series, :func:`commscope.jobs.history.trend_changes`) are vertical
lines before their first run; each line's SVG group carries a ``<title>`` (the browser's
tooltip) with the change's size, run, date, p and q values, escaped as XML text. The series
come from ``commscope.check.history.trend``; this module only draws them.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Sequence
from typing import Any

from markupsafe import Markup, escape

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
        titles = {}
        stem = hashlib.sha256(series.key.encode()).hexdigest()[:10]
        for n, change in enumerate(c for c in series.changes if c.run_id in runs):
            gid = f"step-{stem}-{n}"  # ours, never user text: found again in the SVG below
            legend = "change point" if n == 0 else None
            at = runs.index(change.run_id) - 0.5
            ax.axvline(at, color="#80c", linewidth=1.2, linestyle=":", gid=gid, label=legend)
            titles[gid] = change_text(change)
        step = max(1, len(runs) // 12)
        ax.set_xticks(x[::step], [str(r) for r in runs[::step]])
        finish(ax, f"run ({series.better} is better)", label)
        return with_titles(to_svg(fig), titles)


def change_text(change: Any) -> str:
    """'change point at run 41 (2026-12-03 02:00): 20.1% worse, p 0.0012, q 0.004'."""
    when = time.strftime("%Y-%m-%d %H:%M", time.localtime(change.created_unix))
    return (
        f"change point at run {change.run_id} ({when}):"
        f" {abs(change.share):.1%} {change.direction}, p {change.p:.2g}, q {change.q:.2g}"
    )


def with_titles(svg: str, titles: dict[str, str]) -> str:
    """``svg`` with a ``<title>`` (escaped) as the first child of each group ``titles`` names."""
    for gid, title in titles.items():
        opening = f'<g id="{gid}">'
        svg = svg.replace(opening, f"{opening}<title>{escape(title)}</title>", 1)
    return svg


def build(name: str, series: Sequence[Any]) -> dict[str, Any]:
    """The report's trend entry: the baseline's name and per figure its plot and changes."""
    return {
        "name": name,
        # SVG that matplotlib produced from numbers and escaped labels, titles escaped.
        "plots": [(s, Markup(plot(s)), [change_text(c) for c in s.changes]) for s in series],
    }
