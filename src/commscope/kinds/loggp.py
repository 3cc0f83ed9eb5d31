"""The LogGP kind: L, o_s, o_r, g and G per pair by Netgauge's method, with what stands out."""

from __future__ import annotations

from typing import Any

from rich.table import Table

from commscope.analysis import loggp as loggp_analysis
from commscope.data.records import LogGP
from commscope.data.run_data import RunData
from commscope.kinds.base import Kind, View
from commscope.kinds.benchmarks import Benchmark
from commscope.kinds.figures import LOWER, Figure, FigureSpec, figure
from commscope.kinds.p2p import mbs
from commscope.report import summary_card


def summarize(run: RunData, view: View) -> list[loggp_analysis.LogGPFit] | None:
    """One fit per pair; None without LogGP records."""
    return loggp_analysis.fits(run.loggps) if run.loggps else None


def _us3(seconds: float) -> str:
    return f"{seconds * 1e6:.3f}"


def table(fitted: list[loggp_analysis.LogGPFit]) -> list[Any]:
    """LogGP parameters per pair, then the findings."""
    out = Table(title="LogGP (L, o_s, o_r, g in us; G in ns/byte; bandwidth 1/G in MB/s)")
    for col in ("pair", "L", "o_s", "o_r", "g", "G", "1/G MB/s", "small sizes", "G from"):
        out.add_column(col, justify="left" if col == "pair" else "right")
    for f in fitted:
        g_line = f.lines["G"]
        out.add_row(
            f.pair,
            _us3(f.L_s),
            _us3(f.o_s_s),
            _us3(f.o_r_s),
            _us3(f.g_s),
            f"{f.G_s_per_byte * 1e9:.4f}",
            mbs(f.bandwidth_Bps),
            f"{f.small_bytes[0]}-{f.small_bytes[1]}",
            f"{g_line.first_bytes}-{g_line.last_bytes}",
        )
    return [out, *loggp_analysis.findings(fitted)]


def report(fitted: list[loggp_analysis.LogGPFit]) -> dict[str, Any]:
    """The report entry: the fits, a plot per pair, the findings."""
    from markupsafe import Markup

    from commscope.report import loggp_section  # matplotlib: only for a report

    return {
        "fits": fitted,
        # SVG that matplotlib produced from numbers and escaped labels.
        "plots": [(f.pair, Markup(loggp_section.loggp_plot(f))) for f in fitted],
        "findings": loggp_analysis.findings(fitted),
    }


# LogGP parameters (Alexandrov et al. 1995) as Netgauge fits them: one value per fit.
PARAMETERS = {
    "L_s": FigureSpec("loggp_latency_seconds", "seconds", LOWER, "latency", "LogGP L"),
    "o_s_s": FigureSpec("loggp_send_overhead_seconds", "seconds", LOWER, "latency", "LogGP o_s"),
    "o_r_s": FigureSpec("loggp_receive_overhead_seconds", "seconds", LOWER, "latency", "LogGP o_r"),
    "g_s": FigureSpec("loggp_gap_seconds", "seconds", LOWER, "latency", "LogGP g"),
    "G_s_per_byte": FigureSpec(
        "loggp_gap_per_byte_seconds", "seconds", LOWER, "bw", "LogGP G (1/G: bandwidth)"
    ),
}


def figures(run: RunData) -> list[Figure]:
    """Each pair's fitted parameters (one value each: the fit has no samples)."""
    if not run.loggps:
        return []
    return [
        figure(spec, [getattr(fit, attr)], pair=fit.pair)
        for fit in loggp_analysis.fits(run.loggps)
        for attr, spec in PARAMETERS.items()
    ]


KIND = Kind(
    name="loggp",
    benchmarks=(Benchmark("loggp", in_default_run=True),),
    records=(LogGP,),
    summarize=summarize,
    to_json=lambda fitted: {"loggp": [f.to_json() for f in fitted] if fitted else []},
    terminal=table,
    report=report,
    template="loggp_section.html.j2",
    figure_specs=tuple(PARAMETERS.values()),
    figures=figures,
    card_figures=summary_card.loggp_figures,
)
