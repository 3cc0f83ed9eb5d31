"""Shared matplotlib plumbing: inline SVG output, colours per pair, styles per op, size axes.

Text stays text in the SVG (svg.fonttype "none"): smaller files, and labels are XML-escaped
by matplotlib's writer like any other string, so a hostile label cannot become markup.
"""

from __future__ import annotations

import io
import math
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import matplotlib

matplotlib.use("Agg")  # no display; must precede pyplot
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.axes import Axes  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.ticker import FixedLocator, FuncFormatter, NullFormatter  # noqa: E402

from commscope import strict  # noqa: E402
from commscope.units import size_text  # noqa: E402

PAIR_COLOURS = {
    "intra-socket": "tab:blue",
    "inter-socket": "tab:orange",
    "intra-node": "tab:green",
    "inter-node": "tab:red",
    "unknown": "tab:purple",
}
OP_STYLES = {"pingpong": "-", "bw": "--", "bibw": ":", "bw_each": "-.", "bibw_each": "-."}
OP_LABELS = {
    "pingpong": "ping-pong",
    "bw": "bw",
    "bibw": "bibw",
    "bw_each": "bw (receive buffer per message)",
    "bibw_each": "bibw (receive buffer per message)",
}
_RC: dict[Any, Any] = {"svg.fonttype": "none", "svg.hashsalt": "commscope", "font.size": 9}
FIGSIZE = (7.0, 3.8)


OP_COLOURS = {
    "pingpong": "tab:blue",
    "bw": "tab:green",
    "bibw": "tab:purple",
    "bw_each": "tab:olive",
    "bibw_each": "tab:pink",
}


def colour(pair: str, index: int = 0) -> str:
    """The colour of a pair label; other names cycle through matplotlib's defaults."""
    return PAIR_COLOURS.get(pair, f"C{index % 10}")


def line_colour(pair: str, op: str, pairs: int) -> str:
    """Colour by pair when several pairs share a figure, else by operation."""
    return colour(pair) if pairs > 1 else OP_COLOURS.get(op, "tab:blue")


@contextmanager
def figure(
    figsize: tuple[float, float] = FIGSIZE, ncols: int = 1
) -> Iterator[tuple[Figure, list[Axes]]]:
    """A new figure with ``ncols`` axes side by side, closed when the block ends."""
    with plt.rc_context(_RC):
        # Constrained layout fits labels while drawing once; bbox_inches="tight" draws twice.
        fig, axes = plt.subplots(1, ncols, figsize=figsize, squeeze=False, layout="constrained")
        try:
            yield fig, list(axes[0])
        finally:
            plt.close(fig)


def to_svg(fig: Figure) -> str:
    r"""The figure as an inline <svg> element (no XML prolog or doctype).

    Its text stays text (``svg.fonttype`` none): a control character in a label (a stored
    host name's ESC) is written as ``\x1b``, never raw into the SVG, where XML has no place
    for it. The browser draws the text, so a glyph missing from matplotlib's font only
    shifts the layout: matplotlib's warning about it is not shown.
    """
    buf = io.StringIO()
    with plt.rc_context(_RC), warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r"Glyph \d+ .*missing from font")
        fig.savefig(buf, format="svg")
    text = strict.visible(buf.getvalue(), keep="\n")  # the markup's own line breaks stay
    return text[text.index("<svg") :]


def size_axis(
    ax: Axes, which: str = "x", lo: float = 1.0, hi: float = 1 << 22, zero: bool = False
) -> None:
    """Log2 size axis with ticks at powers of four, labelled "1 KiB", "4 MiB"...

    With ``zero`` the axis is linear between 0 and 1 byte (symlog), so 0 bytes has a place.
    """
    set_scale = ax.set_xscale if which == "x" else ax.set_yscale
    axis = ax.xaxis if which == "x" else ax.yaxis
    if zero:
        set_scale("symlog", base=2, linthresh=1)
    else:
        set_scale("log", base=2)
    first = max(0, math.floor(math.log2(max(lo, 1.0)) / 2) * 2)
    last = math.ceil(math.log2(max(hi, 2.0)) / 2) * 2
    step = 2 if last - first <= 24 else 4
    ticks = [2.0**k for k in range(first, last + 1, step)]
    axis.set_major_locator(FixedLocator(([0.0] if zero else []) + ticks))
    axis.set_major_formatter(FuncFormatter(lambda v, _pos: size_text(v)))
    axis.set_minor_locator(FixedLocator([]))
    axis.set_minor_formatter(NullFormatter())


def finish(ax: Axes, xlabel: str, ylabel: str, legend: bool = True) -> None:
    """Labels, a light grid and a small legend."""
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.grid(True, which="major", alpha=0.3)
    if legend and ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize="small")
