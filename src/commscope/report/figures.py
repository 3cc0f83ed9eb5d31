"""Point-to-point and collective figures of one run, as inline SVG text.

One line per pair (colour) and operation (line style), so intra- and inter-node sit side by
side. The NetPIPE views: throughput against size, the "signature" (throughput against transfer
time, log time axis; the first point is the latency) and the "saturation" graph (size against
time, log-log; time grows linearly from the saturation point on). The testmpi views: short
messages (up to 1 KiB) and long ones on linear axes. The protocol view: time against size with
the Hockney fit of each regime and the thresholds. Collectives: time against size with the
confidence band of the trimmed mean.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from commscope.analysis.coll import CollSummary
from commscope.analysis.curve import Curve
from commscope.analysis.p2p import PairFigures
from commscope.report.plotting import (
    OP_LABELS,
    OP_STYLES,
    colour,
    figure,
    finish,
    line_colour,
    size_axis,
    to_svg,
)

SHORT_MAX = 1024  # bytes: the short-message view ends here


def _label(c: Curve) -> str:
    return f"{c.pair} {OP_LABELS.get(c.op, c.op)}"


def _pairs(curves: Sequence[Curve]) -> int:
    return len({c.pair for c in curves})


def _bw_points(c: Curve, lo: int = 1, hi: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    keep = (c.bytes >= lo) & np.isfinite(c.bandwidth_Bps)
    if hi is not None:
        keep &= c.bytes <= hi
    return c.bytes[keep].astype(float), c.bandwidth_Bps[keep] / 1e6


def throughput_plot(curves: Sequence[Curve]) -> str:
    """Bandwidth (MB/s) against message size, every pair and operation."""
    with figure() as (fig, (ax,)):
        top = 2.0
        for c in curves:
            x, y = _bw_points(c)
            if x.size:
                ax.plot(
                    x,
                    y,
                    OP_STYLES.get(c.op, "-"),
                    marker=".",
                    markersize=3,
                    color=line_colour(c.pair, c.op, _pairs(curves)),
                    label=_label(c),
                )
                top = max(top, float(x.max()))
        size_axis(ax, "x", 1, top)
        finish(ax, "message size", "bandwidth (MB/s, 10^6 bytes/s)")
        return to_svg(fig)


def signature_plot(curves: Sequence[Curve]) -> str:
    """Ping-pong throughput against one-way time, log time axis (the first point is latency)."""
    with figure() as (fig, (ax,)):
        for c in curves:
            if c.op != "pingpong":
                continue
            keep = c.bytes > 0
            ax.plot(
                c.time_s[keep] * 1e6,
                np.nan_to_num(c.bandwidth_Bps[keep]) / 1e6,
                "-",
                marker=".",
                markersize=3,
                color=colour(c.pair),
                label=c.pair,
            )
        ax.set_xscale("log")
        finish(ax, "one-way time (us, log)", "throughput (MB/s)")
        return to_svg(fig)


def saturation_plot(curves: Sequence[Curve], figs: Sequence[PairFigures]) -> str:
    """Message size against ping-pong time, log-log, with each pair's saturation point."""
    with figure() as (fig, (ax,)):
        top = 2.0
        for c in curves:
            if c.op != "pingpong":
                continue
            keep = c.bytes > 0
            ax.plot(
                c.time_s[keep] * 1e6,
                c.bytes[keep],
                "-",
                marker=".",
                markersize=3,
                color=colour(c.pair),
                label=c.pair,
            )
            top = max(top, float(c.bytes.max()))
        for f in figs:
            pp = f.curve("pingpong")
            if pp is not None and pp.saturation_bytes:
                ax.axhline(
                    pp.saturation_bytes,
                    color=colour(f.pair),
                    linestyle=":",
                    linewidth=1,
                    label=f"{f.pair} saturation point",
                )
        ax.set_xscale("log")
        size_axis(ax, "y", 1, top)
        finish(ax, "one-way time (us, log)", "message size")
        return to_svg(fig)


def regimes_plot(curves: Sequence[Curve], figs: Sequence[PairFigures]) -> str:
    """Ping-pong time against size, log-log, with the Hockney fit per regime and thresholds."""
    with figure() as (fig, (ax,)):
        top = 2.0
        for c in curves:
            if c.op != "pingpong":
                continue
            keep = c.bytes > 0
            ax.plot(
                c.bytes[keep],
                c.time_s[keep] * 1e6,
                ".",
                markersize=4,
                color=colour(c.pair),
                label=f"{c.pair} measured",
            )
            top = max(top, float(c.bytes.max()))
        for f in figs:
            pp = f.curve("pingpong")
            if pp is None:
                continue
            for k, r in enumerate(pp.regimes):
                m = np.geomspace(max(r.first_bytes, 1), max(r.last_bytes, 2), 50)
                ax.plot(
                    m,
                    r.fit.time_s(m) * 1e6,
                    "-",
                    color=colour(f.pair),
                    alpha=0.6,
                    linewidth=1.5,
                    label=f"{f.pair} Hockney fit" if k == 0 else None,
                )
            for th in pp.thresholds:
                ax.axvline(
                    th.nominal_bytes or th.above_bytes,
                    color=colour(f.pair),
                    linestyle="--",
                    linewidth=0.8,
                )
        ax.set_yscale("log")
        size_axis(ax, "x", 1, top)
        finish(ax, "message size (dashed: thresholds)", "one-way time (us, log)")
        return to_svg(fig)


def short_plot(curves: Sequence[Curve]) -> str:
    """Messages up to 1 KiB on linear axes: ping-pong time, and bandwidth of every op."""
    with figure((9.0, 3.6), ncols=2) as (fig, (left, right)):
        for c in curves:
            keep = c.bytes <= SHORT_MAX
            if c.op == "pingpong" and keep.any():
                left.plot(
                    c.bytes[keep],
                    c.time_s[keep] * 1e6,
                    "-",
                    marker=".",
                    markersize=3,
                    color=colour(c.pair),
                    label=c.pair,
                )
            x, y = _bw_points(c, 1, SHORT_MAX)
            if x.size:
                right.plot(
                    x,
                    y,
                    OP_STYLES.get(c.op, "-"),
                    marker=".",
                    markersize=3,
                    color=line_colour(c.pair, c.op, _pairs(curves)),
                    label=_label(c),
                )
        left.set_ylim(bottom=0)
        right.set_ylim(bottom=0)
        finish(left, "message size (bytes)", "one-way time (us)")
        finish(right, "message size (bytes)", "bandwidth (MB/s)")
        return to_svg(fig)


def long_plot(curves: Sequence[Curve]) -> str:
    """Messages above 1 KiB on linear axes: bandwidth of every pair and op."""
    with figure() as (fig, (ax,)):
        for c in curves:
            x, y = _bw_points(c, SHORT_MAX + 1)
            if x.size:
                ax.plot(
                    x / (1 << 20),
                    y,
                    OP_STYLES.get(c.op, "-"),
                    marker=".",
                    markersize=3,
                    color=line_colour(c.pair, c.op, _pairs(curves)),
                    label=_label(c),
                )
        ax.set_ylim(bottom=0)
        finish(ax, "message size (MiB)", "bandwidth (MB/s)")
        return to_svg(fig)


def coll_plot(rows: Sequence[tuple[str, CollSummary]]) -> str:
    """Collective time against size: trimmed mean of valid launches and its confidence band.

    Args:
        rows: (line label, e.g. "allreduce world", summary of one size), any order.
    """
    with figure() as (fig, (ax,)):
        lines: dict[str, list[CollSummary]] = {}
        for name, s in rows:
            if np.isfinite(s.time_s):
                lines.setdefault(name, []).append(s)
        for k, (name, points) in enumerate(sorted(lines.items())):
            points.sort(key=lambda s: s.bytes)
            x = np.array([s.bytes for s in points], dtype=float)
            mean = np.array([s.time_s for s in points]) * 1e6
            low = np.array([s.ci_low_s for s in points]) * 1e6
            high = np.array([s.ci_high_s for s in points]) * 1e6
            ax.plot(x, mean, "-", marker=".", color=f"C{k % 10}", label=name)
            ax.fill_between(x, low, high, color=f"C{k % 10}", alpha=0.25, linewidth=0)
        top = max((s.bytes for _, s in rows), default=2)
        size_axis(ax, "x", 1, max(top, 2), zero=True)
        ax.set_yscale("log")
        level = _level([s for _, s in rows])
        finish(
            ax,
            f"bytes per rank (bands: {level} confidence interval of the mean)",
            "time (us; 25 % trimmed mean of valid launches)",
        )
        return to_svg(fig)


def _level(summaries: Sequence[CollSummary]) -> str:
    levels = {s.level for s in summaries}
    return f"{levels.pop():.0%}" if len(levels) == 1 else "per-point"
