"""The all-pairs matrix in the HTML report: a heat map per matrix, outliers outlined.

``commscope.kinds.matrix`` puts a ``matrix`` entry into each run's template context (None for
runs without matrix or bisection points); ``matrix_section.html.j2`` shows it.
"""

from __future__ import annotations

import numpy as np
from matplotlib.patches import Rectangle

from commscope.analysis import matrix as matrix_analysis
from commscope.report.plotting import figure, to_svg

TICKS = 32  # node names on an axis at most


def heat_map(m: matrix_analysis.Matrix) -> str:
    """Sender rows against receiver columns, bandwidth in MB/s (latency in us), as SVG."""
    n = len(m.names)
    scale, unit = (1e6, "us") if m.unit == "s" else (1e-6, "MB/s")
    values = np.array(
        [[np.nan if x is None else x * scale for x in row] for row in m.values], dtype=float
    )
    side = min(9.0, 2.6 + 0.55 * n)
    with figure((side + 1.2, side)) as (fig, (ax,)):
        # Bad is dark either way: low bandwidth, high latency.
        cmap = "viridis_r" if m.unit == "s" else "viridis"
        image = ax.imshow(values, cmap=cmap, interpolation="nearest")
        fig.colorbar(image, ax=ax, shrink=0.8, label=unit)
        # Every name up to TICKS nodes; above, every k-th, so 1,024 nodes stay readable.
        step = max(1, -(-n // TICKS))
        ticks = list(range(0, n, step))
        ax.set_xticks(ticks, [m.names[i] for i in ticks], rotation=60, ha="right")
        ax.set_yticks(ticks, [m.names[i] for i in ticks])
        ax.set_xlabel("receiver")
        ax.set_ylabel("sender")
        if n <= 12:  # values stay readable up to a dozen nodes
            for i in range(n):
                for j in range(n):
                    if not np.isnan(values[i, j]):
                        r, g, b, _ = image.cmap(image.norm(values[i, j]))
                        ink = "black" if 0.299 * r + 0.587 * g + 0.114 * b > 0.5 else "white"
                        ax.text(
                            j,
                            i,
                            f"{values[i, j]:.3g}",
                            ha="center",
                            va="center",
                            fontsize=7,
                            color=ink,
                        )
        index = {name: i for i, name in enumerate(m.names)}
        for o in m.outliers:
            if o.where == "link":
                a, b = (index[x] for x in o.name.split("->"))
                ax.add_patch(_box(b - 0.5, a - 0.5, 1, 1))
            elif o.where == "sender":
                ax.add_patch(_box(-0.5, index[o.name] - 0.5, n, 1))
            else:
                ax.add_patch(_box(index[o.name] - 0.5, -0.5, 1, n))
        return to_svg(fig)


def _box(x: float, y: float, w: float, h: float) -> Rectangle:
    return Rectangle((x, y), w, h, fill=False, edgecolor="red", linewidth=2.0)
