"""The matrix kind: all node pairs at once (mpiGraph) and the effective bisection (Netgauge).

It owns the ``matrix_lat``, ``matrix_bw`` and ``bisection_bw`` points (the ``paired`` family).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rich.table import Table
from rich.text import Text

from commscope.analysis import matrix as matrix_analysis
from commscope.data.run_data import RunData
from commscope.kinds.base import Kind, View
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


@dataclass(frozen=True)
class PairedRun:
    """A run's matrices (latency, then bandwidth per size) and bisection distributions."""

    matrices: list[matrix_analysis.Matrix]
    bisection: list[matrix_analysis.Bisection]


def summarize(run: RunData, view: View) -> PairedRun | None:
    """The matrices with their outliers and the bisection; None without such points."""
    points = run.family("paired")
    if not points:
        return None
    header = run.info.header
    nranks = int(header["nranks"]) if header else 1 + max(max(p.ranks) for p in points)
    names = matrix_analysis.node_names(header, nranks)
    return PairedRun(matrix_analysis.matrices(points, names), matrix_analysis.bisection(points))


def to_json(run: PairedRun | None) -> dict[str, Any]:
    """``matrix``: each matrix with its outliers; ``bisection``: the distribution per size."""
    return {
        "matrix": [m.to_json() for m in run.matrices] if run else [],
        "bisection": [b.to_json() for b in run.bisection] if run else [],
    }


def matrix_table(m: matrix_analysis.Matrix) -> Table:
    """Rows send, columns receive; bandwidth in MB/s, latency in us."""
    what = "latency (us)" if m.unit == "s" else "bandwidth (MB/s = 10^6 bytes/s)"
    table = Table(title=f"{what}, {m.bytes}-byte messages: rows send, columns receive")
    table.add_column("sender", justify="left")
    for name in m.names:
        table.add_column(name, justify="right")
    shown = us if m.unit == "s" else mbs
    for name, row in zip(m.names, m.values, strict=True):
        table.add_row(name, *(shown(x) if x is not None else "-" for x in row))
    return table


def bisection_table(found: list[matrix_analysis.Bisection]) -> Table:
    """Per size: the pairs' bandwidths over every matching; the mean is the effective one."""
    table = Table(title="effective bisection bandwidth per pair (MB/s; Netgauge's method)")
    for col in (
        "bytes",
        "matchings",
        "pairs",
        "min",
        "median",
        "mean (effective)",
        "max",
        "all pairs at once",
    ):
        table.add_column(col, justify="right")
    for b in found:
        table.add_row(
            str(b.bytes),
            str(b.matchings),
            str(b.pairs),
            mbs(b.min_Bps),
            mbs(b.median_Bps),
            mbs(b.mean_Bps),
            mbs(b.max_Bps),
            mbs(b.aggregate_Bps),
        )
    return table


def terminal(run: PairedRun) -> list[Any]:
    """Each matrix, the outliers (or that there are none), the bisection table."""
    out: list[Any] = [matrix_table(m) for m in run.matrices]
    out += [
        Text(line, style="yellow" if "MADs worse" in line else "")
        for line in matrix_analysis.findings(run.matrices)
    ]
    if run.bisection:
        out.append(bisection_table(run.bisection))
    return out


def report(run: PairedRun) -> dict[str, Any]:
    """The report entry: heat maps, outliers, the bisection distribution."""
    from markupsafe import Markup

    from commscope.report import matrix_section  # matplotlib: only for a report

    return {
        "matrices": run.matrices,
        # SVG that matplotlib produced from numbers and escaped labels.
        "plots": [(m, Markup(matrix_section.heat_map(m))) for m in run.matrices],
        "findings": matrix_analysis.findings(run.matrices),
        "bisection": run.bisection,
    }


LINK_LATENCY = FigureSpec(
    "matrix_latency_seconds", "seconds", LOWER, "latency", "one-way latency of a node pair"
)
LINK_BANDWIDTH = FigureSpec(
    "matrix_bandwidth_bytes_per_second",
    "bytes_per_second",
    HIGHER,
    "bw",
    "bandwidth from one node to another while the others are idle",
)
BISECTION = FigureSpec(
    "bisection_bandwidth_bytes_per_second",
    "bytes_per_second",
    HIGHER,
    "bw",
    "effective bisection bandwidth: a pair's bandwidth in random matchings (Netgauge)",
)


def figures(run: RunData) -> list[Figure]:
    """Latency and bandwidth per ordered node pair and size; the bisection per size."""
    points = run.family("paired")
    if not points:
        return []
    header = run.info.header
    nranks = int(header["nranks"]) if header else 1 + max(max(p.ranks) for p in points)
    names = matrix_analysis.node_names(header, nranks)
    out = []
    for p in points:
        if p.op == "matrix_lat":
            link = f"{names[p.ranks[0]]}->{names[p.ranks[1]]}"
            out.append(figure(LINK_LATENCY, point_time_samples(p), link=link, bytes=p.bytes))
        elif p.op == "matrix_bw":
            link = f"{names[p.ranks[0]]}->{names[p.ranks[1]]}"
            out.append(figure(LINK_BANDWIDTH, point_rate_samples(p), link=link, bytes=p.bytes))
    for nbytes in sorted({p.bytes for p in points if p.op == "bisection_bw"}):
        rates = [p.bandwidth_Bps for p in points if p.op == "bisection_bw" and p.bytes == nbytes]
        out.append(figure(BISECTION, rates, bytes=nbytes))
    return out


KIND = Kind(
    name="matrix",
    records=(),
    summarize=summarize,
    to_json=to_json,
    terminal=terminal,
    report=report,
    template="matrix_section.html.j2",
    figure_specs=(LINK_LATENCY, LINK_BANDWIDTH, BISECTION),
    figures=figures,
)
