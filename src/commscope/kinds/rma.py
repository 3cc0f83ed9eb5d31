"""The one-sided kind: MPI_Put, MPI_Get and MPI_Accumulate under fence, lock and PSCW.

Its records are Points named OP_MODE_SYNC (put_lat_fence, get_bw_lock, acc_lat_pscw...), which
``data.run_data`` keeps apart from the point-to-point ones; ``analysis/rma.py`` makes the
series and key figures.
"""

from __future__ import annotations

from typing import Any

from rich.table import Table

from commscope.analysis import rma as rma_analysis
from commscope.data.records import Point
from commscope.data.run_data import RunData
from commscope.kinds.base import Kind, View
from commscope.kinds.benchmarks import Benchmark
from commscope.kinds.figures import (
    HIGHER,
    LOWER,
    Figure,
    FigureSpec,
    figure,
    point_rate_samples,
    point_time_samples,
)
from commscope.kinds.p2p import mbs, us
from commscope.report import summary_card


def summarize(run: RunData, view: View) -> rma_analysis.RmaSummary | None:
    """Series and key figures; None without one-sided records."""
    return rma_analysis.summarize(run.family("rma")) if run.family("rma") else None


def to_json(summary: rma_analysis.RmaSummary | None) -> dict[str, Any]:
    """Key figures and every series, empty lists for runs without one-sided records."""
    if summary is None:
        return {"rma": {"figures": [], "series": []}}
    return {
        "rma": {
            "figures": [f.to_json() for f in summary.figures],
            "series": [s.to_json() for s in summary.series],
        }
    }


def key_table(summary: rma_analysis.RmaSummary) -> Table:
    """Latency at the smallest size and peak bandwidth per pair, operation and sync."""
    table = Table(title="one-sided (RMA): latency and peak bandwidth (MB/s = 10^6 bytes/s)")
    for col in ("pair", "op", "sync", "latency (us)", "at bytes", "peak bw (MB/s)", "at bytes"):
        table.add_column(col, justify="left" if col in ("pair", "op", "sync") else "right")
    for f in summary.figures:
        table.add_row(
            f.pair,
            f.operation,
            f.sync,
            us(f.latency_s),
            "" if f.latency_bytes is None else str(f.latency_bytes),
            mbs(f.peak_bandwidth_Bps),
            "" if f.peak_bytes is None else str(f.peak_bytes),
        )
    return table


def size_tables(summary: rma_analysis.RmaSummary) -> list[Table]:
    """Per pair and mode: one column per op/sync, one row per size."""
    out = []
    pairs = list(dict.fromkeys(s.pair for s in summary.series))
    for pair in pairs:
        for mode, unit in (("lat", "latency in us"), ("bw", "bandwidth in MB/s")):
            mine = [s for s in summary.series if s.pair == pair and s.mode == mode]
            if not mine:
                continue
            table = Table(title=f"{pair}: one-sided {unit}")
            table.add_column("bytes", justify="right")
            for s in mine:
                table.add_column(f"{s.operation} {s.sync}", justify="right")
            for size in sorted({b for s in mine for b in s.bytes}):
                cells = []
                for s in mine:
                    i = s.bytes.index(size) if size in s.bytes else None
                    if i is None:
                        cells.append("")
                    else:
                        cells.append(us(s.time_s[i]) if mode == "lat" else mbs(s.bandwidth_Bps[i]))
                table.add_row(str(size), *cells)
            out.append(table)
    return out


def terminal(summary: rma_analysis.RmaSummary) -> list[Any]:
    """Key figures, per-size tables, then the findings."""
    return [key_table(summary), *size_tables(summary), *rma_analysis.findings(summary)]


def report(summary: rma_analysis.RmaSummary) -> dict[str, Any]:
    """The report entry: key figures, latency and bandwidth plots per pair, findings."""
    from markupsafe import Markup

    from commscope.report import rma_section  # matplotlib: only for a report

    pairs = list(dict.fromkeys(s.pair for s in summary.series))
    return {
        "figures": summary.figures,
        # SVG that matplotlib produced from numbers and escaped labels.
        "plots": [(pair, Markup(rma_section.rma_plot(summary, pair))) for pair in pairs],
        "findings": rma_analysis.findings(summary),
        "sync_calls": sorted({s.sync_calls for s in summary.series if s.sync_calls}),
    }


LATENCY = FigureSpec(
    "rma_latency_seconds", "seconds", LOWER, "latency", "one-sided operation time per op and size"
)
BANDWIDTH = FigureSpec(
    "rma_bandwidth_bytes_per_second",
    "bytes_per_second",
    HIGHER,
    "bw",
    "one-sided bandwidth per op and size",
)


def figures(run: RunData) -> list[Figure]:
    """Latency of the *_lat_* series, bandwidth of the *_bw_* series, per op, pair and size."""
    out = []
    for p in run.family("rma"):
        where = {"op": p.op, "pair": p.pair, "bytes": p.bytes}
        if "_lat_" in p.op:
            out.append(figure(LATENCY, point_time_samples(p), **where))
        elif p.bytes > 0:
            out.append(figure(BANDWIDTH, point_rate_samples(p), **where))
    return out


KIND = Kind(
    name="rma",
    benchmarks=(Benchmark("rma", one_sided=True),),
    records=(Point,),
    summarize=summarize,
    to_json=to_json,
    terminal=terminal,
    report=report,
    template="rma_section.html.j2",
    figure_specs=(LATENCY, BANDWIDTH),
    figures=figures,
    card_figures=summary_card.rma_figures,
)
