"""The contention kind: t(m, cf) per channel, tables and heat maps; waits behind a queue.

The method of Peryshkova and Kurnosov 2018 (contention-aware placement): degradation
t(m, cf) / t(m, 1) per channel level, as tables, their JSON and the report's heat maps. The
level "queue" adds how long a small message waits behind its node's outgoing stream.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from rich.table import Table
from rich.text import Text

from commscope.analysis import after_idle as after_idle_analysis
from commscope.analysis import contention as contention_analysis
from commscope.analysis import queue as queue_analysis
from commscope.data.records import Contention, Queue
from commscope.data.run_data import RunData
from commscope.kinds.base import Kind, View
from commscope.kinds.benchmarks import Benchmark
from commscope.kinds.figures import LOWER, Figure, FigureSpec, figure
from commscope.kinds.p2p import us


@dataclass(frozen=True)
class ContentionRun:
    """Degradation tables per level, the messages in flight posted, and the queue's waits."""

    tables: dict[str, contention_analysis.LevelTable]
    in_flight: list[int]
    queue: list[queue_analysis.QueueWait]
    after_idle: list[after_idle_analysis.AfterIdle]


def summarize(run: RunData, view: View) -> ContentionRun | None:
    """The run's degradation tables and queue waits; None without records of either."""
    if not run.contentions and not run.queues:
        return None
    flights = sorted({p.in_flight for p in run.contentions})
    tables = contention_analysis.tables(run.contentions) if run.contentions else {}
    after = after_idle_analysis.cells(run.contentions)
    return ContentionRun(tables, flights, queue_analysis.waits(run.queues), after)


def tables(run: ContentionRun) -> list[Any]:
    """Degradation tables t(m,cf)/t(m,1); cells above cf in bold red."""
    # The paper's loop has one message in flight; say so when the run posted more.
    flights = "/".join(map(str, run.in_flight))
    posted = "" if run.in_flight == [1] else f"; {flights} messages in flight"
    out = []
    for level, t in run.tables.items():
        name = contention_analysis.LEVEL_NAMES[level]
        table = Table(
            title=f"{name}: degradation t(m,cf)/t(m,1) (red: above cf; t(m,1) in us{posted})"
        )
        table.add_column("bytes", justify="right")
        table.add_column("t(m,1) us", justify="right")
        for cf in t.cfs:
            table.add_column(f"cf={cf}", justify="right")
        table.add_column("max procs", justify="right")
        deg, above, best = t.degradation, t.above_cf, t.max_processes()
        for i, m in enumerate(t.sizes):
            cells: list[str | Text] = []
            for j in range(t.cfs.size):
                v = deg[i, j]
                text = "" if v != v else f"{v:.2f}"
                cells.append(Text(text, style="bold red") if above[i, j] else text)
            base = t.t_s[i, 0] if t.cfs[0] == 1 else float("nan")
            table.add_row(str(int(m)), us(base) if base == base else "", *cells, str(best[int(m)]))
        out.append(table)
    if run.after_idle:
        out.append(after_idle_table(run.after_idle))
    if run.queue:
        out.append(queue_table(run.queue))
    return out


def after_idle_table(cells: list[after_idle_analysis.AfterIdle]) -> Table:
    """Per cell: the warm exchange, the first one after idle, and what the idle cost."""
    idle = "/".join(sorted({f"{c.idle_s:g}" for c in cells}))
    table = Table(
        title=f"after {idle} s idle: the first exchange against the warm ones (median ms;"
        " a cost only where every exchange after idle was slower than every warm one)"
    )
    for name in ("channel", "cf", "bytes", "warm ms", "after idle ms", "cost ms"):
        table.add_column(name, justify="left" if name == "channel" else "right")
    for c in cells:
        warm, after = c.warm_median_s, c.after_median_s
        cost = f"{c.cost_s * 1e3:+.2f}" if c.every_one_slower else "none shown"
        name = contention_analysis.LEVEL_NAMES[c.level]
        table.add_row(
            name, str(c.cf), str(c.bytes), f"{warm * 1e3:.2f}", f"{after * 1e3:.2f}", cost
        )
    return table


def queue_table(waits: list[queue_analysis.QueueWait]) -> Table:
    """Per stream size: the idle round trip, the waits under load and the queue they imply."""
    table = Table(
        title="queue: round trips of a small message whose answer leaves a node while the node"
        " streams m-byte messages out (wait: less the idle round trip)"
    )
    table.add_column("answerer")
    for name in ("bytes", "idle us", "wait p10/p50/p90 ms", "waited", "stream MB/s"):
        table.add_column(name, justify="right")
    table.add_column("queued ahead p50/p90 KiB", justify="right")
    for w in waits:
        ms = "/".join(f"{w.quantile(q) * 1e3:.2f}" for q in queue_analysis.QUANTILES)
        kib = "/".join(f"{w.queued_bytes(q) / 1024:.0f}" for q in (0.5, 0.9))
        share = f"{w.waiting_share:.0%}"
        rate = f"{w.stream_Bps / 1e6:.2f}"
        who = queue_analysis.ANSWERER[w.kind]
        table.add_row(who, str(w.bytes), us(w.idle_s), ms, share, rate, kib)
    return table


def report(run: ContentionRun) -> dict[str, Any]:
    """The report entry: one heat map and verdict per level, and the queue waits."""
    from commscope.report import contention_section  # matplotlib: only for a report

    return {
        "levels": [contention_section.level_context(t) for t in run.tables.values()],
        "queue": [w.to_json() for w in run.queue],
        "queue_plot": contention_section.queue_plot(run.queue),
        "after_idle": [
            {**c.to_json(), "name": contention_analysis.LEVEL_NAMES[c.level]}
            for c in run.after_idle
        ],
    }


DEGRADATION = FigureSpec(
    "contention_degradation_ratio",
    "ratio",
    LOWER,
    "ratio",
    "t(m, cf) / t(m, 1): how much cf pairs sharing a level slow each other",
)


def figures(run: RunData) -> list[Figure]:
    """The degradation per level, size and cf > 1: each repetition's slowest process over t(m,1)."""
    alone = {
        (c.level, c.bytes): float(np.median([max(rep) for rep in c.samples_s]))
        for c in run.contentions
        if c.cf == 1 and c.samples_s
    }
    out = []
    for c in run.contentions:
        base = alone.get((c.level, c.bytes))
        if c.cf > 1 and base:
            ratios = [max(rep) / base for rep in c.samples_s if rep]
            out.append(figure(DEGRADATION, ratios, level=c.level, bytes=c.bytes, cf=c.cf))
    return out


KIND = Kind(
    name="contention",
    benchmarks=(Benchmark("contention"),),
    records=(Contention, Queue),
    summarize=summarize,
    to_json=lambda run: {
        "contention": [t.to_json() for t in run.tables.values()] if run else [],
        "contention_queue": [w.to_json() for w in run.queue] if run else [],
        "contention_after_idle": [c.to_json() for c in run.after_idle] if run else [],
    },
    terminal=tables,
    report=report,
    template="contention_section.html.j2",
    figure_specs=(DEGRADATION,),
    figures=figures,
)
