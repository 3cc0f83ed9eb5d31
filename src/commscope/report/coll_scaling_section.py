"""Collectives against the process count in the HTML report (``run coll --procs``).

``commscope.kinds.coll`` puts a ``coll`` entry into each run's template context (None for runs
without collectives); ``coll_scaling_section.html.j2`` shows its table of T against p, a plot
per operation (one line per size, with the confidence band) and the operations the MPI
library refused.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from commscope.analysis.coll_scaling import ScalingRow
from commscope.report.plotting import figure, finish, to_svg
from commscope.units import size_text


def scaling_plot(rows: Sequence[ScalingRow]) -> str:
    """T against p for the rows of one operation, log y, a line and band per size."""
    with figure((7.0, 3.6)) as (fig, (ax,)):
        for k, r in enumerate(sorted(rows, key=lambda r: r.bytes)):
            keep = np.isfinite(np.array(r.times_s))
            x = np.array(r.procs, dtype=float)[keep]
            colour = f"C{k % 10}"
            ax.plot(
                x,
                np.array(r.times_s)[keep] * 1e6,
                "-",
                marker="o",
                color=colour,
                label=size_text(r.bytes),
            )
            low, high = np.array(r.ci_low_s)[keep] * 1e6, np.array(r.ci_high_s)[keep] * 1e6
            ax.fill_between(x, low, high, color=colour, alpha=0.25, linewidth=0)
        procs = sorted({p for r in rows for p in r.procs})
        ax.set_xticks(procs)
        ax.set_yscale("log")
        finish(ax, "processes (the first p ranks of the job)", "time (us; trimmed mean)")
        return to_svg(fig)
