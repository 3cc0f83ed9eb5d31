"""A regression check: measure again (or take a stored run), judge, keep, export.

The baseline's request is measured again as a new run (or a stored run is taken), judged
against the baseline, the verdict kept with the run, and the exports monitoring reads written.

The verdict's status is :mod:`commscope.status`'s; every error of a check is UNKNOWN, which
the command applies (:func:`commscope.status.unknown_on_error`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from commscope.check.excuse import DEFAULT_EXCUSE_NIGHTS
from commscope.data.store import Store
from commscope.errors import CommscopeError, UsageError

if TYPE_CHECKING:
    from commscope.check.baseline import Baseline
    from commscope.check.verdict import Verdict

DEFAULT_TIMEOUT_S = 900.0


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
        timeout_s: the most a new measurement may take.
        label: the new run's label (default "check NAME").
        prometheus: write node_exporter's textfile there.
        junit: write a JUnit XML file there.
        max_detection_limit: figures whose detection limit passes it are not judged; None:
            the bound the baseline was made with.
        excuse_nights: nights a changed environment excuses a worse figure, after which
            the check judges it and asks to rebase.
    """

    store: str
    baseline: str
    run: str | None = None
    tolerances: Mapping[str, float] = field(default_factory=dict)
    allow_other_hosts: bool = False
    timeout_s: float = DEFAULT_TIMEOUT_S
    label: str | None = None
    prometheus: str | None = None
    junit: str | None = None
    max_detection_limit: float | None = None
    excuse_nights: int = DEFAULT_EXCUSE_NIGHTS


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
    """Judge (measuring first when no run is given), keep the verdict, write the exports."""
    from commscope.check import export
    from commscope.check.baseline import Baseline
    from commscope.check.judging import check_run
    from commscope.data.run_data import read_run

    check_targets(job)
    notes: list[str] = []
    with Store.open(job.store, write=job.run is None) as store:
        baseline = Baseline.from_json(store.baseline(job.baseline))
        if job.run is None:
            run_id = _measure(job, store, baseline, notes)
        else:
            run_id = store.resolve_run(job.run)
        verdict = check_run(
            baseline,
            read_run(store, run_id),
            dict(job.tolerances),
            job.allow_other_hosts,
            job.max_detection_limit,
            kept_verdicts(store, baseline),
            job.excuse_nights,
        )
        if job.run is None:
            _record(store, verdict)
    if job.run is not None:
        _record_if_writable(job.store, verdict, notes)
    if job.prometheus:
        export.write_prometheus(verdict, job.prometheus)
    if job.junit:
        export.write_junit(verdict, job.junit)
    return CheckOutcome(verdict, notes)


def _measure(job: CheckJob, store: Store, baseline: Baseline, notes: list[str]) -> int:
    """Measure the baseline's request again as a new run; its id."""
    from commscope.data.request import RunRequest
    from commscope.jobs import runs

    if "engine" not in baseline.request:
        raise UsageError(
            f"baseline {baseline.name} holds {baseline.kind} runs, which check cannot measure"
            f" again; measure one with 'commscope run {baseline.kind}' and check it:"
            f" 'commscope check --baseline {baseline.name} latest'"
        )
    request = RunRequest.from_json(baseline.request)
    request = request.replace(timeout_s=min(request.timeout_s, job.timeout_s))
    label = job.label if job.label is not None else f"check {baseline.name}"
    outside = (
        f"check --baseline {baseline.name}: its runs ran inside a Slurm allocation; run the"
        f" check inside one (salloc ... commscope check --baseline {baseline.name})"
    )
    run_id, stopped = runs.measure_stored(store, request, label, outside=outside, keep_partial=True)
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
