"""The report's summary card: per run, the figures an admin quotes and each warning once.

It only formats what the run's context already holds (``html.run_context`` and each kind's
report entry): the key figures `show` prints first (``p2p.key_figures``), the collectives'
times and flags, and the load, TCP-loss and interrupted-sample warnings of the run's page.
A kind's own lines (LogGP fits, Linpack P_max, matrix medians and outliers, RMA and
multi-pair peaks) are formatted by the functions below that the kind names
(``Kind.card_figures``, ``Kind.card_warnings``); ``kinds.report_contexts`` gathers them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from commscope.analysis import coll as coll_analysis
from commscope.units import rate_text, size_text, time_text

Line = tuple[str, str]  # (what, value)
PAIR_FIRST = ("inter-node",)  # the pair an admin quotes first
MOST_NAMED = 4  # nodes or points named in one warning; the rest are counted


@dataclass(frozen=True)
class Card:
    """One run's entry on the summary card."""

    anchor: str  # the id of the run's section
    name: str
    kind: str
    status: str
    figures: tuple[Line, ...]
    warnings: tuple[str, ...]  # each once, in the order found


def _listed(items: Sequence[str]) -> str:
    head = ", ".join(items[:MOST_NAMED])
    more = len(items) - MOST_NAMED
    return head + (f" and {more} more" if more > 0 else "")


def _p2p(run: dict[str, Any]) -> list[Line]:
    figs = sorted(run.get("key_figures") or [], key=lambda k: k.pair not in PAIR_FIRST)
    out = []
    for k in figs:
        if k.latency_s is not None:
            at = f" ({size_text(k.latency_bytes or 0)})"
            out.append((f"{k.pair} latency", time_text(k.latency_s) + at))
        if k.peak_bandwidth_Bps is not None:
            at = f" at {size_text(k.peak_bandwidth_bytes)}" if k.peak_bandwidth_bytes else ""
            out.append((f"{k.pair} peak bandwidth", rate_text(k.peak_bandwidth_Bps) + at))
        if k.peak_bidirectional_Bps is not None:
            out.append((f"{k.pair} peak bidirectional", rate_text(k.peak_bidirectional_Bps)))
    return out


def _colls(run: dict[str, Any]) -> list[Line]:
    """Per operation, its time at the smallest and the largest size (largest rank count)."""
    rows = run.get("colls") or []
    if not rows:
        return []
    top = max(c.nranks for c, _ in rows)
    by_op: dict[str, list[tuple[int, float]]] = {}
    for c, s in rows:
        if c.nranks == top:
            by_op.setdefault(c.op, []).append((c.bytes, s.time_s))
    out = []
    for op, times in by_op.items():
        times.sort()
        shown = [f"{time_text(t)} at {size_text(b)}" for b, t in (times[0], times[-1])]
        out.append((f"{op} on {top} ranks", ", ".join(dict.fromkeys(shown))))
    return out


def _coll_warnings(run: dict[str, Any]) -> list[str]:
    flagged: dict[str, list[str]] = {}
    for c, s in run.get("colls") or []:
        for w in s.warnings:
            flagged.setdefault(w, []).append(f"{c.op} {size_text(c.bytes)}")
    out = [
        f"{coll_analysis.WARNINGS[w]}: {_listed(points)} (the Collectives table marks them)"
        for w, points in flagged.items()
    ]
    refused = (run.get("coll") or {}).get("refused") or []
    return out + [f"{op} not measured: {why}" for op, why in refused]


def loggp_figures(entry: dict[str, Any]) -> list[Line]:
    """Each pair's LogGP fit from the loggp kind's report entry."""
    out = []
    for f in entry["fits"]:
        parts = [f"L {time_text(f.L_s)}", f"o_s {time_text(f.o_s_s)}"]
        parts += [f"o_r {time_text(f.o_r_s)}", f"g {time_text(f.g_s)}"]
        if f.bandwidth_Bps:
            parts.append(f"1/G {rate_text(f.bandwidth_Bps)}")
        out.append((f"{f.pair} LogGP", ", ".join(parts)))
    return out


def node_figures(entry: dict[str, Any]) -> list[Line]:
    """Linpack P_max per core count from the node kind's report entry."""
    out = []
    for f in entry["summary"].figures:
        eff = "" if f.efficiency is None else f" ({f.efficiency:.0%} of peak)"
        cores = f"{f.cores} core{'s' * (f.cores != 1)}"
        out.append(
            (f"Linpack P_max, {cores}", f"{f.p_max_gflops:.2f} GFLOPS at N = {f.n_max}{eff}")
        )
    return out


def node_warnings(entry: dict[str, Any]) -> list[str]:
    """The node kind's warnings, each with its core count."""
    return [f"{f.cores} cores: {f.warning}" for f in entry["summary"].figures if f.warning]


def matrix_figures(entry: dict[str, Any]) -> list[Line]:
    """The typical link of each matrix and the bisection bandwidth per pair."""
    out = []
    for m in entry["matrices"]:
        shown = time_text(m.median) if m.unit == "s" else rate_text(m.median)
        what = "latency" if m.unit == "s" else "bandwidth"
        out.append((f"{what}, {size_text(m.bytes)}, typical link of {len(m.names)} nodes", shown))
    for b in entry["bisection"]:
        out.append((f"bisection bandwidth per pair, {size_text(b.bytes)}", rate_text(b.mean_Bps)))
    return out


def matrix_warnings(entry: dict[str, Any]) -> list[str]:
    """The nodes worse than the typical link, per matrix."""
    out = []
    for m in entry["matrices"]:
        if m.outliers:
            what = "latency" if m.unit == "s" else "bandwidth"
            nodes = _listed(m.named_nodes)
            out.append(f"{what} at {size_text(m.bytes)}: worse than the typical link on {nodes}")
    return out


def rma_figures(entry: dict[str, Any]) -> list[Line]:
    """Latency and peak bandwidth of each one-sided operation and synchronisation."""
    out = []
    for f in entry["figures"]:
        parts = [] if f.latency_s is None else [f"{time_text(f.latency_s)} latency"]
        if f.peak_bandwidth_Bps is not None:
            parts.append(f"peak {rate_text(f.peak_bandwidth_Bps)}")
        if parts:
            out.append((f"{f.pair} {f.operation} ({f.sync})", ", ".join(parts)))
    return out


def mbw_figures(entry: dict[str, Any]) -> list[Line]:
    """The best aggregate bandwidth of each pair kind, and where it saturates."""
    out = []
    for s in entry["summaries"]:
        if s.steps:
            best = max(s.steps, key=lambda step: step.peak_Bps)
            text = f"{rate_text(best.peak_Bps)} with {best.pairs} pairs"
            if s.saturation_pairs is not None:
                text += f"; saturates at {s.saturation_pairs} pairs"
            out.append((f"{s.pair} aggregate bandwidth", text))
    return out


def program_figures(entry: dict[str, Any]) -> list[Line]:
    """The program run's figures, as its section lists them."""
    return list(entry["rows"])


def card(run: dict[str, Any]) -> Card:
    """The card entry of one run context (``kinds.report_contexts``)."""
    info = run["info"]
    figures = _p2p(run) + _colls(run)
    warnings = [f"{w}: timings include waiting for a core" for w in run["load_warnings"]]
    warnings += [
        f"{w}: timings include waiting for lost segments" for w in run["tcp_loss_warnings"]
    ]
    if run["interrupted_summary"]:
        warnings.append(run["interrupted_summary"])
    warnings += _coll_warnings(run)
    figures += run["card_figures"]
    warnings += run["card_warnings"]
    if info.status != "complete":
        warnings.insert(
            0, f"the run is {info.status}" + (f": {info.message}" if info.message else "")
        )
    return Card(
        anchor=f"run-{info.id}",
        name=run["name"],
        kind=info.kind,
        status=info.status,
        figures=tuple(dict.fromkeys(figures)),
        warnings=tuple(dict.fromkeys(warnings)),
    )
