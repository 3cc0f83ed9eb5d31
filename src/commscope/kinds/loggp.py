"""The LogGP kind: L, o_s, o_r, g and G per pair by Netgauge's method, with what stands out."""

from __future__ import annotations

from typing import Any

from rich.table import Table

from commscope.analysis import loggp as loggp_analysis
from commscope.data.records import LogGP
from commscope.data.run_data import RunData
from commscope.kinds.base import Kind, View
from commscope.kinds.p2p import mbs


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


KIND = Kind(
    name="loggp",
    records=(LogGP,),
    summarize=summarize,
    to_json=lambda fitted: {"loggp": [f.to_json() for f in fitted] if fitted else []},
    terminal=table,
    report=report,
    template="loggp_section.html.j2",
)
