"""The multi-pair bandwidth kind (osu_mbw_mr's method): k pairs sending at once.

Aggregate bandwidth and message rate per size and pair count, and the k at which the
bandwidth saturates.
"""

from __future__ import annotations

from typing import Any

from rich.table import Table

from commscope.analysis import mbw as mbw_analysis
from commscope.data.point_ops import mbw_pairs
from commscope.data.records import Point
from commscope.data.run_data import RunData
from commscope.kinds.base import Kind, View
from commscope.kinds.benchmarks import Benchmark
from commscope.kinds.figures import HIGHER, Figure, FigureSpec, figure, point_rate_samples
from commscope.kinds.p2p import mbs
from commscope.report import summary_card


def summarize(run: RunData, view: View) -> list[mbw_analysis.MbwSummary] | None:
    """One summary per pair label; None without mbw points."""
    return mbw_analysis.summarize(run.family("mbw")) if run.family("mbw") else None


def _rate(per_s: float) -> str:
    return f"{per_s:.4g}" if per_s == per_s else ""


def tables(summaries: list[mbw_analysis.MbwSummary]) -> list[Any]:
    """Peaks per pair count, then every size, then the findings."""
    out: list[Any] = []
    for s in summaries:
        peaks = Table(title=f"mbw {s.pair}: peaks per pair count (MB/s = 10^6 bytes/s)")
        for col in ("pairs", "peak MB/s", "at bytes", "peak messages/s", "at bytes"):
            peaks.add_column(col, justify="right")
        for step in s.steps:
            mark = " (saturates)" if step.pairs == s.saturation_pairs else ""
            peaks.add_row(
                f"{step.pairs}{mark}",
                mbs(step.peak_Bps),
                str(step.peak_bytes),
                _rate(step.peak_rate_per_s),
                str(step.peak_rate_bytes),
            )
        sizes = Table(title=f"mbw {s.pair}: aggregate MB/s and messages/s per size")
        sizes.add_column("bytes", justify="right")
        for step in s.steps:
            sizes.add_column(f"k={step.pairs} MB/s", justify="right")
            sizes.add_column(f"k={step.pairs} msg/s", justify="right")
        by_size = {(r.pairs, r.bytes): r for step in s.steps for r in step.rows}
        for size in sorted({b for _, b in by_size}):
            cells = [str(size)]
            for step in s.steps:
                r = by_size.get((step.pairs, size))
                cells += (
                    ["", ""] if r is None else [mbs(r.aggregate_Bps), _rate(r.message_rate_per_s)]
                )
            sizes.add_row(*cells)
        out += [peaks, sizes]
    return [*out, *mbw_analysis.findings(summaries)]


def to_json(summaries: list[mbw_analysis.MbwSummary] | None) -> dict[str, Any]:
    """`show --json`: the summaries under "mbw" (an empty list without mbw points)."""
    return {"mbw": [s.to_json() for s in summaries] if summaries else []}


def report(summaries: list[mbw_analysis.MbwSummary]) -> dict[str, Any]:
    """The report entry: the summaries, two plots per pair label, the findings."""
    from markupsafe import Markup

    from commscope.report import mbw_section  # matplotlib: only for a report

    return {
        "summaries": summaries,
        # SVG that matplotlib produced from numbers and escaped labels.
        "plots": [
            (s.pair, Markup(mbw_section.bandwidth_plot(s)), Markup(mbw_section.rate_plot(s)))
            for s in summaries
        ],
        "findings": mbw_analysis.findings(summaries),
    }


AGGREGATE = FigureSpec(
    "mbw_bandwidth_bytes_per_second",
    "bytes_per_second",
    HIGHER,
    "bw",
    "aggregate bandwidth of k pairs sending at once, per size",
)


def figures(run: RunData) -> list[Figure]:
    """Aggregate bandwidth per pair count and size."""
    return [
        figure(AGGREGATE, point_rate_samples(p), pairs=mbw_pairs(p.op), pair=p.pair, bytes=p.bytes)
        for p in run.family("mbw")
        if p.bytes > 0
    ]


KIND = Kind(
    name="mbw",
    benchmarks=(Benchmark("mbw"),),
    records=(Point,),
    summarize=summarize,
    to_json=to_json,
    terminal=tables,
    report=report,
    template="mbw_section.html.j2",
    figure_specs=(AGGREGATE,),
    figures=figures,
    card_figures=summary_card.mbw_figures,
)
