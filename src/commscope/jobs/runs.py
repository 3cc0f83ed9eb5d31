"""A request becoming a stored run: new, resumed or simulated, measured by MPI or by SMPI.

Every run the engine measures starts here: :func:`start` (a new run, placed where the user
asked), :func:`resume` (what a stored incomplete run is missing, where it ran before) and
:func:`measure_stored` (a request measured again as a new run: `check`, `simulate run`).
The one choice between a real MPI and SimGrid's SMPI is :func:`mpi_for`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from commscope.data.request import RunRequest
from commscope.data.store import Store
from commscope.errors import CommscopeError, UsageError
from commscope.jobs import drain, figures
from commscope.jobs import where as where_mod
from commscope.measure import mpi as mpi_mod
from commscope.measure import runner

Progress = Callable[[int, int | None], None]  # (points done, points expected or None)
Note = Callable[[str], None]  # a line for the user while a run goes on


@dataclass(frozen=True)
class RunJob:
    """A new MPI run as asked.

    Attributes:
        request: the run's request, built from the options (where it runs is filled in here).
        where: where its ranks start.
        label: the run's label.
        root: the collectives' root rank (checked against the ranks found).
        drain: drain in Slurm the nodes a matrix names (else the commands are only shown).
        confirm: measure a matrix's suspects again before naming them.
        report: write the run's HTML report here.
        confirm_ops: only the suspects of these figures' matrices are measured again (None:
            every figure's; undrain's recheck gives ``matrix_bw``, what a drain is judged on).
    """

    request: RunRequest
    where: where_mod.Where
    label: str | None = None
    root: int = 0
    drain: bool = False
    confirm: bool = True
    report: str | None = None
    confirm_ops: tuple[str, ...] | None = None


@dataclass(frozen=True)
class RunOutcome:
    """A measured run: its id and request as stored, what was measured, what followed."""

    run_id: int
    request: RunRequest
    measured: runner.Outcome
    report: Path | None = None
    drained: drain.Drained | None = None


def mpi_for(request: RunRequest) -> tuple[mpi_mod.MPIInstall, Any]:
    """The MPI that runs ``request`` and, for a simulated one, the simulation handed over.

    A request with a ``simulate`` part runs under SimGrid's SMPI (its smpirun and an engine
    built with smpicc); any other under the MPI it names.
    """
    if request.simulate:
        from commscope.simulate import smpi

        return smpi.install(), smpi.SimulatedLaunch(request.simulate)
    return mpi_mod.resolve(request.mpi), None


def prepared(request: RunRequest) -> tuple[RunRequest, mpi_mod.MPIInstall]:
    """A new MPI run's request with its MPI's settings checked and recorded, and its MPI.

    Open MPI parameters and MPICH settings are checked before a run is stored; the MPICH
    settings the ranks inherit from the environment are recorded with the run.
    """
    from commscope.measure import cvars, launch

    mpi = mpi_mod.resolve(request.mpi)
    launch.check_mca(mpi, request.mca)
    cvars.check(mpi, request.cvar)
    if mpi.family == "mpich":
        request = request.replace(cvar={**cvars.from_environment(), **(request.cvar or {})} or None)
    return request, mpi


def measure(
    store: Store,
    run_id: int,
    request: RunRequest,
    mpi: mpi_mod.MPIInstall,
    progress: Progress | None = None,
) -> runner.Outcome:
    """Run the engine for a stored request (under SMPI when the request is simulated)."""
    simulation = None
    if request.simulate:
        from commscope.simulate.smpi import SimulatedLaunch

        simulation = SimulatedLaunch(request.simulate)
    return runner.run(store, run_id, request, mpi, progress=progress, simulation=simulation)


def start(
    store_path: str, job: RunJob, progress: Progress | None = None, note: Note | None = None
) -> RunOutcome:
    """Store a new run of ``job`` where it asks, measure it, then confirm, report and drain.

    With ``job.drain`` Slurm must answer and let this user drain before anything is measured
    (a refusal is UNKNOWN, 3).
    """
    from commscope import kinds  # every kind's module, with numpy and rich: not at start

    if job.drain:
        drain.require_rights()
    request, mpi = prepared(job.request)
    with (
        where_mod.placed(job.where, mpi, request, job.root) as request,
        Store.open(store_path) as store,
    ):
        request = where_mod.one_sided_component(request, mpi)
        run_id = store.create_run(
            request.benchmark, job.label, mpi.tag, mpi.launcher, request.np, request.to_json()
        )
        measured = measure(store, run_id, request, mpi, progress)
        if kinds.benchmark(request.benchmark).drains and job.confirm:
            _confirm(store, run_id, request, mpi, note, job.confirm_ops)
        return _finish(store, run_id, request, measured, job.report, job.drain)


def resume(
    store_path: str,
    ref: str,
    drain_nodes: bool = False,
    report: str | None = None,
    report_asked: bool = False,
    progress: Progress | None = None,
) -> RunOutcome:
    """Measure what stored incomplete run ``ref`` is missing, where it ran before.

    ``report``: where the report goes when asked (``report_asked``) or when the run is the
    default run, which always writes one.
    """
    from commscope import kinds  # every kind's module, with numpy and rich: not at start

    with Store.open(store_path) as store:
        run_id, stored = resumable_request(store, ref)
        request = RunRequest.from_json(stored)
        if drain_nodes:
            if not kinds.benchmark(request.benchmark).drains:
                raise UsageError(
                    f"--drain with --resume {ref}: run {run_id} is a"
                    f" {request.benchmark} run; only the all-pairs matrix names nodes to drain"
                )
            drain.require_rights()
        mpi, _ = mpi_for(request)
        with where_mod.resumed(request, f"--resume {ref}") as live:
            measured = measure(store, run_id, live, mpi, progress)
        if not (report_asked or request.benchmark == kinds.DEFAULT_RUN):
            report = None
        return _finish(store, run_id, request, measured, report, drain_nodes)


def resumable_request(store: Store, ref: str) -> tuple[int, dict[str, Any]]:
    """The run id and stored request of an incomplete run to resume (UsageError if complete).

    Segments its earlier processes left "running" (they were killed before they could close
    them) are closed as "incomplete" first, so a run that completes has every segment closed.
    """
    run_id = store.resolve_run(ref)
    info = store.get_run(run_id)
    if info.status == "complete":
        raise UsageError(f"--resume {ref}: run {run_id} is complete; nothing to do")
    store.close_running_segments(
        run_id,
        "interrupted: its process ended without closing this"
        " segment (closed when the run was resumed)",
    )
    return run_id, info.request


def measure_stored(
    store: Store,
    request: RunRequest,
    label: str | None,
    progress: Progress | None = None,
    keep_partial: bool = False,
    what: str = "measuring the stored request",
    allow_subset: bool | None = None,
) -> tuple[int, str | None]:
    """Store ``request`` as a new run and measure it where it ran before.

    Used for a request that was stored once already (a baseline's, a simulated one); a
    Slurm request is measured on its nodes (:func:`commscope.jobs.where.resumed`: ``what``
    names the command in a refusal, ``allow_subset`` lets it leave unavailable nodes out).
    Returns the run's id and, with ``keep_partial``, why a run that stored some points
    stopped early (None when it did not); without it, or with no point stored, the error
    is raised.
    """
    mpi, _ = mpi_for(request)
    with where_mod.resumed(request, what, allow_subset) as live:
        run_id: int = store.create_run(
            live.benchmark, label, mpi.tag, mpi.launcher, live.np, live.to_json()
        )
        try:
            measure(store, run_id, live, mpi, progress)
        except CommscopeError as err:
            if not (keep_partial and store.get_run(run_id).n_points):
                raise
            return run_id, err.one_line()
        figures.keep(store, run_id)
        return run_id, None


def stored(store: Store, run_id: int, request: RunRequest) -> RunOutcome:
    """The outcome of a run measured before, from what the store holds of it."""
    points = len(store.measured_keys(run_id))
    return RunOutcome(run_id, request, runner.Outcome(run_id, points, points))


def _finish(
    store: Store,
    run_id: int,
    request: RunRequest,
    measured: runner.Outcome,
    report: str | None,
    drain_nodes: bool,
) -> RunOutcome:
    """After a run's measurement: its figures kept, the report when asked, what to drain."""
    figures.keep(store, run_id)
    written = write_report(store, run_id, report)
    drained = drain.after(store, run_id, request, drain_nodes)
    return RunOutcome(run_id, request, measured, written, drained)


def write_report(store: Store, run_id: int, report: str | None) -> Path | None:
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


def _confirm(
    store: Store,
    run_id: int,
    request: RunRequest,
    mpi: mpi_mod.MPIInstall,
    note: Note | None,
    ops: tuple[str, ...] | None = None,
) -> None:
    """Measure a matrix's first-pass suspects again against healthy partners (a segment a round).

    ``ops``: only the suspects of these figures' matrices (None: every figure's).
    """
    from commscope.analysis import confirm as confirming
    from commscope.analysis import matrix as matrix_analysis
    from commscope.data.run_data import read_run

    run = read_run(store, run_id)
    points = [p for p in run.family("paired") if "/" not in p.pair]
    if not points or run.info.status != "complete":
        return
    names = matrix_analysis.rank_nodes(run.info.header, points)
    found = matrix_analysis.matrices(points, names)
    nodes, links = confirming.suspects([m for m in found if ops is None or m.op in ops])
    plan = confirming.plan(names, nodes, links)
    if not plan:
        return
    if note is not None:
        what = ", ".join([*nodes, *(f"{a}->{b}" for a, b in links)])
        note(f"confirming {what} against healthy partners")
    assert request.engine is not None  # a matrix run is an engine run
    for prefix in confirming.PREFIXES:  # one launch a round: a moment of load hits one
        again = request.replace(
            engine=request.engine.replace(matrix_plan=plan, matrix_prefix=prefix)
        )
        runner.run(store, run_id, again, mpi)
