"""Around a run's job: the progress bar while it measures, then its figures (or JSON) printed.

`commscope run` and `simulate run` share these.
"""

from __future__ import annotations

import argparse
import os
import shlex
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from commscope import status
from commscope.cli import common
from commscope.jobs import drain, runs


@contextmanager
def progress_bar(quiet: bool) -> Iterator[tuple[runs.Progress | None, runs.Note | None]]:
    """A progress bar on stderr for a job's points and lines beside it; (None, None) if quiet.

    The bar appears with the first point counted, so a job that fails before it measures
    (a bad store, a refused allocation) prints its one line of error and nothing else.
    """
    if quiet:
        yield None, None
        return
    from rich.progress import (
        BarColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    columns = (
        TextColumn("measuring"),
        BarColumn(),
        TextColumn("{task.completed}/{task.total}"),
        TimeElapsedColumn(),
        TextColumn("ETA"),
        TimeRemainingColumn(),
    )
    bar = Progress(*columns, console=common.console(stderr=True), transient=True)
    task = bar.add_task("points", total=None)

    def show(done: int, total: int | None) -> None:
        if not bar.live.is_started:
            bar.start()
        bar.update(task, completed=done, total=total)

    def note(text: str) -> None:  # above the bar while it shows
        bar.console.print(common.terminal_text(text), markup=False)

    try:
        yield show, note
    finally:
        if bar.live.is_started:
            bar.stop()


def show_outcome(args: argparse.Namespace, outcome: runs.RunOutcome) -> int:
    """Print the run's key figures (or JSON), the report written and what it drained.

    With ``--drain`` the exit status is the drain's (OK 0, WARNING 1, CRITICAL 2: a node
    drained, UNKNOWN 3); else 0.
    """
    drained = outcome.drained
    code = drained.status if drained is not None and drained.applied else status.OK
    with common.open_store(args, write=False) as store:
        info = store.get_run(outcome.run_id)
        if args.json:
            result: dict[str, Any] = {
                "run": outcome.run_id,
                "status": info.status,
                "new_points": outcome.measured.new_points,
                "points": outcome.measured.total_points,
                "store": os.path.abspath(args.store),
                "report": os.fspath(outcome.report) if outcome.report else None,
            }
            if drained is not None:
                result["drain"] = drained.to_json()
            common.print_json(result)
            return code
        # numpy and SciPy: only when figures are printed
        from commscope import kinds
        from commscope.cli import render
        from commscope.data.run_data import read_run

        out = common.console()
        full = bool(getattr(args, "full", False))
        render.summary(out, read_run(store, outcome.run_id), kinds.View(), full)
    more = "" if full else f"; every table: commscope show {outcome.run_id} --full"
    out.print(f"stored in {args.store} as run {outcome.run_id}{more}")
    if outcome.report:
        out.print(f"report: {os.fspath(outcome.report)}")
    if drained is not None:
        print_drained(drained)
    return code


def print_drained(drained: drain.Drained) -> None:
    """The drain's lines after a run's figures."""
    out = common.console()

    def say(text: str) -> None:
        out.print(common.terminal_text(text), markup=False, soft_wrap=True)

    for line in drained.links:
        say(f"drain: a slow link, no node drained for it: {line}")
    for line in drained.spared:
        say(f"drain: not drained: {line}")
    for n in drained.nodes:
        command = shlex.join(n["command"]) if n["command"] else ""
        if n["action"] == "printed":
            say(f"to drain {n['node']} (run with --drain): {command}")
        elif n["action"] == "drained":
            say(f"drained {n['node']}: {command}")
        else:
            say(f"{n['node']}: {n['action']}")
    for problem in drained.problems:
        say(f"drain: {problem}")
    if drained.applied and drained.status == status.CRITICAL:
        say("return them to service with 'commscope undrain' once they are fixed")
