"""One-sided communication in the HTML report: latency and bandwidth against size per pair.

``commscope.kinds.rma`` puts an ``rma`` entry into each run's template context (None for runs
without one-sided points); ``rma_section.html.j2`` shows it. One figure per pair, latency on
the left and bandwidth on the right, a colour per operation and a line style per sync.
"""

from __future__ import annotations

from commscope.analysis.rma import RmaSummary
from commscope.report.plotting import figure, finish, size_axis, to_svg

_COLOURS = {"put": "tab:blue", "get": "tab:green", "acc": "tab:red"}
_STYLES = {"fence": ("-", "o"), "lock": ("--", "s"), "pscw": (":", "^")}


def rma_plot(summary: RmaSummary, pair: str) -> str:
    """Latency (us, log) and bandwidth (MB/s, log) against size for one pair."""
    mine = [s for s in summary.series if s.pair == pair]
    sizes = [b for s in mine for b in s.bytes if b > 0] or [1]
    with figure((9.0, 3.6), ncols=2) as (fig, (lat_ax, bw_ax)):
        for s in mine:
            line, marker = _STYLES[s.sync]
            keep = [i for i, b in enumerate(s.bytes) if b > 0]
            x = [s.bytes[i] for i in keep]
            if s.mode == "lat":
                ax, y = lat_ax, [s.time_s[i] * 1e6 for i in keep]
            else:
                ax, y = bw_ax, [s.bandwidth_Bps[i] / 1e6 for i in keep]
            label = f"{s.operation} {s.sync}"
            ax.plot(
                x, y, line, marker=marker, color=_COLOURS[s.operation], markersize=3.5, label=label
            )
        for ax in (lat_ax, bw_ax):
            ax.set_yscale("log")
            size_axis(ax, "x", min(sizes), max(max(sizes), 2))
        finish(lat_ax, "message size", "latency (us, log)")
        finish(bw_ax, "message size", "bandwidth (MB/s, log)", legend=False)
        return to_svg(fig)
