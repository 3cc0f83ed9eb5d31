"""Overlay figures for `commscope compare`: one line per run, significant sizes circled."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from commscope.report.plotting import figure, finish, size_axis, to_svg


@dataclass(frozen=True, eq=False)
class Line:
    """One run's medians across sizes."""

    label: str
    bytes: NDArray[np.float64]
    values: NDArray[np.float64]
    significant: NDArray[np.bool_]  # differs from the first run with p < 0.01


def overlay_plot(lines: Sequence[Line], ylabel: str, log_y: bool) -> str:
    """Every run's line on one figure; circles mark sizes significantly different from run 1."""
    with figure() as (fig, (ax,)):
        top, marked = 2.0, False
        for k, line in enumerate(lines):
            keep = (line.bytes > 0) & np.isfinite(line.values)
            if not keep.any():
                continue
            x, y = line.bytes[keep], line.values[keep]
            ax.plot(x, y, "-", marker=".", markersize=3, color=f"C{k % 10}", label=line.label)
            sig = line.significant[keep]
            if sig.any():
                ax.plot(
                    x[sig],
                    y[sig],
                    "o",
                    markersize=6,
                    markerfacecolor="none",
                    color=f"C{k % 10}",
                    label=None if marked else "p < 0.01 vs first",
                )
                marked = True
            top = max(top, float(x.max()))
        if log_y:
            ax.set_yscale("log")
        size_axis(ax, "x", 1, top)
        finish(ax, "message size", ylabel)
        return to_svg(fig)
