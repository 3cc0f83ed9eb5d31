"""The contention kind: t(m, cf) per channel, tables and heat maps.

The method of Peryshkova and Kurnosov 2018 (contention-aware placement): degradation
t(m, cf) / t(m, 1) per channel level, as tables, their JSON and the report's heat maps.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rich.table import Table
from rich.text import Text

from commscope.analysis import contention as contention_analysis
from commscope.data.records import Contention
from commscope.data.run_data import RunData
from commscope.kinds.base import Kind, View
from commscope.kinds.p2p import us


@dataclass(frozen=True)
class ContentionRun:
    """Degradation tables per channel level, and the messages in flight the run posted."""

    tables: dict[str, contention_analysis.LevelTable]
    in_flight: list[int]


def summarize(run: RunData, view: View) -> ContentionRun | None:
    """The run's degradation tables; None without contention records."""
    if not run.contentions:
        return None
    flights = sorted({p.in_flight for p in run.contentions})
    return ContentionRun(contention_analysis.tables(run.contentions), flights)


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
    return out


def report(run: ContentionRun) -> list[dict[str, Any]]:
    """The report entry: one heat map and verdict per level."""
    from commscope.report import contention_section  # matplotlib: only for a report

    return [contention_section.level_context(t) for t in run.tables.values()]


KIND = Kind(
    name="contention",
    records=(Contention,),
    summarize=summarize,
    to_json=lambda run: {"contention": [t.to_json() for t in run.tables.values()] if run else []},
    terminal=tables,
    report=report,
    template="contention_section.html.j2",
)
