"""Baselines made from stored runs, and stored runs judged against a baseline."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Mapping, Sequence
from typing import Any

from commscope.check import environment, excuse
from commscope.check.age import measured_unix
from commscope.check.baseline import DEFAULT_MAX_DETECTION_LIMIT, Baseline, figure_bases
from commscope.check.verdict import (
    MEASURED_WITHOUT,
    NOT_JUDGED,
    NOT_MEASURED,
    Verdict,
    judge,
    left_out,
    order,
)
from commscope.data.run_data import RunData
from commscope.errors import UsageError
from commscope.kinds import run_figures
from commscope.kinds.figures import Figure


def make_baseline(
    name: str,
    runs: Sequence[RunData],
    max_detection_limit: float = DEFAULT_MAX_DETECTION_LIMIT,
) -> Baseline:
    """A baseline named ``name`` from ``runs`` (one or more of the same kind and hosts).

    The baseline's load is its typical run's (the median of the runs' others' shares); runs
    the load monitor flagged beyond it are left out of every figure's spread
    (:func:`commscope.check.environment.loaded_runs`). ``max_detection_limit``: the bound
    past which its checks do not judge a figure, unless a check gives its own.

    Raises:
        UsageError: the runs differ in kind or hosts, or hold no figure a check can judge.
    """
    first = runs[0]
    env = environment.of_run(first)
    for other in runs[1:]:
        if other.info.kind != first.info.kind:
            raise UsageError(
                f"run {other.info.id} is a {other.info.kind} run and run {first.info.id} a"
                f" {first.info.kind} run; a baseline takes runs of one kind"
            )
        if environment.hosts_differ(env, environment.of_run(other)):
            raise UsageError(
                f"run {other.info.id} ran on other hosts than run {first.info.id}; a baseline"
                " takes runs of the same hosts"
            )
    ids = [run.info.id for run in runs]
    shares = {run.info.id: environment.others_share(run.ends) for run in runs}
    env["others_share"] = environment.typical_share(shares)
    loaded = environment.loaded_runs(shares)
    figures = figure_bases([run_figures(run) for run in runs], ids, loaded)
    if not figures:
        named = ", ".join(map(str, ids))
        raise UsageError(
            f"run {named} holds no figure a check can judge (no complete measurement);"
            " choose a run that 'commscope show' shows figures for"
        )
    return Baseline(
        name=name,
        created_unix=time.time(),
        runs=tuple(ids),
        kind=first.info.kind,
        request=dict(first.info.request),
        environment=env,
        figures=figures,
        max_detection_limit=max_detection_limit,
        run_loads=shares,
    )


def check_run(
    baseline: Baseline,
    run: RunData,
    tolerances: Mapping[str, float],
    allow_other_hosts: bool = False,
    max_detection_limit: float | None = None,
    kept: Mapping[int, Mapping[str, Any]] | None = None,
    excuse_nights: int = excuse.DEFAULT_EXCUSE_NIGHTS,
    subset: bool = False,
) -> Verdict:
    """Judge stored ``run`` against ``baseline``.

    ``max_detection_limit``: figures whose detection limit passes it are not judged
    (default: the bound the baseline was made with). ``kept``: the verdicts kept against
    the baseline since its newest run, by run id (:meth:`Verdict.record`); with them a
    changed environment excuses a worse figure for ``excuse_nights`` nights, after which
    the figures are judged and the verdict asks to rebase (:mod:`commscope.check.excuse`).
    Without them a change is seen for the first time. ``subset``: a run of part of the
    baseline's hosts is judged on them; the figures of the others are not judged
    (:func:`without_hosts`).

    Raises:
        UsageError: the run is of another kind than the baseline, or ran on other hosts
            (unless ``allow_other_hosts``: its figures are then reported as measured
            elsewhere, not as regressions).
    """
    figures, changes, load = evidence(baseline, run, allow_other_hosts, subset=subset)
    when = measured_unix(run.info)
    age = excuse.age(changes, run.info.id, when, kept or {}, excuse_nights)
    verdict = judge(
        baseline, run.info.id, figures, tolerances, time.time(), changes, load,
        max_detection_limit, excuse_environment=age is None or not age.expired,
    )  # fmt: skip
    rebase = None
    if age is not None and age.expired:
        rebase = age.rebase_command(baseline.name, len(baseline.runs))
    verdict = without_hosts(verdict, missing_hosts(baseline, run) if subset else {})
    return dataclasses.replace(verdict, measured_unix=when, environment_age=age, rebase=rebase)


def evidence(
    baseline: Baseline,
    run: RunData,
    allow_other_hosts: bool = False,
    narrowed: bool = False,
    subset: bool = False,
) -> tuple[list[Figure], list[str], list[str]]:
    """A run's figures, what changed in its environment, and the load named on its hosts.

    ``narrowed``: the run measured part of the baseline's request (a check's second look);
    its engine options differ by design and are not named as a change. ``subset``: a run
    of part of the baseline's hosts is judged on them (:func:`without_hosts` names the rest);
    its hosts and ranks differ by design and are not named as a change.

    Raises:
        UsageError: as :func:`check_run`.
    """
    info = run.info
    if info.kind != baseline.kind:
        raise UsageError(
            f"run {info.id} is a {info.kind} run and baseline {baseline.name} holds"
            f" {baseline.kind} runs; check a {baseline.kind} run, or make a baseline of"
            f" {info.kind} runs"
        )
    env = environment.of_run(run)
    if narrowed:
        env["engine_options"] = baseline.environment.get("engine_options")
    if subset and set(env["hosts"]) < set(baseline.environment.get("hosts") or []):
        env["hosts"], env["nranks"] = baseline.environment["hosts"], None
    if environment.hosts_differ(baseline.environment, env) and not allow_other_hosts:
        raise UsageError(
            f"run {info.id} ran on {','.join(env['hosts'])}, baseline {baseline.name} on"
            f" {','.join(baseline.environment['hosts'])}; check a run of those hosts, or pass"
            " --allow-other-hosts to compare anyway"
        )
    return (
        run_figures(run),
        environment.changes(baseline.environment, env),
        environment.extra_load(run.ends, baseline.environment.get("others_share")),
    )


def missing_hosts(baseline: Baseline, run: RunData) -> dict[str, str]:
    """The baseline's hosts ``run`` did not run on, and why.

    The reason is the one the run recorded when it left the node out (its Slurm state:
    ``left_out_nodes`` in the request's ``slurm`` part), else that the run does not hold it.
    """
    ran = set(environment.of_run(run)["hosts"])
    recorded = (run.info.request.get("slurm") or {}).get("left_out_nodes") or {}
    out = {}
    for host in baseline.environment.get("hosts") or []:
        if host not in ran:
            why = recorded.get(host) or recorded.get(host.split(".", 1)[0])
            out[host] = str(why) if why else f"not in run {run.info.id}"
    return out


def without_hosts(verdict: Verdict, missing: Mapping[str, str]) -> Verdict:
    """``verdict`` with the figures that depend on the ``missing`` hosts not judged.

    A figure whose ``link`` names a missing host was not measured; one that names no link
    (a collective, the bisection) was measured on fewer hosts than the baseline's and is
    not comparable. Both are named with the host and why it was left out, never flagged.
    """
    if not missing:
        return verdict
    figures = []
    for f in verdict.figures:
        link = f.labels.get("link")
        hosts = link.split("->") if link else []
        gone = [h for h in hosts if h in missing]
        if gone:
            cause = f"{NOT_MEASURED} {gone[0]} was left out ({missing[gone[0]]})"
            f = dataclasses.replace(f, status=NOT_JUDGED, cause=cause, measured=None, worse_by=None)
        elif not link:
            cause = f"{MEASURED_WITHOUT} {', '.join(missing)} (left out), so not comparable"
            f = dataclasses.replace(f, status=NOT_JUDGED, cause=cause, excused=False)
        figures.append(f)
    return dataclasses.replace(verdict, figures=order(figures))


def figures_left_out(verdict: Verdict) -> int:
    """How many figures are not judged because a host was left out (:func:`without_hosts`)."""
    return sum(1 for f in verdict.figures if left_out(f))
