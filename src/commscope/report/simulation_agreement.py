"""Simulated against measured in the report: a validated run's |relative error| per size.

``commscope simulate validate`` keeps the measured run's times with the simulated run
(``simulate.measured`` of its request), so the simulated run's report compares the two on its
own: per level (inter-node, intra-node) the ping-pong's |relative error| against message size,
with its median and 90th percentile as lines, and the same figures per level in a table.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from markupsafe import Markup

from commscope.data.point_ops import P2P
from commscope.report.plotting import figure, finish, to_svg
from commscope.simulate import agreement

_LEVEL_COLOURS = {"inter-node": "C0", "intra-node": "C1"}


def _plot(rows: list[agreement.Row], groups: list[agreement.Group]) -> str:
    """|relative error| (%) against size, one colour per level; dashed median, dotted p90."""
    with figure((7.0, 3.4)) as (fig, (ax,)):
        for i, g in enumerate(groups):
            colour = _LEVEL_COLOURS.get(g.level, f"C{(i + 2) % 10}")
            mine = [r for r in rows if r.key[0] == P2P and r.key[2] == g.level]
            ax.plot(
                [max(r.key[3], 1) for r in mine],  # 0 B drawn at 1 B on the log axis
                [100 * abs(r.error) for r in mine],
                "o",
                color=colour,
                markersize=3,
                label=f"{g.level} ({g.points} sizes)",
            )
            ax.axhline(100 * g.median_abs, color=colour, linestyle="--", linewidth=1)
            ax.axhline(100 * g.p90_abs, color=colour, linestyle=":", linewidth=1)
        ax.set_xscale("log", base=2)
        finish(ax, "message size (bytes)", "|simulated - measured| / measured (%)")
        return to_svg(fig)


def validations(runs: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """One entry per simulated run of the report that was validated against a measured run."""
    out = []
    for r in runs:
        sim = (r["info"].request or {}).get("simulate") or {}
        found = agreement.measured_of(sim)
        if found is None:
            continue
        measured_run, measured = found
        run = r["run"]
        simulated = agreement.point_times(run.points, run.colls, run.contentions)
        rows = agreement.agreement(measured, simulated).rows
        groups = agreement.by_level(rows)
        if not groups:
            continue
        out.append(
            {
                "name": r["name"],
                "measured_run": measured_run,
                "levels": groups,
                # SVG that matplotlib produced from numbers and level names.
                "plot": Markup(_plot(rows, groups)),
            }
        )
    return out
