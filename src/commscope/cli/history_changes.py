"""``commscope history --changes``: the change points of the stored runs, as a table or JSON."""

from __future__ import annotations

import argparse
import math
from collections.abc import Mapping
from typing import Any

from commscope.check import tolerance
from commscope.check.changes import MIN_SEGMENT, Change, SeriesChanges
from commscope.check.history import Group
from commscope.cli import common
from commscope.errors import UsageError
from commscope.jobs.history import ChangesJob, ChangesOutcome, changes
from commscope.kinds.figures import FigureSpec


def parse_fdr(text: str) -> float:
    """``--fdr 1%`` or ``0.01``: a share above 0 and below 50 %.

    Raises:
        UsageError: not a percentage or share in that range.
    """
    value = tolerance.parse_share(text, "--fdr")
    if value >= 0.5:
        raise UsageError(
            f"--fdr {text}: a false discovery rate of 50 % or more; give e.g. 1% or 5%"
        )
    return value


def run(args: argparse.Namespace, specs: Mapping[str, FigureSpec]) -> int:
    """Find and print the change points of the selected figures (every one without SELECTOR)."""
    from commscope.check import history

    fdr = parse_fdr(args.fdr)
    selector = None if args.selector is None else history.parse_selector(args.selector, specs)
    outcome = changes(ChangesJob(args.store, selector, args.last, fdr))
    if args.json:
        common.print_json(to_json(outcome, args.selector))
        return 0
    render(outcome, args.selector)
    return 0


def to_json(outcome: ChangesOutcome, selector: str | None) -> dict[str, Any]:
    """The outcome as JSON: per group its runs, environment changes and change points."""
    groups = []
    for group, found in outcome.groups:
        dates = dict(zip(group.runs, group.dates, strict=True))
        groups.append(
            {
                "kind": group.kind,
                "hosts": list(group.hosts),
                "runs": list(group.runs),
                "request": group.request,
                "environment_changes": [
                    {"run": run, "created_unix": dates[run], "changes": list(changed)}
                    for run, changed in group.breaks
                ],
                "figures": len(found),
                "searched": sum(1 for s in found if s.note is None),
                "changes": [c.to_json() for s in found for c in s.changes],
            }
        )
    return {
        "selector": selector,
        "fdr": outcome.fdr,
        "min_segment": MIN_SEGMENT,
        "runs": outcome.runs,
        "summary": summary(outcome),
        "groups": groups,
    }


def summary(outcome: ChangesOutcome) -> str:
    """One line: the change points found, in how many figures, at which rate."""
    found = outcome.series
    changed = sum(1 for s in found if s.changes)
    points = sum(len(s.changes) for s in found)
    searched = sum(1 for s in found if s.note is None)
    groups = len(outcome.groups)
    text = (
        f"{points} change point{'s' * (points != 1)} in {changed} of {searched} figures searched"
        f" ({outcome.runs} runs in {groups} group{'s' * (groups != 1)} of request and hosts);"
        f" false change points held at {outcome.fdr:.0%} across figures (Benjamini-Hochberg)"
    )
    short = len(found) - searched
    if short:
        text += f"; {short} figures have too few runs (a change needs {MIN_SEGMENT} each side)"
    return text


def _change_text(change: Change, unit: str) -> str:
    from commscope.check.verdict import shown

    before, after = shown(change.median_before, unit), shown(change.median_after, unit)
    return f"{change.share:+.1%} ({before} -> {after})"


def _p_text(p: float) -> str:
    return f"{p:.1e}" if p < 0.001 else f"{p:.3f}"


def render(outcome: ChangesOutcome, selector: str | None) -> None:
    """Per group: its environment changes, each run's changes, then a table of them."""
    if not outcome.runs:
        print("no stored runs; measure some with 'commscope run'")
        return
    out = common.console()
    for group, found in outcome.groups:
        _group(out, group, found)
    if not outcome.series:
        print(f"no stored run has {selector}" if selector else "no stored run has figures")
    print(common.terminal_text(summary(outcome)))


def _line(out: Any, text: str) -> None:
    out.print(common.terminal_text(text), markup=False, highlight=False)


def _group(out: Any, group: Group, found: list[SeriesChanges]) -> None:
    """A group's environment changes and change points, by run, largest change first."""
    from rich.table import Table

    points = [(s, c) for s in found for c in s.changes]
    if not points and not group.breaks:
        return
    _line(out, group.title())
    dates = dict(zip(group.runs, group.dates, strict=True))
    for run, changed in group.breaks:
        _line(
            out,
            f"  environment changed at run {run} ({common.date_text(dates[run])}):"
            f" {'; '.join(changed)}; no change point is sought across it",
        )
    if not points:
        return
    runs: dict[int, list[str]] = {}
    for _, c in points:
        runs.setdefault(c.run_id, []).append(c.direction)
    for run, directions in sorted(runs.items()):
        worse = directions.count("worse")
        _line(
            out,
            f"  run {run} ({common.date_text(dates[run])}): {len(directions)} figure"
            f"{'s' * (len(directions) != 1)} changed"
            f" ({worse} worse, {len(directions) - worse} better)",
        )
    table = Table()
    for col in ("run", "date", "figure", "change", "", "p", "q"):
        right = col in ("run", "p", "q")
        table.add_column(col, justify="right" if right else "left", overflow="fold")
    points.sort(key=lambda sc: (sc[1].run_id, -abs(math.log(sc[1].ratio))))
    for s, c in points:
        table.add_row(
            str(c.run_id),
            common.date_text(c.created_unix),
            common.terminal_text(c.key),
            _change_text(c, s.series.unit),
            c.direction,
            _p_text(c.p),
            _p_text(c.q),
        )
    out.print(table)
