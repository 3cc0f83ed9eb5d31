"""A regression check: measure again (or take a stored run), judge, keep, export.

The baseline's request is measured again as a new run (or a stored run is taken), judged
against the baseline; a measuring check measures the figures past their limits once more and
judges them on both runs (:mod:`commscope.check.confirm`); the verdict is kept with the run,
and the exports monitoring reads written.

The verdict's status is :mod:`commscope.status`'s; every error of a check is UNKNOWN, which
the command applies (:func:`commscope.status.unknown_on_error`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from commscope.check.excuse import DEFAULT_EXCUSE_NIGHTS
from commscope.check.window import DEFAULT_HISTORY_NIGHTS
from commscope.data.store import Store
from commscope.errors import CommscopeError, UsageError, interrupt_cause
from commscope.jobs import check_lock
from commscope.limits import MAX_HISTORY_FIGURES

if TYPE_CHECKING:
    from commscope.check.baseline import Baseline
    from commscope.check.verdict import FigureVerdict, Verdict
    from commscope.data.request import RunRequest
    from commscope.data.run_data import RunData

DEFAULT_TIMEOUT_S = 900.0
PROMETHEUS_FIGURES = ("flagged", "all")  # which figures get Prometheus series
LOCK_MARGIN_S = 300.0  # beyond its measurements, a check's judging, keeping and exports


@dataclass(frozen=True)
class CheckJob:
    """One check as asked.

    Attributes:
        store: the store's path.
        baseline: the baseline's name.
        run: a stored run ('latest' or an id) to judge; None measures the baseline's request
            again as a new run.
        tolerances: per class or figure, how much worse it may get unremarked.
        allow_other_hosts: judge a run of other hosts than the baseline's.
        allow_subset: measure (or judge a run of) part of the baseline's nodes when the
            others are unavailable; figures of the nodes left out are not judged.
        timeout_s: the most a new measurement may take.
        label: the new run's label (default "check NAME").
        prometheus: write node_exporter's textfile there.
        junit: write a JUnit XML file there.
        max_detection_limit: figures whose detection limit passes it are not judged; None:
            the bound the baseline was made with.
        again: a measuring check measures the figures past their limits again and judges
            them on both runs (:mod:`commscope.check.confirm`).
        prometheus_figures: "flagged" or "all": the figures that get Prometheus series.
        excuse_nights: nights a changed environment excuses a worse figure, after which
            the check judges it and asks to rebase.
        history: read the measured figures' stored history for recent steps
            (:mod:`commscope.check.history_verdict`).
        history_nights: a step alarms while it began within this many nights.
    """

    store: str
    baseline: str
    run: str | None = None
    tolerances: Mapping[str, float] = field(default_factory=dict)
    allow_other_hosts: bool = False
    allow_subset: bool = False
    timeout_s: float = DEFAULT_TIMEOUT_S
    label: str | None = None
    prometheus: str | None = None
    junit: str | None = None
    max_detection_limit: float | None = None
    again: bool = True
    prometheus_figures: str = "flagged"
    excuse_nights: int = DEFAULT_EXCUSE_NIGHTS
    history: bool = True
    history_nights: int = DEFAULT_HISTORY_NIGHTS


@dataclass(frozen=True)
class CheckOutcome:
    """A check's verdict and what the user should read beside it (a run stopped early...)."""

    verdict: Verdict
    notes: list[str] = field(default_factory=list)


def check_targets(job: CheckJob) -> None:
    """Refuse an export path that cannot be written, before anything is measured."""
    from commscope import safe_write
    from commscope.check import export

    if job.prometheus:
        export.check_prometheus_path(job.prometheus)
    if job.junit:
        safe_write.check_target(job.junit, "--junit")


def run_check(job: CheckJob) -> CheckOutcome:
    """Judge (measuring first when no run is given), keep the verdict, write the exports.

    Whatever ends the check, the exports are written: the verdict, or UNKNOWN with the
    reason when the check failed, was refused or interrupted (the error is raised again).
    """
    try:
        check_targets(job)
        outcome = _judged(job)
    except CommscopeError as err:
        export_unknown(job.baseline, err.one_line(), job.prometheus, job.junit)
        raise
    except KeyboardInterrupt as err:
        export_unknown(job.baseline, f"check {interrupt_cause(err)}", job.prometheus, job.junit)
        raise
    export(job, outcome.verdict)
    return outcome


def export(job: CheckJob, verdict: Verdict) -> None:
    """Write the verdict's exports; one that cannot be written makes the others UNKNOWN.

    Raises:
        CommscopeError: the first export that could not be written.
    """
    from commscope.check import export as files

    def prometheus(path: str) -> None:
        files.write_prometheus(verdict, path, job.prometheus_figures)

    def junit(path: str) -> None:
        files.write_junit(verdict, path)

    failed: list[CommscopeError] = []
    for path, write in ((job.prometheus, prometheus), (job.junit, junit)):
        if path:
            try:
                write(path)
            except CommscopeError as err:
                failed.append(err)
    if failed:
        reason = f"the verdict ({verdict.summary()}) could not be exported: {failed[0].one_line()}"
        export_unknown(job.baseline, reason, job.prometheus, job.junit)
        raise failed[0]


def export_unknown(baseline: str, reason: str, prometheus: str | None, junit: str | None) -> None:
    """Write UNKNOWN with ``reason`` to every export asked for, as far as each can be."""
    from commscope.check import export as files

    _quietly(files.write_prometheus_unknown, baseline, reason, prometheus)
    _quietly(files.write_junit_unknown, baseline, reason, junit)


def _quietly(
    write: Callable[[str, str, str], None], baseline: str, reason: str, path: str | None
) -> None:
    """Write one UNKNOWN export; its own failure is not the error the user must read first."""
    if path is None:
        return
    try:
        write(baseline, reason, path)
    except CommscopeError:
        pass


def _judged(job: CheckJob) -> CheckOutcome:
    """Judge (measuring first when no run is given) and keep the verdict."""
    from commscope.check.baseline import Baseline

    notes: list[str] = []
    with Store.open(job.store, write=job.run is None, create=False) as store:
        baseline = Baseline.from_json(store.baseline(job.baseline))
        if job.run is not None:
            verdict = _verdict(job, store, baseline, store.resolve_run(job.run), notes)
        else:
            _check_subset(job, baseline)
            with check_lock.held(job.store, baseline.name, _bound_s(job, baseline)):
                run_id = _measure(job, store, baseline, notes)
                verdict = _verdict(job, store, baseline, run_id, notes)
                _record(store, verdict)
    if job.run is not None:
        _record_if_writable(job.store, verdict, notes)
    return CheckOutcome(verdict, notes)


def _verdict(
    job: CheckJob, store: Store, baseline: Baseline, run_id: int, notes: list[str]
) -> Verdict:
    """Judge run ``run_id``; a measuring check looks again at what it flags."""
    from commscope.check.judging import check_run, missing_hosts
    from commscope.data.run_data import read_run

    run = read_run(store, run_id)
    verdict = check_run(
        baseline, run, job.tolerances, job.allow_other_hosts, job.max_detection_limit,
        kept_verdicts(store, baseline), job.excuse_nights, job.allow_subset,
    )  # fmt: skip
    missing = missing_hosts(baseline, run) if job.allow_subset else {}
    if missing:
        named = ", ".join(f"{host} ({why})" for host, why in missing.items())
        notes.append(f"check: run {run_id} left out {named}; their figures are not judged")
    if job.run is None and job.again:
        verdict = _again(job, store, baseline, verdict, run, notes)
    if job.history:
        verdict = _with_history(job, store, baseline, verdict)
    return verdict


def _with_history(job: CheckJob, store: Store, baseline: Baseline, verdict: Verdict) -> Verdict:
    """``verdict`` with the history verdict on its measured figures.

    The series is the judged run's: the runs of its request on its hosts, up to it (a
    measuring check measures the baseline's request on the baseline's hosts), without the
    checks' second looks (the same night measured again), its newest ``UPDATE_WINDOW`` runs.
    """
    from commscope.check import history_verdict, steps
    from commscope.check.changes import UPDATE_WINDOW
    from commscope.jobs.history import group_series

    # Every figure tonight measured, judged by the baseline or not: the history needs no band.
    measured = {f.key: f.name for f in verdict.figures if f.measured is not None}
    if len(measured) > MAX_HISTORY_FIGURES:
        why = (
            f"history: not read for {len(measured)} figures (at most {MAX_HISTORY_FIGURES});"
            " 'commscope history --changes' searches them"
        )
        return dataclasses.replace(verdict, history=steps.off(why, job.history_nights))
    seconds = {v.get("again_run") for v in kept_verdicts(store, baseline).values()}
    seconds.add(verdict.again_run)
    infos = [
        i
        for i in store.list_runs()
        if i.kind == baseline.kind and i.id <= verdict.run_id and i.id not in seconds
    ]
    keep = job.run is None  # a measuring check holds the store open to write
    tonight = verdict.run_id
    grouped = group_series(store, infos, lambda g: tonight in g.runs, measured, UPDATE_WINDOW, keep)
    if grouped is None:  # the run is a check's second look: the night is its first run's
        why = f"history: run {tonight} measured a night again; check its first run"
        return dataclasses.replace(verdict, history=steps.off(why, job.history_nights))
    found = [s for s in grouped[1] if s.runs[-1] == tonight]
    held = max(baseline.runs, default=0)
    return history_verdict.applied(verdict, steps.search(found, held, job.history_nights))


def _check_subset(job: CheckJob, baseline: Baseline) -> None:
    """Refuse --allow-subset for a measurement that has no nodes to leave out."""
    if job.allow_subset and not baseline.request.get("slurm"):
        raise UsageError(
            f"--allow-subset: baseline {baseline.name}'s runs did not run in Slurm, so a check"
            " cannot leave unavailable nodes out; drop --allow-subset"
        )


def _bound_s(job: CheckJob, baseline: Baseline) -> float:
    """The most a measuring check may take: its measurements and their allocations' waits."""
    from commscope.measure import slurm

    part = baseline.request.get("slurm")
    wait = float(part.get("wait_s") or slurm.ALLOC_TIMEOUT_S) if part else 0.0
    rounds = 2 if job.again else 1
    return rounds * (job.timeout_s + wait) + LOCK_MARGIN_S


def _again(
    job: CheckJob,
    store: Store,
    baseline: Baseline,
    verdict: Verdict,
    run: RunData,
    notes: list[str],
) -> Verdict:
    """The figures past their limits measured again, and the verdict on both runs."""
    from commscope.check import confirm
    from commscope.check.judging import evidence, missing_hosts, without_hosts
    from commscope.data.run_data import read_run
    from commscope.kinds import run_figures

    looked = confirm.second_look(verdict)
    if not looked:
        return verdict
    again = _measure(job, store, baseline, notes, narrowed(baseline, looked), "again")
    again_run = read_run(store, again)
    found = evidence(
        baseline, again_run, job.allow_other_hosts, narrowed=True, subset=job.allow_subset
    )
    confirmed = confirm.confirmed(
        baseline, verdict, run_figures(run), again, found, job.tolerances, job.max_detection_limit
    )
    return without_hosts(confirmed, missing_hosts(baseline, again_run) if job.allow_subset else {})


def narrowed(baseline: Baseline, figures: Sequence[FigureVerdict]) -> RunRequest:
    """The baseline's request measuring only the message sizes of ``figures``.

    Every size list the request's benchmarks carry is cut to those sizes; a figure without
    a size (none of today's engine kinds has one) leaves the request whole.
    """
    from commscope import kinds
    from commscope.measure import engine_options

    request = _request(baseline)
    sizes = {f.labels.get("bytes") for f in figures}
    if None in sizes:
        return request
    wanted = tuple(sorted({int(str(b)) for b in sizes}))
    options = {
        spec.name
        for name in kinds.engine_benchmarks()
        if kinds.measures(request.benchmark, name)
        for spec in engine_options.for_benchmark(name)
        if spec.type == "sizes"
    }
    return request.replace(engine=request.engine.replace(**dict.fromkeys(options, wanted)))


def _request(baseline: Baseline) -> RunRequest:
    """The request a baseline's runs were measured with."""
    from commscope.data.request import RunRequest

    if "engine" not in baseline.request:
        raise UsageError(
            f"baseline {baseline.name} holds {baseline.kind} runs, which check cannot measure"
            f" again; measure one with 'commscope run {baseline.kind}' and check it:"
            f" 'commscope check --baseline {baseline.name} latest'"
        )
    return RunRequest.from_json(baseline.request)


def _measure(
    job: CheckJob,
    store: Store,
    baseline: Baseline,
    notes: list[str],
    request: RunRequest | None = None,
    again: str = "",
) -> int:
    """Measure the baseline's request (or ``request``) again as a new run; its id.

    A Slurm baseline is measured on its nodes, asked for as its runs were
    (:func:`commscope.jobs.where.resumed`).
    """
    from commscope.jobs import runs, where

    request = request or _request(baseline)
    request = request.replace(timeout_s=min(request.timeout_s, job.timeout_s))
    label = job.label if job.label is not None else f"check {baseline.name}"
    label = f"{label} ({again})" if again else label
    request = where.on_hosts(request, baseline.environment.get("hosts") or [])
    run_id, stopped = runs.measure_stored(
        store,
        request,
        label,
        keep_partial=True,
        what=f"check --baseline {baseline.name}",
        allow_subset=job.allow_subset,
    )
    if stopped:  # judge what was measured: the missing figures are named as such
        notes.append(f"check: run {run_id} stopped early: {stopped}")
    return run_id


def kept_verdicts(store: Store, baseline: Baseline) -> dict[int, dict[str, Any]]:
    """The verdicts kept against ``baseline`` since its newest run, by run id.

    They count the nights a changed environment has been seen (:mod:`commscope.check.excuse`).
    """
    from commscope.check.verdict import RECORD_KIND

    kept = store.run_data_after(RECORD_KIND, max(baseline.runs, default=0))
    mine = {run: data.get(baseline.name) for run, data in kept.items() if isinstance(data, dict)}
    return {run: v for run, v in mine.items() if isinstance(v, dict)}


def _record(store: Store, verdict: Verdict) -> None:
    """Keep the verdict with the run, beside those of other baselines (the report's trend)."""
    from commscope.check.verdict import RECORD_KIND

    kept: dict[str, Any] = store.run_data(verdict.run_id, RECORD_KIND) or {}
    store.set_run_data(verdict.run_id, RECORD_KIND, {**kept, verdict.baseline: verdict.record()})


def _record_if_writable(path: str, verdict: Verdict, notes: list[str]) -> None:
    """Keep the verdict with a stored run; a read-only store is judged, not changed."""
    try:
        with Store.open(path) as store:
            _record(store, verdict)
    except CommscopeError as err:
        notes.append(f"check: verdict not kept with run {verdict.run_id}: {err.one_line()}")
