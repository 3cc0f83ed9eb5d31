"""The matrix kind: all node pairs at once (mpiGraph) and the effective bisection (Netgauge).

It owns the ``matrix_lat``, ``matrix_bw`` and ``bisection_bw`` points (the ``paired`` family).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from rich.table import Table
from rich.text import Text

from commscope.analysis import confirm
from commscope.analysis import matrix as matrix_analysis
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


@dataclass(frozen=True)
class PairedRun:
    """A run's matrices (latency, then bandwidth per size) and bisection distributions."""

    matrices: list[matrix_analysis.Matrix]
    bisection: list[matrix_analysis.Bisection]
    confirmed: list[confirm.Confirmation] = field(default_factory=list)  # the suspects again


def summarize(run: RunData, view: View) -> PairedRun | None:
    """The matrices with their outliers and the bisection; None without such points."""
    points = run.family("paired")
    if not points:
        return None
    names = matrix_analysis.rank_nodes(run.info.header, points)
    found = matrix_analysis.matrices(points, names)
    again = [p for p in points if confirm.round_of(p.pair)]
    confirmed = confirm.judge(found, again, names) if again else []
    return PairedRun(found, matrix_analysis.bisection(points), confirmed)


def to_json(run: PairedRun | None) -> dict[str, Any]:
    """``matrix``: each matrix with its outliers; ``bisection``: the distribution per size."""
    return {
        "matrix": [m.to_json() for m in run.matrices] if run else [],
        "bisection": [b.to_json() for b in run.bisection] if run else [],
        "confirmation": [c.to_json() for c in run.confirmed] if run else [],
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


TABLE_NODES = 16  # up to this many nodes a matrix is printed whole; above, summarised
WORST = 5  # nodes and links listed in a summary


def matrix_summary(m: matrix_analysis.Matrix) -> Table:
    """A large matrix in a few lines: the distribution of its links, the worst nodes and links."""
    latency = m.unit == "s"
    shown = us if latency else mbs
    what = "latency (us)" if latency else "bandwidth (MB/s = 10^6 bytes/s)"
    n = len(m.names)
    values = np.array([[np.nan if x is None else x for x in row] for row in m.values], float)
    links = values[np.isfinite(values)]
    table = Table(
        title=f"{what}, {m.bytes}-byte messages: {n} nodes, {links.size} links", show_header=False
    )
    table.add_column("", justify="left")
    table.add_column("", justify="left")
    if links.size:
        cuts = np.percentile(links, [0, 10, 50, 90, 100])
        names = "min p10 median p90 max".split()
        table.add_row("links", "  ".join(f"{k} {shown(float(v))}" for k, v in zip(names, cuts,
                      strict=True)))  # fmt: skip
    worse = -1.0 if latency else 1.0  # sort so the worst come first
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a node with no measured link
        per_node = np.nanmedian(np.concatenate([values, values.T], axis=1), axis=1)
    order = [i for i in np.argsort(worse * per_node) if np.isfinite(per_node[i])][:WORST]
    table.add_row(
        "worst nodes (median of their links)",
        ", ".join(f"{m.names[i]} {shown(float(per_node[i]))}" for i in order),
    )
    flat = [(values[i, j], i, j) for i in range(n) for j in range(n) if np.isfinite(values[i, j])]
    flat.sort(key=lambda x: worse * x[0])
    table.add_row(
        "worst links",
        ", ".join(f"{m.names[i]}->{m.names[j]} {shown(float(v))}" for v, i, j in flat[:WORST]),
    )
    return table


def terminal(run: PairedRun) -> list[Any]:
    """Each matrix (summarised above TABLE_NODES nodes), the outliers, the bisection table."""
    out: list[Any] = [
        matrix_table(m) if len(m.names) <= TABLE_NODES else matrix_summary(m) for m in run.matrices
    ]
    out += [
        Text(line, style="yellow" if "MADs worse" in line else "")
        for line in matrix_analysis.findings(run.matrices)
    ]
    out += [
        Text(f"confirmed: {c.text()}", style="bold red" if c.verdict == "bad" else "")
        for c in run.confirmed
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
    names = matrix_analysis.rank_nodes(run.info.header, points)
    out = []
    for p in points:
        if "/" in p.pair:  # bisection matchings, confirmation rounds: not a link's figure
            continue
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
    benchmarks=(Benchmark("matrix", paired=True, drains=True), Benchmark("bisection", paired=True)),
    records=(),
    summarize=summarize,
    to_json=to_json,
    terminal=terminal,
    report=report,
    template="matrix_section.html.j2",
    figure_specs=(LINK_LATENCY, LINK_BANDWIDTH, BISECTION),
    figures=figures,
    card_figures=summary_card.matrix_figures,
    card_warnings=summary_card.matrix_warnings,
)
