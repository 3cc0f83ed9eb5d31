"""The node-compute kind: Linpack per core count against P_peak (Rechistov et al. 2012).

Its report entry is the table and the GFLOPS plot; the report adds, across runs, how a
panel broadcast at a measured bandwidth compares with the compute it feeds.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rich.table import Table
from rich.text import Text

from commscope.analysis import node as node_analysis
from commscope.data.records import Linpack
from commscope.data.run_data import RunData
from commscope.kinds.base import Kind, View
from commscope.kinds.figures import HIGHER, Figure, FigureSpec, figure
from commscope.report import summary_card


@dataclass(frozen=True)
class NodeRun:
    """A node run's Linpack points and their summary."""

    points: list[Linpack]
    summary: node_analysis.NodeSummary


def summarize(run: RunData, view: View) -> NodeRun | None:
    """The Linpack summary; None without Linpack records."""
    if not run.linpacks:
        return None
    return NodeRun(run.linpacks, node_analysis.summarize(run.info.request or {}, run.linpacks))


def _gf(value: float | None) -> str:
    return "" if value is None else f"{value:.2f}"


def _ghz(value: float | None) -> str:
    return "" if value is None else f"{value:.3f}"


def figures(summary: node_analysis.NodeSummary) -> list[Any]:
    """Linpack table per core count, then how each P_peak was derived."""
    on = f" on {summary.cpu_model}" if summary.cpu_model else ""
    table = Table(title=f"node compute: Linpack (GFLOPS){on}")
    for col in (
        "cores",
        "threads",
        "cpus",
        "P_max",
        "N_max",
        "N_1/2",
        "P_peak",
        "efficiency",
        "nominal GHz",
        "busy GHz",
        "largest N",
        "solver",
    ):
        table.add_column(col, justify="left" if col == "solver" else "right")
    for f in summary.figures:
        half = f"{'<= ' if f.n_half_at_smallest else ''}{f.n_half:.0f}"
        eff = "" if f.efficiency is None else f"{f.efficiency:.1%}"
        table.add_row(
            str(f.cores),
            str(f.threads),
            ",".join(map(str, f.affinity)),
            _gf(f.p_max_gflops),
            str(f.n_max),
            half,
            _gf(f.p_peak_gflops),
            eff,
            _ghz(f.nominal_ghz),
            _ghz(f.busy_ghz),
            str(f.largest_n),
            f.solver,
        )
    out: list[Any] = [table]
    for f in summary.figures:
        cores = f"{f.cores} core{'s' if f.cores != 1 else ''}"
        if f.peak_derivation:
            out.append(f.peak_derivation)
        if f.kernel_ceiling:
            out.append(f"{cores}: {f.kernel_ceiling}")
        if f.warning:
            out.append(Text(f"{cores}: {f.warning}", style="bold red"))
    return out


def rows(summary: node_analysis.NodeSummary) -> Table:
    """Every N: solves, median time, GFLOPS spread, residual, threads at work."""
    table = Table(title="Linpack per N (GFLOPS; residual: HPL scaled residual, must be < 16)")
    for col in (
        "cores",
        "N",
        "solves",
        "median s",
        "median",
        "min",
        "max",
        "residual",
        "threads busy",
        "others %",
    ):
        table.add_column(col, justify="right")
    for r in summary.rows:
        busy = "" if r.threads_at_work is None else f"{r.threads_at_work:.2f}"
        others = "" if r.others_cpu_share is None else f"{r.others_cpu_share:.0%}"
        table.add_row(
            str(r.cores),
            str(r.n),
            str(r.solves),
            f"{r.median_s:.4g}",
            _gf(r.median_gflops),
            _gf(r.min_gflops),
            _gf(r.max_gflops),
            f"{r.residual:.3g}",
            busy,
            others,
        )
    return table


def report(run: NodeRun) -> dict[str, Any]:
    """The report entry: the summary and the GFLOPS plot."""
    from markupsafe import Markup

    from commscope.report import node_section  # matplotlib: only for a report

    # SVG that matplotlib produced from numbers and escaped labels.
    return {
        "summary": run.summary,
        "plot": Markup(node_section.gflops_plot(run.points, run.summary.figures)),
    }


P_MAX = FigureSpec(
    "node_linpack_pmax_flops",
    "flops",
    HIGHER,
    "compute",
    "Linpack P_max per core count: the solves at the N that reached it",
)


def check_figures(run: RunData) -> list[Figure]:
    """P_max per core count, with the rates of the solves at N_max as samples."""
    if not run.linpacks:
        return []
    out = []
    for f in node_analysis.figures(run.linpacks):
        at = [p for p in run.linpacks if p.cores == f.cores and p.n == f.n_max]
        rates = [g * 1e9 for p in at for g in p.gflops]
        out.append(figure(P_MAX, rates, cores=f.cores))
    return out


KIND = Kind(
    name="node",
    one_process="node compute",
    records=(Linpack,),
    summarize=summarize,
    to_json=lambda run: {"node": run.summary.to_json() if run else None},
    terminal=lambda run: [*figures(run.summary), rows(run.summary)],
    report=report,
    template="node_section.html.j2",
    figure_specs=(P_MAX,),
    figures=check_figures,
    card_figures=summary_card.node_figures,
    card_warnings=summary_card.node_warnings,
)
