"""A check's second look: figures past their limits measured again, judged on both runs.

A measuring check that finds figures past their limits measures those figures again at once
(:func:`second_look` says which) and judges each on the better of its two run centers, at
the same scale s~ sqrt(1 + 1/n) and with the same Benjamini-Hochberg step over the check's
figures as one run (:mod:`commscope.check.verdict`): a figure stays CRITICAL only when it
was worse than its limits both times. What passed the first time and not the second is
WARNING, "transient", with both values: someone should know a link faltered, but it is not
a regression. Load or an environment change seen in either run is named and excuses a
change, as in one run. The figures not measured again keep their first verdict.

Why the better run and not the mean of the two log values. Under an unchanged cluster the
better run's statistic passes a threshold only if the first run's does, so its p-value is
valid and a check's false-alarm control holds, whatever the two runs' correlation (runs of
one night share the night's shift). The mean would have more power under normal noise, but
a machine's noise has heavy tails: one run 60 % slower for a moment moves the mean of two by
25 %, past most limits, and with runs spread by 3 % the mean (even asked to repeat past the
tolerance) raised such a spike to CRITICAL in 7 % of simulated nights
(tests/unit/test_check_again.py). The better run cannot be moved by one bad run at all. Its
cost: a step within a few run-to-run spreads of its limit is found less often (the same test
measures both at a 10 % step).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

from commscope.check.baseline import ALPHA, Baseline
from commscope.check.verdict import FigureVerdict, Verdict, judge, order, shown, worse_by
from commscope.kinds.figures import Figure
from commscope.status import CRITICAL, WARNING


def second_look(verdict: Verdict) -> list[FigureVerdict]:
    """The figures past their limits: CRITICAL, or worse than their tolerance with p <= alpha.

    Excused figures (load, a changed environment) are among them: a second run may be clean.
    """
    return [
        f
        for f in verdict.figures
        if f.status == CRITICAL
        or (
            f.status == WARNING
            and f.worse_by is not None
            and f.worse_by > f.tolerance
            and f.p_value is not None
            and f.p_value <= ALPHA
        )
    ]


def better_figure(baseline: Baseline, first: Figure, again: Figure) -> Figure:
    """Of the two runs' figures, the one less worse than the baseline's center."""
    base = baseline.figures[first.key]
    return min(first, again, key=lambda f: worse_by(base, f.center))


def confirmed(
    baseline: Baseline,
    first: Verdict,
    first_figures: Sequence[Figure],
    again_run: int,
    again: tuple[Sequence[Figure], Sequence[str], Sequence[str]],
    tolerances: Mapping[str, float],
    max_detection_limit: float | None = None,
) -> Verdict:
    """``first`` judged again with the figures of its second look measured in ``again_run``.

    Args:
        baseline: what both runs are judged against.
        first: the first run's verdict.
        first_figures: the first run's figures.
        again_run: the second run's id.
        again: the second run's figures, environment changes and load (as
            :func:`commscope.check.judging.evidence` gives them).
        tolerances: as for :func:`commscope.check.verdict.judge`.
        max_detection_limit: as for :func:`commscope.check.verdict.judge`.
    """
    again_figures, again_changes, again_load = again
    looked = {f.key: f for f in second_look(first)}
    second = {f.key: f for f in again_figures if f.samples and f.key in looked}
    combined = [
        better_figure(baseline, f, second[f.key]) if f.key in second else f
        for f in first_figures
        if f.samples
    ]
    changes = _union(first.environment_changes, again_changes)
    load = _union(first.load, [f"run {again_run}: {x}" for x in again_load])
    both = judge(
        baseline, first.run_id, combined, tolerances, first.checked_unix, changes, load,
        max_detection_limit, excuse_environment=first.rebase is None,
    )  # fmt: skip
    by_key = {f.key: f for f in both.figures}
    out = []
    for f in first.figures:
        if f.key not in looked:
            out.append(f)
        elif f.key not in second:
            out.append(_with_cause(f, f"not measured again in run {again_run}"))
        else:
            out.append(_second(f, by_key[f.key], first.run_id, again_run, second[f.key].center))
    return dataclasses.replace(
        first, figures=order(out), environment_changes=changes, load=load, again_run=again_run
    )


def _second(
    first: FigureVerdict, both: FigureVerdict, run: int, again_run: int, again: float
) -> FigureVerdict:
    """The figure's verdict on both runs, their values shown."""
    assert first.measured is not None
    values = (
        f"{shown(first.measured, first.unit)} in run {run},"
        f" {shown(again, first.unit)} in run {again_run}"
    )
    if both.status == CRITICAL:
        cause = f"confirmed: {values}"
    elif both.status == WARNING and both.cause:
        cause = f"{both.cause}; {values}"
    else:
        both = dataclasses.replace(both, status=WARNING)
        cause = f"transient: {values}; not worse than its limits both times"
    return dataclasses.replace(both, cause=cause, first=first.measured, again=again)


def _with_cause(f: FigureVerdict, more: str) -> FigureVerdict:
    return dataclasses.replace(f, cause=f"{f.cause}; {more}" if f.cause else more)


def _union(a: Sequence[str], b: Sequence[str]) -> list[str]:
    return list(dict.fromkeys([*a, *b]))
