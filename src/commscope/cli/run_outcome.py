"""Around the engine's run: the progress bar, then the report and the printed figures.

`commscope run`, `run node` and `simulate run` share these.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

from commscope.cli import common, run_fence
from commscope.data.request import RunRequest
from commscope.errors import UsageError
from commscope.measure import mpi as mpi_mod
from commscope.measure import runner


def measure(
    store: Any, run_id: int, request: RunRequest, mpi: mpi_mod.MPIInstall, quiet: bool
) -> runner.Outcome:
    """Run the engine for a stored request, with a progress bar unless ``quiet``."""
    simulation = None
    if request.simulate:
        from commscope.simulate.smpi import SimulatedLaunch

        simulation = SimulatedLaunch(request.simulate)
    if quiet:
        return runner.run(store, run_id, request, mpi, simulation=simulation)
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
    with Progress(*columns, console=common.console(stderr=True), transient=True) as bar:
        task = bar.add_task("points", total=None)

        def show(done: int, total: int | None) -> None:
            bar.update(task, completed=done, total=total)

        return runner.run(store, run_id, request, mpi, progress=show, simulation=simulation)


def show_outcome(
    args: argparse.Namespace,
    store: Any,
    run_id: int,
    request: RunRequest,
    outcome: runner.Outcome,
    report: str | None,
) -> int:
    """Write the report when asked, then print the run's key figures (or JSON).

    After a matrix run, the nodes it names are fenced (``--drain``) or the commands that
    would fence them printed; with ``--drain`` the exit status is the fence's (0/1/2/3).
    """
    info = store.get_run(run_id)
    written = write_report(store, run_id, report)
    fenced = run_fence.after(args, store, run_id, request)
    code = fenced.status if fenced is not None and fenced.drain else 0
    if args.json:
        result: dict[str, Any] = {
            "run": run_id,
            "status": info.status,
            "new_points": outcome.new_points,
            "points": outcome.total_points,
            "store": os.path.abspath(args.store),
            "report": os.fspath(written) if written else None,
        }
        if fenced is not None:
            result["fence"] = fenced.to_json()
        common.print_json(result)
        return code
    # numpy and SciPy: only when figures are printed
    from commscope import kinds
    from commscope.cli import render
    from commscope.data.run_data import read_run

    out = common.console()
    full = bool(getattr(args, "full", False))
    render.summary(out, read_run(store, run_id), kinds.View(), full)
    more = "" if full else f"; every table: commscope show {run_id} --full"
    out.print(f"stored in {args.store} as run {run_id}{more}")
    if written:
        out.print(f"report: {os.fspath(written)}")
    if fenced is not None:
        run_fence.print_fenced(fenced)
    return code


def write_report(store: Any, run_id: int, report: str | None) -> Path | None:
    """Write the run's HTML report to ``report`` (if given); the path written.

    Raises:
        UsageError: the report cannot be written there; the message says the run is stored
            and how to write its report elsewhere.
    """
    if not report:
        return None
    from commscope import kinds
    from commscope.data.run_data import read_run

    try:
        return kinds.write_report([read_run(store, run_id)], report, "--report")
    except UsageError as err:
        raise UsageError(
            f"{err.one_line()}; run {run_id} is stored, write its report with"
            f" 'commscope report {run_id} -o FILE'"
        ) from None
