"""Multi-pair bandwidth in the HTML report: aggregate bandwidth and message rate per size.

``commscope.kinds.mbw`` puts an ``mbw`` entry into each run's template context (None for runs
without mbw points); the partial template ``mbw_section.html.j2`` shows it. One figure per
measure, one line per pair count k, sizes on a log2 axis.
"""

from __future__ import annotations

import numpy as np

from commscope.analysis import mbw as mbw_analysis
from commscope.report.plotting import figure, finish, size_axis, to_svg


def _plot(summary: mbw_analysis.MbwSummary, field: str, scale: float, ylabel: str) -> str:
    with figure((7.0, 3.6)) as (fig, (ax,)):
        sizes = [r.bytes for s in summary.steps for r in s.rows if r.bytes > 0]
        for i, step in enumerate(summary.steps):
            rows = [r for r in step.rows if r.bytes > 0]
            x = np.array([r.bytes for r in rows], dtype=float)
            y = np.array([getattr(r, field) for r in rows], dtype=float) * scale
            label = f"{step.pairs} pair{'' if step.pairs == 1 else 's'}"
            ax.plot(x, y, "o-", color=f"C{i % 10}", markersize=3.5, linewidth=1.2, label=label)
        ax.set_yscale("log")
        size_axis(ax, "x", min(sizes, default=1), max(sizes, default=2))
        finish(ax, "message size", ylabel)
        return to_svg(fig)


def bandwidth_plot(summary: mbw_analysis.MbwSummary) -> str:
    """Aggregate bandwidth over all pairs against size, one line per pair count (SVG text)."""
    return _plot(summary, "aggregate_Bps", 1e-6, "aggregate bandwidth (MB/s, log)")


def rate_plot(summary: mbw_analysis.MbwSummary) -> str:
    """Messages per second over all pairs against size, one line per pair count (SVG text)."""
    return _plot(summary, "message_rate_per_s", 1.0, "messages/s over all pairs (log)")
