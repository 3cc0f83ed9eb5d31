"""Baselines made of stored runs (named, or the last good runs of a request) and their ages.

``create`` takes run ids, or with ``from_last`` the newest good runs like a reference run
(:mod:`commscope.check.recent`): by default the newest complete run, or, when a baseline of
that name is replaced, the newest complete run of its request, so that
``baseline create nightly --from-last 5 --replace`` rebases nightly on its own checks' runs.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from commscope.check.baseline import DEFAULT_MAX_DETECTION_LIMIT
from commscope.data.store import RunInfo, Store
from commscope.errors import UsageError

if TYPE_CHECKING:
    from commscope.check.age import BaselineAge
    from commscope.check.baseline import Baseline
    from commscope.check.recent import Picked


@dataclass(frozen=True)
class BaselineJob:
    """A baseline to make.

    Attributes:
        store: the store's path.
        name: the baseline's name.
        runs: run ids or 'latest' (empty with ``from_last``).
        from_last: take the newest this many good runs like ``like`` instead.
        like: the reference run of ``from_last`` (an id or 'latest'); None: the newest
            complete run (of the replaced baseline's request, when ``replace``).
        replace: replace a baseline of that name in the same transaction.
        max_detection_limit: figures whose detection limit passes it are not judged.
    """

    store: str
    name: str
    runs: tuple[str, ...] = ()
    from_last: int | None = None
    like: str | None = None
    replace: bool = False
    max_detection_limit: float = DEFAULT_MAX_DETECTION_LIMIT


@dataclass(frozen=True)
class Made:
    """A baseline made and stored, and how its runs were chosen (None: named by id)."""

    baseline: Baseline
    picked: Picked | None
    replaced: bool


def create(job: BaselineJob) -> Made:
    """Choose the runs, make the baseline and store it (nothing is stored on an error).

    Raises:
        UsageError: a run named twice, a name taken without ``replace``, too few good runs.
    """
    from commscope.check.judging import make_baseline
    from commscope.data.run_data import read_run

    with Store.open(job.store, create=False) as store:  # a failed create leaves no store
        old = store.baseline(job.name) if job.name in dict(store.baseline_names()) else None
        if old is not None and not job.replace:
            raise UsageError(
                f"baseline {job.name!r} exists; choose another name, or rebase it with"
                f" --replace ('commscope baseline create {job.name} --from-last N --replace')"
            )
        picked = None
        if job.from_last is None:
            ids = [store.resolve_run(r) for r in job.runs]
            if len(set(ids)) != len(ids):
                raise UsageError("a run is named twice; give each run once")
        else:
            picked = _pick(store, job, old)
            ids = list(picked.runs)
        made = make_baseline(job.name, [read_run(store, i) for i in ids], job.max_detection_limit)
        store.add_baseline(job.name, made.to_json(), replace=job.replace)
    return Made(made, picked, old is not None)


def _pick(store: Store, job: BaselineJob, old: Mapping[str, Any] | None) -> Picked:
    """The runs ``--from-last`` takes."""
    from commscope.check import recent

    assert job.from_last is not None
    newest_first = store.list_runs()[::-1]
    if job.like is not None:
        reference = store.get_run(store.resolve_run(job.like))
    else:
        reference = _newest_complete(newest_first, old, job.name)

    def ends(run_id: int) -> list[dict[str, Any] | None]:
        return [seg.end for seg in store.segments(run_id)]

    return recent.pick(reference, newest_first, job.from_last, ends)


def _newest_complete(
    newest_first: list[RunInfo], old: Mapping[str, Any] | None, name: str
) -> RunInfo:
    """The newest complete run; of the old baseline's kind and request when there is one."""
    from commscope.check import recent

    complete = (i for i in newest_first if i.status == recent.COMPLETE)
    if old is None:
        found = next(complete, None)
        if found is None:
            raise UsageError("--from-last: no complete run is stored; measure one first")
        return found
    request = recent.comparable(old.get("request") or {})
    kind = old.get("kind")
    found = next(
        (i for i in complete if i.kind == kind and recent.comparable(i.request) == request), None
    )
    if found is None:
        raise UsageError(
            f"--from-last: no complete run of baseline {name}'s request is stored; give"
            " --like RUN to take runs like that one"
        )
    return found


def age(store: Store, body: Mapping[str, Any]) -> BaselineAge:
    """When a stored baseline (its body) was made and its runs were measured."""
    from commscope.check.age import BaselineAge, measured_unix

    times = [measured_unix(store.get_run(int(run))) for run in body.get("runs") or []]
    return BaselineAge.of(float(body["created_unix"]), times)
