"""The history verdict: a recent step that persists is CRITICAL, even inside one night's band.

One night against a baseline (:mod:`commscope.check.verdict`) sees a change only past the
baseline's band; a baseline of a few runs has a wide band, and a step of 15 % may stay inside
it for good. The nights stored since see the same step again and again:
:mod:`commscope.check.steps` finds it as a change point. A figure's step (its newest change
point in the part searched) makes it **CRITICAL** when all of these hold:

1. it is **worse** (by the figure's direction);
2. it **began within the last N nights** (``--history-nights``, 5 by default: a step shows to
   the history from its third night, when three runs follow it, so it alarms on its nights
   3, 4 and 5, a weekend's checks);
3. it began **after the baseline's newest run**: a step the baseline's runs hold is its
   normal (a rebase, ``baseline create --from-last K --replace``, makes a step the new
   normal this way);
4. it is **larger than the figure's tolerance** (``--tolerance``, 10 % by default): the
   same practical floor as one night's verdict;
5. **tonight agrees with it**: tonight's value (after a second look, the better of the two
   measurements, as :mod:`commscope.check.confirm` decides) lies on the new level's side of
   the midpoint between the levels before and after (on the log scale). Three nights at a
   new level followed by a night back at the old one are not called a step that persists;
6. tonight's figure was measured and is not excused (load, or a changed environment the
   check still excuses: the load monitor or the environment names the likelier cause).

**What the baseline cannot judge, the history can.** A figure whose detection limit passes
the bound (a baseline of a few spread runs) is "not judged" by one night; its history is
searched all the same, and a step that passes every rule above makes it CRITICAL, judged by
the history (``by_history``: its limit is its tolerance, and its cause says the baseline
alone cannot judge it). The permutation test needs no band from the baseline: it compares
the nights before the step with those after it.

**Not re-alarmed forever.** A step that began more than N nights ago is not alarmed by the
history again; the one-night verdict against the baseline goes on judging the figure (CRITICAL
every night while it is past the baseline's limits) until the baseline is rebased. A step
the history finds but does not alarm on is still shown with the figure, with why not.

**False alarms.** The history's candidates over the check's measured figures (judged by the
baseline or not) are one Benjamini-Hochberg family at 1 %; under an unchanged cluster a
check's history alarms with probability at most 1 % (:mod:`commscope.check.steps`).
Together with one night's Benjamini-Hochberg at ``ALPHA`` (1 %), a check of an unchanged
cluster alarms in at most about 2 % of nights (the union of the two).
"""

from __future__ import annotations

import dataclasses
import math

from commscope.check.steps import HistoryRead, Step
from commscope.check.verdict import FigureVerdict, Verdict, order
from commscope.status import CRITICAL


def applied(verdict: Verdict, read: HistoryRead) -> Verdict:
    """``verdict`` with each figure's step attached, and those that alarm made CRITICAL."""
    figures = []
    steps = {}
    for f in verdict.figures:
        step = read.steps.get(f.key)
        if step is None:
            figures.append(f)
            continue
        why = _why_not(f, step, read)
        step = dataclasses.replace(step, alarm=why is None, why=why or "")
        if step.alarm:
            step = dataclasses.replace(
                step, why=f"began within the last {read.nights} nights and persists"
            )
            cause = f"history: {step.text()}"
            if f.status == CRITICAL and f.cause:
                cause = f"{f.cause}; {cause}"
            elif not f.judged:  # the baseline's runs alone could not judge it
                why = (f.cause or "").removeprefix("not judged: ")
                cause = f"{cause}; the baseline alone cannot judge it: {why}"
            f = dataclasses.replace(f, status=CRITICAL, cause=cause, by_history=not f.judged)
        steps[f.key] = step
        figures.append(dataclasses.replace(f, history=step))
    read = dataclasses.replace(read, steps=steps)
    return dataclasses.replace(verdict, figures=order(figures), history=read)


def _why_not(f: FigureVerdict, step: Step, read: HistoryRead) -> str | None:
    """Why ``step`` does not make ``f`` CRITICAL; None when it does."""
    c = step.change
    if step.worse_by <= 0:
        return "a step for the better"
    if step.nights > read.nights:
        return (
            f"began {step.nights} nights ago, before the last {read.nights}: not alarmed"
            " again; the one-night verdict judges the figure against the baseline"
        )
    if c.run_id <= read.held_run:
        return f"the baseline holds it (its newest run is {read.held_run})"
    if f.measured is None:
        return "tonight's run lacks the figure"
    if f.excused:
        return "tonight is excused (load or a changed environment)"
    if step.worse_by <= f.tolerance:
        return f"within its tolerance of {f.tolerance:.0%}"
    middle = (math.log(c.median_before) + math.log(c.median_after)) / 2
    tonight = math.log(f.measured)
    if (tonight - middle) * (math.log(c.median_after) - middle) <= 0:
        return "tonight is back near the level before it"
    return None
