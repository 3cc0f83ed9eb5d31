"""The point-to-point kind: ping-pong, bw and bibw per pair and size.

Its report part is the core of every run's page (key figures, curves, findings, the per-size
table), built by ``commscope.report.html.run_context``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rich.table import Table
from rich.text import Text

from commscope.analysis import findings, p2p
from commscope.analysis import recv_buffers as rbuf
from commscope.data import mpi_config
from commscope.data.mpi_config import ProtocolLimits
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

MOST_INTERRUPTED = 12  # points named one by one; the rest are counted


@dataclass(frozen=True)
class P2PRun:
    """A run's point-to-point records and the header that says how they were measured."""

    header: dict[str, Any] | None
    points: list[Point]
    limits: ProtocolLimits | None = None  # the eager limits steps may be named by


def us(seconds: float | None) -> str:
    """Microseconds with two decimals, empty when unknown."""
    return "" if seconds is None else f"{seconds * 1e6:.2f}"


def mbs(bps: float | None) -> str:
    """MB/s (10^6 bytes/s) with one decimal, empty when unknown."""
    return "" if bps is None else f"{bps / 1e6:.1f}"


def summarize(run: RunData, view: View) -> P2PRun:
    """Every run has this part: the receive-buffer policy comes from the header alone."""
    limits = mpi_config.naming_limits(run.info.mpi, run.protocol_limits)
    return P2PRun(run.info.header, run.points, limits)


def to_json(run: P2PRun | None) -> dict[str, Any]:
    """Key figures, per-size rows, receive buffers and interrupted samples."""
    header, points = (run.header, run.points) if run else (None, [])
    return {
        "key_figures": [k.to_json() for k in p2p.key_figures(points)],
        "sizes": [r.to_json() for r in p2p.size_rows(points)],
        "recv_buffers": list(rbuf.run_policies(header, points)),
        "recv_buffers_recorded": rbuf.recorded(header),
        "recv_buffer_contrasts": [c.to_json() for c in rbuf.contrasts(points)],
        "interrupted_samples": sum(len(p.interrupted) for p in points),
        "interrupted_points": [x.to_json() for x in p2p.interrupted(points)],
    }


def key_figures(points: list[Point]) -> Table:
    """Latency and peak bandwidth per pair."""
    table = Table(title="key figures (MB/s = 10^6 bytes/s)")
    for col in (
        "pair",
        "ranks",
        "latency (us)",
        "at bytes",
        "peak bw (MB/s)",
        "at bytes",
        "peak bibw (MB/s)",
    ):
        table.add_column(col, justify="left" if col in ("pair", "ranks") else "right")
    for k in p2p.key_figures(points):
        table.add_row(
            k.pair,
            f"{k.ranks[0]}-{k.ranks[1]}",
            us(k.latency_s),
            str(k.latency_bytes or 0),
            mbs(k.peak_bandwidth_Bps),
            str(k.peak_bandwidth_bytes or ""),
            mbs(k.peak_bidirectional_Bps),
        )
    return table


def size_tables(points: list[Point]) -> list[Table]:
    """Latency and bandwidths per size, one table per pair.

    The bw and bibw columns with one receive buffer per message appear when measured.
    """
    rows = p2p.size_rows(points)
    each = [
        name
        for name, field in (
            ("bw each", "bandwidth_each_Bps"),
            ("bibw each", "bidirectional_each_Bps"),
        )
        if any(getattr(r, field) is not None for r in rows)
    ]
    tables = []
    for pair in p2p.pairs_in(points):
        table = Table(title=f"{pair} (latency in us; bandwidth in MB/s = 10^6 bytes/s)")
        for col in ("bytes", "latency", "pingpong bw", "bw", "bibw", *each):
            table.add_column(col, justify="right")
        for r in rows:
            if r.pair == pair:
                extra = {"bw each": r.bandwidth_each_Bps, "bibw each": r.bidirectional_each_Bps}
                table.add_row(
                    str(r.bytes),
                    us(r.latency_s),
                    mbs(r.pingpong_bandwidth_Bps),
                    mbs(r.bandwidth_Bps),
                    mbs(r.bidirectional_bandwidth_Bps),
                    *(mbs(extra[name]) for name in each),
                )
        tables.append(table)
    return tables


def recv_buffers(
    header: dict[str, Any] | None, points: list[Point], contrasts: bool = True
) -> list[Any]:
    """Which receive buffers bw and bibw used; with both, where they differ and why."""
    policies = rbuf.run_policies(header, points)
    if not policies:
        return []
    out: list[Any] = [
        f"receive buffers (bw, bibw): {rbuf.describe(policies, rbuf.recorded(header))}"
    ]
    if contrasts:
        out += [
            Text(c.reason(), style="yellow" if c.material else "") for c in rbuf.contrasts(points)
        ]
    return out


def interrupted(points: list[Point], most: int = MOST_INTERRUPTED) -> list[Any]:
    """How many samples were interrupted, and the points where it was many (each size once)."""
    summary = p2p.interrupted_summary(points)
    if not summary:
        return []
    named = p2p.merged(p2p.interrupted(points))
    out: list[Any] = [summary, *(Text(f"! {x.text()}", style="yellow") for x in named[:most])]
    if len(named) > most:
        out.append(Text(f"! and {len(named) - most} more sizes", style="yellow"))
    return out


def interrupted_brief(points: list[Point]) -> list[Any]:
    """One line on the interrupted samples, one on the sizes most hit (``--full`` names them)."""
    summary = p2p.interrupted_summary(points)
    if not summary:
        return []
    named = p2p.merged(p2p.interrupted(points))
    if not named:
        return [summary]
    by: dict[tuple[str, str], int] = {}
    for x in named:
        by[(x.pair, x.op)] = by.get((x.pair, x.op), 0) + 1
    where = ", ".join(f"{pair} {op} at {n} size{'s' * (n > 1)}" for (pair, op), n in by.items())
    text = f"! a quarter or more of the samples were interrupted for {where} (--full names them)"
    return [summary, Text(text, style="yellow")]


def thresholds(run: P2PRun) -> list[str]:
    """The report's threshold findings, from the same points the report draws."""
    figs = p2p.pair_figures(rbuf.drawn_points(run.points, rbuf.contrasts(run.points)))
    return findings.threshold_findings(figs, run.limits)


def brief(run: P2PRun) -> list[Any]:
    """Key figures, thresholds, the receive buffers and one line on interrupted samples."""
    if not run.points:
        return []
    return [
        key_figures(run.points),
        *thresholds(run),
        *recv_buffers(run.header, run.points),
        *interrupted_brief(run.points),
    ]


def terminal(run: P2PRun) -> list[Any]:
    """Key figures, per-size tables, receive buffers and interrupted samples."""
    if not run.points:
        return []
    return [
        key_figures(run.points),
        *size_tables(run.points),
        *thresholds(run),
        *recv_buffers(run.header, run.points),
        *interrupted(run.points),
    ]


LATENCY = FigureSpec(
    "p2p_latency_seconds", "seconds", LOWER, "latency", "one-way ping-pong time per message"
)
BANDWIDTH = FigureSpec(
    "p2p_bandwidth_bytes_per_second",
    "bytes_per_second",
    HIGHER,
    "bw",
    "streaming bandwidth (op bw, bibw: both ways) per message size",
)


def figures(run: RunData) -> list[Figure]:
    """Latency per pair and size (ping-pong), bandwidth per op, pair and size (bw, bibw).

    Each carries the pair class (``pair``) and the nodes its ranks ran on (``link``,
    "a->b"), so a check names the node pair that got worse.
    """
    if run.info.kind == "tcp":  # a TCP run's points are the tcp kind's
        return []
    nodes = {int(r["rank"]): str(r["node"]) for r in (run.info.header or {}).get("ranks", [])}
    out = []
    for p in run.points:
        a, b = (nodes.get(r, f"rank{r}") for r in p.ranks)
        where = {"pair": p.pair, "link": f"{a}->{b}", "bytes": p.bytes}
        if p.op == "pingpong":
            out.append(figure(LATENCY, point_time_samples(p), **where))
        elif p.bytes > 0:
            out.append(figure(BANDWIDTH, point_rate_samples(p), op=p.op, **where))
    return out


KIND = Kind(
    name="p2p",
    benchmarks=(Benchmark("p2p", in_default_run=True),),
    records=(Point,),
    summarize=summarize,
    to_json=to_json,
    terminal=terminal,
    figure_specs=(LATENCY, BANDWIDTH),
    figures=figures,
    brief=brief,
)
