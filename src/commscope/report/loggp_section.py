"""LogGP in the HTML report: the fitted parameters per pair, a plot, and what stands out.

``commscope.kinds.loggp`` puts a ``loggp`` entry into each run's template context (None for runs
without LogGP points); the partial template ``loggp_section.html.j2`` shows it. The plot shows,
per size, the measured o_s(s), o_r(s) and g(s) with the fitted lines: those of the first regime
(where L, o_s, o_r and g are their intercepts) and g's line over the large messages (whose
slope is G).
"""

from __future__ import annotations

import numpy as np

from commscope.analysis import loggp as loggp_analysis
from commscope.report.plotting import figure, finish, size_axis, to_svg

_SERIES = (
    ("o_s", "o_s(s): send call", "tab:blue", "o"),
    ("o_r", "o_r(s): receive of an arrived message", "tab:green", "s"),
    ("g", "g(s): gap back to back", "tab:red", "^"),
)


def loggp_plot(fit: loggp_analysis.LogGPFit) -> str:
    """Measured o_s(s), o_r(s), g(s) against size, log-log, with the fitted LogGP lines."""
    c = fit.curves
    with figure((7.0, 3.6)) as (fig, (ax,)):
        values = {"o_s": c.o_s_s, "o_r": c.o_r_s, "g": c.g_s}
        for key, label, colour, marker in _SERIES:
            y = values[key] * 1e6
            keep = y > 0
            ax.plot(c.bytes[keep], y[keep], marker, color=colour, markersize=3.5, label=label)
            line = fit.lines[key]
            m = np.linspace(line.first_bytes, line.last_bytes, 60)
            ax.plot(m, line.at(m) * 1e6, "-", color=colour, linewidth=1.2, alpha=0.8)
        big = fit.lines["G"]
        m = np.geomspace(max(big.first_bytes, 1), max(big.last_bytes, 2), 60)
        ax.plot(
            m,
            big.at(m) * 1e6,
            "--",
            color="black",
            linewidth=1.2,
            label=f"g(s) over large sizes: slope G = {fit.G_s_per_byte * 1e9:.3g} ns/B",
        )
        ax.set_yscale("log")
        size_axis(ax, "x", 1, max(float(c.bytes.max()), 2.0), zero=True)
        ax.set_xlim(0, float(c.bytes.max()) * 1.3)
        finish(ax, "message size (solid lines: fits over the small sizes)", "time (us, log)")
        return to_svg(fig)
