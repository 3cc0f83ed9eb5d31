"""Node compute in the HTML report: Linpack curve, figures, and compute against communication.

``commscope.kinds.node`` puts a ``node`` entry (summary and plot) into each run's template
context; ``add_balance_lines`` adds, across the report's runs, the line that
compares, at N_max on the most cores, sending one HPL panel (an N x 256 block column of
doubles) at a measured pair's bandwidth with the trailing-matrix update it feeds at P_max.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from commscope.analysis import node as node_analysis
from commscope.analysis.p2p import PairFigures
from commscope.data.records import Linpack
from commscope.report.plotting import figure, finish, to_svg
from commscope.units import rate_text, size_text, time_text

_PAIR_PREFERENCE = ("inter-node", "inter-socket", "intra-socket", "intra-node", "unknown")


def gflops_plot(points: Sequence[Linpack], figs: Sequence[node_analysis.NodeFigures]) -> str:
    """GFLOPS against N, one line per core count: median, min-max band, P_peak and N_1/2."""
    with figure() as (fig, (ax,)):
        for k, f in enumerate(figs):
            mine = sorted((p for p in points if p.cores == f.cores), key=lambda p: p.n)
            colour = f"C{k % 10}"
            n = np.array([p.n for p in mine], dtype=float)
            ax.plot(
                n,
                [p.median_gflops for p in mine],
                "-",
                marker=".",
                color=colour,
                label=f"{f.cores} core{'s' if f.cores != 1 else ''}",
            )
            ax.fill_between(
                n,
                [min(p.gflops) for p in mine],
                [max(p.gflops) for p in mine],
                color=colour,
                alpha=0.2,
                linewidth=0,
            )
            ax.plot([f.n_half], [f.p_max_gflops / 2], "x", color=colour, markersize=7)
            if f.p_peak_gflops:
                ax.axhline(f.p_peak_gflops, color=colour, linestyle="--", linewidth=0.8)
        ax.set_xscale("log")
        ax.set_ylim(bottom=0)
        finish(
            ax,
            "N (matrix order; x: N_1/2 at half of P_max)",
            "GFLOPS (median of the solves; band: min-max; dashed: P_peak)",
        )
        return to_svg(fig)


def _bandwidth(pair: PairFigures) -> float | None:
    for op in ("bw", "pingpong"):
        c = pair.curve(op)
        if c is not None and (c.asymptotic_bandwidth_Bps or c.peak_bandwidth_Bps):
            return c.asymptotic_bandwidth_Bps or c.peak_bandwidth_Bps
    return None


def balance_lines(
    node_run: str,
    figs: Sequence[node_analysis.NodeFigures],
    comm_runs: Sequence[tuple[str, Sequence[PairFigures]]],
) -> list[str]:
    """Plain sentences: one HPL panel sent over a measured pair against the update it feeds.

    Args:
        node_run: the node run's name, e.g. "run 4".
        figs: its figures; the row with the most cores is used.
        comm_runs: (run name, its pair figures) of the report's communication runs.
    """
    if not figs:
        return []
    f = max(figs, key=lambda x: x.cores)
    lines = []
    for name, pairs in comm_runs:
        ranked = sorted(
            pairs,
            key=lambda p: (
                _PAIR_PREFERENCE.index(p.pair)
                if p.pair in _PAIR_PREFERENCE
                else len(_PAIR_PREFERENCE)
            ),
        )
        for pair in ranked[:1]:  # the farthest pair measured: inter-node when there is one
            bw = _bandwidth(pair)
            b = node_analysis.panel_balance(
                f.n_max, f.p_max_gflops, bw or 0.0, pair.latency_s or 0.0
            )
            if b is None or bw is None:
                continue
            lines.append(
                f"At N = {b.n} ({node_run}, {f.cores} cores, P_max {f.p_max_gflops:.1f} GFLOPS),"
                f" sending one {b.n} x {b.nb} panel of doubles ({size_text(b.panel_bytes)}, the"
                f" block column HPL broadcasts at each step) at {name}'s {pair.pair} bandwidth"
                f" of {rate_text(bw)} takes {time_text(b.send_s)}; the trailing-matrix update"
                f" it feeds takes {time_text(b.compute_s)} at P_max. Computing outweighs this"
                f" transfer for N above about {b.crossover_n:.0f}."
            )
    return lines


def add_balance_lines(runs: Sequence[dict[str, Any]]) -> None:
    """Add, to each run's ``node`` entry, how panel broadcasts compare with compute.

    The bandwidths come from every point-to-point run of the report, this one included.
    """
    comm = [(r["name"], r["figures"]) for r in runs if r.get("figures")]
    for r in runs:
        if r.get("node"):
            r["node"]["lines"] = balance_lines(r["name"], r["node"]["summary"].figures, comm)
