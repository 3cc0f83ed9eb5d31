"""The program kinds' runs: the node's Linpack sweep (or hpcc's HPL), TCP, whole programs.

They run no engine: the node sweep solves on this machine (:mod:`commscope.measure.compute`),
TCP runs ``commscope-tcp`` client and server (:mod:`commscope.measure.tcp.session`). Each
request is stored as a new run (or a stored incomplete one resumed) and measured into it.
A whole MPI program (HPL, an application) is a run of its own per grid, repeat or swept
value, stored complete once it ended, with run data and no records; its jobs
(:mod:`.hpl_runs`, :mod:`.simulated_programs`) hand back :class:`ProgramRuns`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from commscope.data.store import Store
from commscope.jobs import figures, runs

if TYPE_CHECKING:
    from commscope.measure.compute.node import NodeOutcome as Sweep

# The stored kinds of whole-program runs; kinds/program.py shows both.
HPL = "hpl"  # `run hpl`, `simulate hpl`
APP = "app"  # `simulate app`


@dataclass(frozen=True)
class ProgramRun:
    """One whole program's run as stored: its id, the swept value it ran with, its data."""

    run_id: int
    sweep: str  # the swept value's label ("" when nothing was swept)
    data: dict[str, Any]  # the run's data as stored under its kind

    def row(self) -> dict[str, Any]:
        """The run as the commands list it: its id, the sweep, then its data."""
        return {"run": self.run_id, "sweep": self.sweep, **self.data}


@dataclass(frozen=True)
class ProgramRuns:
    """The runs a whole-program job stored, in the order it ran them."""

    runs: tuple[ProgramRun, ...]

    @property
    def passed(self) -> bool:
        """False when an HPL solve failed its residual check (an application has none)."""
        return all(r.data.get("passed", True) for r in self.runs)

    def rows(self) -> list[dict[str, Any]]:
        """Every run's :meth:`ProgramRun.row`."""
        return [r.row() for r in self.runs]


def note_failed_check(run: ProgramRun, note: runs.Note | None) -> None:
    """Tell ``note`` when the run's HPL solve failed its residual check (it stays stored)."""
    if note is not None and not run.data["passed"]:
        note(f"run {run.run_id}: HPL's residual check FAILED on {run.data['grid']}")


@dataclass(frozen=True)
class NodeOutcome:
    """A node run: its id, request and status as stored, what the sweep did, the report."""

    run_id: int
    request: dict[str, Any]
    status: str
    measured: Sweep  # the points measured and why a core count's sweep ended
    report: Path | None


def node_run(
    store_path: str,
    kind: str,
    request: dict[str, Any] | None,
    resume: str | None = None,
    label: str | None = None,
    report: str | None = None,
    note: runs.Note | None = None,
) -> NodeOutcome:
    """Store ``request`` as a new node run of ``kind`` (or resume run ``resume``) and measure it.

    ``note`` gets how each core count's peak was derived, then each sweep's progress lines.
    """
    from commscope.measure.compute import hpcc, node

    with Store.open(store_path) as store:
        if request is None:
            assert resume is not None  # a request or a run to resume
            run_id, request = runs.resumable_request(store, resume)
        else:
            run_id = store.create_run(kind, label, None, None, None, request)
        if note is not None:
            for cores in request["cores"]:
                note(request["peak_derivation"][str(cores)])
        measure = hpcc.run if "hpl" in request else node.run
        measured = measure(store, run_id, request, progress=note)
        figures.keep(store, run_id)
        status = store.get_run(run_id).status
        written = runs.write_report(store, run_id, report)
    return NodeOutcome(run_id, request, status, measured, written)


def tcp_runs(
    store_path: str,
    kind: str,
    planned: Sequence[tuple[str, dict[str, Any]]],
    resume: str | None = None,
    progress: runs.Progress | None = None,
) -> list[int]:
    """Resume run ``resume`` and/or store and measure each (label, request); the run ids.

    A TCP request's ``where`` names who runs the other end (a peer, the vcluster).
    """
    from commscope.measure.tcp import session

    done = []
    with Store.open(store_path) as store:  # SIGTERM is an interrupt here (see cli.main)
        if resume:
            run_id, request = runs.resumable_request(store, resume)
            session.run(store, run_id, request, progress=progress)
            figures.keep(store, run_id)
            done.append(run_id)
        for label, request in planned:
            where = request["where"]["kind"]
            run_id = store.create_run(kind, label, None, where, 2, request)
            session.run(store, run_id, request, progress=progress)
            figures.keep(store, run_id)
            done.append(run_id)
    return done
