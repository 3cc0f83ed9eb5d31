"""The collectives kind, timed by the MPIPerf method (Kurnosov 2012, MPIPerf).

Its report part (the table and the time-against-size plot) is built with the run's page by
``commscope.report.html.run_context``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rich.table import Table
from rich.text import Text

from commscope.analysis import coll as coll_analysis
from commscope.data.records import Coll
from commscope.data.run_data import RunData
from commscope.kinds.base import Kind, View
from commscope.kinds.p2p import us


@dataclass(frozen=True)
class CollRun:
    """A run's collective summaries at the level and trim they were computed with."""

    rows: list[coll_analysis.CollSummary]
    level: float
    trim: float


def summarize(run: RunData, view: View) -> CollRun | None:
    """One summary per operation, group and size; None without collectives."""
    if not run.colls:
        return None
    level = view.confidence or run.info.request.get("confidence", 0.95)
    min_valid = coll_analysis.min_valid_of((run.info.header or {}).get("options"))
    rows = coll_analysis.summaries(run.colls, level, view.trim, min_valid)
    return CollRun(rows, level, view.trim)


def table(run: CollRun) -> list[Any]:
    """The MPIPerf report: nt, nc, ns, T, SE, min, max, E and the interval, times in us.

    Points the analysis flags get a ``!`` after T and a line below the table saying why.
    """
    out = Table(
        title=f"collectives (times in us; {run.level:.0%} confidence;"
        f" {run.trim:.0%} trimmed at each end)"
    )
    for col in ("op", "bytes", "nt", "nc", "ns", "T", "SE", "min", "max", "E", "CI", "stop"):
        out.add_column(col, justify="left" if col in ("op", "stop") else "right")
    out.add_column("overlap %", justify="right")
    for s in run.rows:
        ci = "" if s.nc == 0 else f"{us(s.ci_low_s)}-{us(s.ci_high_s)}"
        out.add_row(
            s.op,
            str(s.bytes),
            str(s.nt),
            str(s.nc),
            str(s.ns),
            us(s.time_s) + (" !" if s.warnings else ""),
            us(s.se_s),
            us(s.min_s),
            us(s.max_s),
            us(s.error_s),
            ci,
            s.stop,
            "" if s.overlap_pct is None else f"{s.overlap_pct:.0f}",
        )
    warnings = [
        Text(f"! {coll_analysis.warning_text(s)}", style="yellow") for s in run.rows if s.warnings
    ]
    return [out, *warnings]


KIND = Kind(
    name="coll",
    records=(Coll,),
    summarize=summarize,
    to_json=lambda run: {"collectives": [c.to_json() for c in run.rows] if run else []},
    terminal=table,
)
