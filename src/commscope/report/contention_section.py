"""Contention in the HTML report: the degradation t(m,cf)/t(m,1) as a heat map per level.

The tables of Peryshkova and Kurnosov 2018 (contention-aware placement).

``commscope.kinds.contention`` puts a ``contention`` entry into each run's template context
(None for runs without contention points); the partial template ``contention_section.html.j2``
shows it. Rows are message sizes, columns cf (transfers sharing the channel at once), the colour is
the degradation on a log scale from 1. Two rules mark cells:

- outline: degradation above ``ONSET`` (1.1x): contention starts to show at this cf;
- hatch: degradation above cf, the paper's highlighted cells: sharing the channel costs more
  than running the cf transfers one after another, so that many processes per channel is too
  many.

Each marked cell is an SVG element with an id (``cf-onset-<bytes>-<cf>``,
``cf-above-<bytes>-<cf>``), so the marks can be checked in the page.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from markupsafe import Markup
from matplotlib.colors import LogNorm
from matplotlib.patches import Rectangle

from commscope.analysis import contention as contention_analysis
from commscope.analysis.queue import QueueWait
from commscope.report.plotting import figure, finish, to_svg
from commscope.units import size_text

ONSET = 1.1  # degradation from which a cell is outlined
_MAX_LABELLED_CELLS = 160  # beyond this many cells the numbers would not be readable


def heatmap(table: contention_analysis.LevelTable) -> str:
    """The degradation table of one level as a heat map (SVG text)."""
    deg = table.degradation
    rows, cols = deg.shape
    finite = deg[np.isfinite(deg)]
    top = max(2.0, float(finite.max()) if finite.size else 2.0)
    width = min(9.0, 2.6 + 0.75 * cols)
    height = min(9.0, 1.4 + 0.34 * rows)
    with figure((width, height)) as (fig, (ax,)):
        shown = np.ma.masked_invalid(np.clip(deg, 1.0, None))
        image = ax.imshow(
            shown,
            cmap="YlOrRd",
            norm=LogNorm(vmin=1.0, vmax=top),
            aspect="auto",
            interpolation="nearest",
        )
        bar = fig.colorbar(image, ax=ax, shrink=0.9)
        bar.set_label("t(m,cf) / t(m,1)")
        steps = [t for t in (1, 1.5, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64) if t <= top]
        bar.set_ticks(steps, labels=[f"{t:g}" for t in steps])
        bar.ax.minorticks_off()
        label = rows * cols <= _MAX_LABELLED_CELLS
        for i in range(rows):
            for j in range(cols):
                v = deg[i, j]
                if not math.isfinite(v):
                    continue
                size, cf = int(table.sizes[i]), int(table.cfs[j])
                if v > cf:
                    ax.add_patch(
                        Rectangle(
                            (j - 0.5, i - 0.5),
                            1,
                            1,
                            fill=False,
                            hatch="///",
                            edgecolor="#222222",
                            linewidth=0,
                            gid=f"cf-above-{size}-{cf}",
                        )
                    )
                if v > ONSET:
                    ax.add_patch(
                        Rectangle(
                            (j - 0.46, i - 0.46),
                            0.92,
                            0.92,
                            fill=False,
                            edgecolor="black",
                            linewidth=1.2,
                            gid=f"cf-onset-{size}-{cf}",
                        )
                    )
                if label:  # on a patch of the cell's colour, so the hatch spares the digits
                    shade = max(v, 1.0)
                    dark = math.log(shade) > 0.6 * math.log(top)
                    ax.text(
                        j,
                        i,
                        f"{v:.2f}",
                        ha="center",
                        va="center",
                        fontsize=8,
                        color="white" if dark else "black",
                        bbox={
                            "boxstyle": "square,pad=0.15",
                            "linewidth": 0,
                            "facecolor": image.cmap(image.norm(shade)),
                        },
                    )
        ax.set_xticks(range(cols), [str(int(c)) for c in table.cfs])
        ax.set_yticks(range(rows), [size_text(int(m)) for m in table.sizes])
        ax.set_xlabel("cf: transfers sharing the channel at once")
        ax.set_ylabel("message size m")
        return to_svg(fig)


def level_context(table: contention_analysis.LevelTable) -> dict[str, Any]:
    """What the template shows for one level: name, heat map and the paper's verdict."""
    deg = table.degradation
    onset = {}
    for i, m in enumerate(table.sizes):
        above = [
            int(c)
            for j, c in enumerate(table.cfs)
            if math.isfinite(deg[i, j]) and deg[i, j] > ONSET
        ]
        onset[int(m)] = min(above) if above else None
    return {
        "level": table.level,
        "name": contention_analysis.LEVEL_NAMES.get(table.level, table.level),
        # SVG that matplotlib produced from numbers and escaped labels.
        "plot": Markup(heatmap(table)),
        "max_processes": table.max_processes(),
        "onset": onset,
        "above_cells": int(np.count_nonzero(table.above_cf)),
    }


def queue_cdf(waits: list[QueueWait]) -> str:
    """Per stream size, the share of answers that waited at most x ms (SVG text).

    A step curve per size (id ``queue-cdf-<bytes>``; ``queue-cdf-back-<bytes>``, dashed, for
    the stream's sender answering its receiver; ``queue-cdf-streamer-<bytes>``, dotted, for it
    answering another rank); a curve that rises at 0 is a node whose answers mostly went at
    once, one that rises late is a queue that was full.
    """
    styles = {"third": ("", "", "-"), "back": ("back-", ", its sender answering", "--")}
    styles["streamer"] = ("streamer-", ", its sender answering another", ":")
    with figure((6.4, 3.6)) as (fig, (ax,)):
        for w in waits:
            if not w.samples:
                continue
            ms = np.maximum(w.waits_s, 0.0) * 1e3
            share = np.arange(1, ms.size + 1) / ms.size
            gid, who, ls = styles[w.kind]
            label = f"stream of {size_text(w.bytes)}{who}"
            (line,) = ax.step(ms, share, where="post", label=label, ls=ls)
            line.set_gid(f"queue-cdf-{gid}{w.bytes}")
        ax.set_ylim(0.0, 1.0)
        ax.set_xlim(left=0.0)
        finish(ax, "wait behind the node's outgoing stream (ms)", "share of answers")
        return to_svg(fig)


def queue_plot(waits: list[QueueWait]) -> Markup | None:
    """The waits' curves for the template, or None when no answer was timed under load."""
    measured = [w for w in waits if w.samples]
    # SVG that matplotlib produced from numbers and size labels.
    return Markup(queue_cdf(measured)) if measured else None
