"""Matplotlib figures rendered to inline SVG text (no files, no network)."""

from __future__ import annotations

import io

import matplotlib

matplotlib.use("Agg")  # no display; must precede pyplot
import matplotlib.pyplot as plt  # noqa: E402

from commscope.analysis import p2p  # noqa: E402
from commscope.records import Point  # noqa: E402


def _svg(fig: plt.Figure) -> str:
    buf = io.StringIO()
    fig.savefig(buf, format="svg", bbox_inches="tight")
    plt.close(fig)
    text = buf.getvalue()
    return text[text.index("<svg"):]  # drop the XML prolog and doctype for inline use


def latency_plot(series: dict[str, list[Point]]) -> str:
    """Ping-pong one-way time vs size, log-log, one line per labelled series."""
    fig, ax = plt.subplots(figsize=(7, 4))
    for label, points in series.items():
        rows = [r for r in p2p.size_rows(points) if r.latency_s is not None]
        for pair in p2p.pairs_in(points):
            xs = [max(r.bytes, 1) for r in rows if r.pair == pair]
            ys = [r.latency_s * 1e6 for r in rows if r.pair == pair and r.latency_s is not None]
            if xs:
                ax.plot(xs, ys, marker=".", label=f"{label} {pair}")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("message size (bytes; 0 plotted at 1)")
    ax.set_ylabel("one-way time (us)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize="small")
    return _svg(fig)


def bandwidth_plot(series: dict[str, list[Point]]) -> str:
    """Windowed unidirectional and ping-pong bandwidth vs size."""
    fig, ax = plt.subplots(figsize=(7, 4))
    for label, points in series.items():
        rows = p2p.size_rows(points)
        for pair in p2p.pairs_in(points):
            for attr, style in (("bandwidth_Bps", "-"), ("pingpong_bandwidth_Bps", ":")):
                pts = [(r.bytes, getattr(r, attr)) for r in rows
                       if r.pair == pair and getattr(r, attr)]
                if pts:
                    name = "bw" if attr == "bandwidth_Bps" else "pingpong"
                    ax.plot([x for x, _ in pts], [y / 1e6 for _, y in pts], style, marker=".",
                            label=f"{label} {pair} {name}")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("message size (bytes)")
    ax.set_ylabel("bandwidth (MB/s, 10^6 bytes/s)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize="small")
    return _svg(fig)
