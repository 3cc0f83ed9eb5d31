"""The collectives kind, timed by the MPIPerf method (Kurnosov 2012, MPIPerf).

Its report part (the table and the time-against-size plot) is built with the run's page by
``commscope.report.html.run_context``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from rich.table import Table
from rich.text import Text

from commscope.analysis import coll as coll_analysis
from commscope.analysis import coll_scaling
from commscope.data.records import Coll
from commscope.data.run_data import RunData
from commscope.kinds.base import Kind, View
from commscope.kinds.benchmarks import Benchmark
from commscope.kinds.figures import LOWER, Figure, FigureSpec, figure
from commscope.kinds.p2p import us
from commscope.units import size_text


@dataclass(frozen=True)
class CollRun:
    """A run's collective summaries at the level and trim they were computed with."""

    rows: list[coll_analysis.CollSummary]
    level: float
    trim: float
    scaling: list[coll_scaling.ScalingRow] = field(default_factory=list)  # --procs
    refused: list[tuple[str, str]] = field(default_factory=list)  # (op, why) the MPI lacks


def refused_of(run: RunData) -> list[tuple[str, str]]:
    """Operations the engine refused (not in this MPI library), from the end records."""
    found = {}
    for end in run.ends:
        for r in (end or {}).get("refused", []):
            found[str(r["op"])] = str(r["reason"])
    return sorted(found.items())


def summarize(run: RunData, view: View) -> CollRun | None:
    """One summary per operation, group and size; None without collectives."""
    refused = refused_of(run)
    if not run.colls and not refused:
        return None
    level = view.confidence or run.info.request.get("confidence", 0.95)
    min_valid = coll_analysis.min_valid_of((run.info.header or {}).get("options"))
    rows = coll_analysis.summaries(run.colls, level, view.trim, min_valid)
    return CollRun(rows, level, view.trim, coll_scaling.scaling(rows), refused)


def table(run: CollRun) -> list[Any]:
    """The MPIPerf report: nt, nc, ns, T, SE, min, max, E and the interval, times in us.

    Points the analysis flags get a ``!`` after T and a line below the table saying why.
    A run over several process counts (--procs) gets a p column and the scaling table.
    """
    refused = [Text(f"{op} not measured: {why}", style="yellow") for op, why in run.refused]
    if not run.rows:
        return refused
    several = len({s.nranks for s in run.rows}) > 1
    out = Table(
        title=f"collectives (times in us; {run.level:.0%} confidence;"
        f" {run.trim:.0%} trimmed at each end)"
    )
    head = ("op", "p", "bytes") if several else ("op", "bytes")
    for col in (*head, "nt", "nc", "ns", "T", "SE", "min", "max", "E", "CI", "stop"):
        out.add_column(col, justify="left" if col in ("op", "stop") else "right")
    out.add_column("overlap %", justify="right")
    for s in run.rows:
        ci = "" if s.nc == 0 else f"{us(s.ci_low_s)}-{us(s.ci_high_s)}"
        out.add_row(
            s.op,
            *((str(s.nranks),) if several else ()),
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
    return [out, *warnings, *scaling_table(run.scaling), *refused]


BRIEF_SIZES = 8  # size columns of the short table; more are thinned, --full has them all


def brief(run: CollRun) -> list[Any]:
    """T (us) per operation and size in one grid, then each warning once with its points.

    With several process counts (--procs) the grid is the largest count's; ``--full`` has
    the MPIPerf table, each flagged point's detail and the scaling table.
    """
    refused = [Text(f"{op} not measured: {why}", style="yellow") for op, why in run.refused]
    if not run.rows:
        return refused
    top = max(s.nranks for s in run.rows)
    rows = [s for s in run.rows if s.nranks == top]
    sizes = sorted({s.bytes for s in rows})
    if len(sizes) > BRIEF_SIZES:  # evenly thinned, first and last kept
        step = (len(sizes) - 1) / (BRIEF_SIZES - 1)
        sizes = sorted({sizes[round(i * step)] for i in range(BRIEF_SIZES)})
    several = len({s.nranks for s in run.rows}) > 1
    on = f" on {top} ranks" if several else ""
    out = Table(
        title=f"collectives{on}, T in us ({run.level:.0%} confidence, {run.trim:.0%} trimmed"
        " each end; ! flagged)"
    )
    out.add_column("op", justify="left")
    for b in sizes:
        out.add_column(size_text(b), justify="right")
    cells: dict[str, dict[int, str]] = {}
    for s in rows:
        cells.setdefault(s.op, {})[s.bytes] = us(s.time_s) + (" !" if s.warnings else "")
    for op, by in cells.items():
        out.add_row(op, *(by.get(b, "") for b in sizes))
    flagged: dict[str, list[str]] = {}
    for s in run.rows:
        for w in s.warnings:
            flagged.setdefault(w, []).append(f"{s.op} {size_text(s.bytes)}")
    warnings = [
        Text(f"! {coll_analysis.WARNINGS[w]}: {_listed(points)}", style="yellow")
        for w, points in flagged.items()
    ]
    return [out, *warnings, *refused]


def _listed(items: list[str], most: int = 4) -> str:
    """The first ``most`` items, then how many more there are."""
    head = ", ".join(items[:most])
    more = len(items) - most
    return head + (f" and {more} more (--full names them)" if more > 0 else "")


def scaling_table(rows: list[coll_scaling.ScalingRow]) -> list[Any]:
    """T (us) of each operation and size against the process count; empty without --procs."""
    if not rows:
        return []
    procs = coll_scaling.process_counts(rows)
    out = Table(title="collectives against process count (T in us; ! flagged point)")
    out.add_column("op", justify="left")
    out.add_column("bytes", justify="right")
    for p in procs:
        out.add_column(f"p={p}", justify="right")
    out.add_column(f"T(p={procs[-1]}) / T(p={procs[0]})", justify="right")
    for r in rows:
        cells = []
        for p in procs:
            shown = us(r.time_at(p)) if p in r.procs else ""
            cells.append(shown + (" !" if p in r.procs and r.flagged[r.procs.index(p)] else ""))
        growth = r.growth()
        out.add_row(r.op, str(r.bytes), *cells, "" if growth != growth else f"{growth:.2f}")
    return [out]


def report(run: CollRun) -> dict[str, Any]:
    """The report entry: the scaling rows, a plot per operation, the refused operations."""
    from markupsafe import Markup

    from commscope.report import coll_scaling_section  # matplotlib: only for a report

    ops = sorted({r.op for r in run.scaling})
    return {
        "scaling": run.scaling,
        "procs": coll_scaling.process_counts(run.scaling),
        # SVG that matplotlib produced from numbers and escaped labels.
        "plots": [
            (op, Markup(coll_scaling_section.scaling_plot([r for r in run.scaling if r.op == op])))
            for op in ops
        ],
        "refused": run.refused,
    }


def to_json(run: CollRun | None) -> dict[str, Any]:
    """``show --json``: the MPIPerf rows, the scaling over p, the refused operations."""
    if run is None:
        return {"collectives": [], "coll_scaling": [], "coll_refused": []}
    return {
        "collectives": [c.to_json() for c in run.rows],
        "coll_scaling": [r.to_json() for r in run.scaling],
        "coll_refused": [{"op": op, "reason": why} for op, why in run.refused],
    }


TIME = FigureSpec(
    "coll_time_seconds",
    "seconds",
    LOWER,
    "time",
    "collective time T (slowest rank, valid launches) per op, group and size",
)


def figures(run: RunData) -> list[Figure]:
    """T per operation, group and size, from every valid launch."""
    return [figure(TIME, c.valid_times_s, op=c.op, group=c.group, bytes=c.bytes) for c in run.colls]


KIND = Kind(
    name="coll",
    benchmarks=(Benchmark("coll", in_default_run=True),),
    records=(Coll,),
    summarize=summarize,
    to_json=to_json,
    terminal=table,
    report=report,
    template="coll_scaling_section.html.j2",
    figure_specs=(TIME,),
    figures=figures,
    brief=brief,
)
