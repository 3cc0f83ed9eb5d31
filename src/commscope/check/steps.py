"""The recent steps in a check's figures: change points over the nights before tonight's run.

A check judges one night against a baseline (:mod:`commscope.check.verdict`); this module
reads the nights in between. Its input is each measured figure's **series** (judged by the
baseline or not: the search needs no band from it): the runs of the judged run's request on
its hosts (:func:`commscope.check.history.groups_of`; a measuring check measures the
baseline's request on the baseline's hosts), oldest first, ending at the judged run. A
check's second look (its re-measure) is the same night measured again, not a night, and is
left out. A **night** is one run of the series: one measuring check a night makes one.

**What is read.** Each series' newest part: from the last environment change (a new MPI,
kernel, ...: no step is sought across it, as ``history --changes`` does), at most the newest
``window`` (:data:`commscope.check.changes.UPDATE_WINDOW`, 30) runs, which bounds the cost
by the figures, not the history's length. A split needs ``min_segment`` (3) runs on each
side, and a permutation test of L runs cannot give a step of ``min_segment`` runs a p-value
below 2 / C(L, ``min_segment``) (the step's runs the most extreme, at either end): a part too
short for that bound to reach ``fdr`` (12 runs at 1 %: 2 / C(12, 3) = 0.009) cannot show a
new step even in a figure searched alone. The check then says "history: N nights, needs 12"
once in its summary and judges the night alone (:func:`nights_needed`).

**The search** is :func:`commscope.check.changes.find` over the parts of every judged figure
at once: binary segmentation of the winsorized log values, each candidate split tested by a
permutation test of the largest two-sample t statistic (exact when the runs of a part are
exchangeable, which is the null: no change, independent runs, any noise distribution), the
candidates of all the figures held together by Benjamini-Hochberg at ``fdr`` (1 %), a kept
split searched again in its halves. Under an unchanged cluster (every figure's part
exchangeable), Benjamini-Hochberg keeps any candidate with probability at most ``fdr``
(under the complete null the false discovery rate is the chance of any discovery), so the
history adds at most ``fdr`` to a check's false-alarm rate, per night: each night is a new
look at a history one run longer, and the rate holds per look, not over the nights.

**One night is not a step.** Every change point has at least ``min_segment`` runs after it:
one bad night, tonight or before, cannot be one. Winsorized to 3 robust standard deviations,
a far-off night still moves the mean of a side of three runs a little, so a small step among
the last runs is found a little more often (1.4 % and 1.7 % of simulated series with a night
three times slower, 1.2 % with none, at q = 1 %: ``bench/check_history.py``); but a step is
sized by the median of the runs after it, which one night cannot move, so such a step stays
within the noise and below a tolerance (none of 3,000 series past 10 % at a 3 % spread). Two
bad nights at the end of a part can show as a change of the last three runs; tonight's run
then decides (:mod:`commscope.check.history_verdict` asks it to agree with the step).

Each figure's newest change point in the part is its :class:`Step`, with how many nights it
is old (3: it began with the run two nights before tonight's). Whether it makes the figure
CRITICAL is :mod:`commscope.check.history_verdict`'s rule.

**Assumptions** (those of :mod:`commscope.check.changes`): within a part, runs with no change
are independent and exchangeable; a slow drift or a weekly cycle breaks that and can show as
a step. The false discovery rate holds over the figures searched together: the check's
measured figures, not every figure of the store.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from commscope.check.age import day
from commscope.check.changes import DEFAULT_FDR, MIN_SEGMENT, UPDATE_WINDOW, Change, Series, find
from commscope.check.window import DEFAULT_HISTORY_NIGHTS
from commscope.kinds.figures import LOWER


@dataclass(frozen=True)
class Step:
    """A figure's newest change point in its recent history.

    Attributes:
        change: the change point (its first run, date, size, p and q values).
        nights: how many runs of the series lie at its new level, tonight's included (3: it
            began two nights before tonight).
        better: the figure's direction (``lower`` or ``higher``).
        alarm: whether it makes the figure CRITICAL (set by the history verdict).
        why: why it does, or does not.
    """

    change: Change
    nights: int
    better: str
    alarm: bool = False
    why: str = ""

    @property
    def worse_by(self) -> float:
        """The step as a share in the worse direction (0.2: 20 % worse; negative: better)."""
        return self.change.ratio - 1 if self.better == LOWER else 1 - self.change.ratio

    def text(self) -> str:
        """'step 20.0% worse from run 41 (2026-12-03), 3 nights, p 0.0012 (q 0.004)'."""
        c = self.change
        size = f"{abs(self.worse_by):.1%} {'worse' if self.worse_by > 0 else 'better'}"
        return (
            f"step {size} from run {c.run_id} ({day(c.created_unix)}), {self.nights} nights,"
            f" p {c.p:.2g} (q {c.q:.2g})"
        )

    def to_json(self) -> dict[str, Any]:
        """The ``history`` part of a figure in ``check --json``."""
        c = self.change
        return {
            "change_run": c.run_id,
            "change_created_unix": c.created_unix,
            "nights": self.nights,
            "ratio": c.ratio,
            "worse_by": self.worse_by,
            "direction": c.direction,
            "median_before": c.median_before,
            "median_after": c.median_after,
            "runs_before": c.before,
            "runs_after": c.after,
            "p_value": c.p,
            "q_value": c.q,
            "t": c.t if math.isfinite(c.t) else None,
            "alarm": self.alarm,
            "why": self.why,
        }


@dataclass(frozen=True)
class HistoryRead:
    """What a check read of its figures' history, and the steps it found.

    Attributes:
        runs: the runs of the part searched (the longest series' newest part), oldest first.
        needed: the runs a search needs (:func:`nights_needed`).
        nights: the window: a step alarms only when it began within this many nights.
        fdr: the false discovery rate held across the figures.
        held_run: the baseline's newest run; a step from it or before is the baseline's.
        steps: figure key -> its newest step in the part searched.
        note: why the history was not searched (too short, switched off...), or None.
        since: the environment change the part starts at: (run, what changed), or None.
    """

    runs: tuple[int, ...]
    needed: int
    nights: int
    fdr: float
    held_run: int
    steps: dict[str, Step] = field(default_factory=dict)
    note: str | None = None
    since: tuple[int, tuple[str, ...]] | None = None

    @property
    def searched(self) -> bool:
        """Whether the history was searched."""
        return self.note is None

    def alarms(self) -> list[str]:
        """The keys whose step made them CRITICAL."""
        return [k for k, s in self.steps.items() if s.alarm]

    def to_json(self) -> dict[str, Any]:
        """The ``history`` part of ``check --json``."""
        return {
            "searched": self.searched,
            "note": self.note,
            "runs": list(self.runs),
            "nights_read": len(self.runs),
            "nights_needed": self.needed,
            "window_nights": self.nights,
            "fdr": self.fdr,
            "baseline_newest_run": self.held_run,
            "environment_change": None
            if self.since is None
            else {"run": self.since[0], "changes": list(self.since[1])},
            "steps": len(self.steps),
            "alarms": self.alarms(),
        }


def nights_needed(fdr: float = DEFAULT_FDR, min_segment: int = MIN_SEGMENT) -> int:
    """The fewest runs in which a step of ``min_segment`` runs can pass at ``fdr``.

    The smallest L >= 2 ``min_segment`` with 2 / C(L, ``min_segment``) <= ``fdr``: the
    smallest p-value a permutation test of L runs gives such a step.
    """
    n = 2 * min_segment
    while 2 / math.comb(n, min_segment) > fdr:
        n += 1
    return n


def off(reason: str, nights: int = DEFAULT_HISTORY_NIGHTS) -> HistoryRead:
    """A history not read, and why (``--no-history``, the run not of the baseline's series)."""
    return HistoryRead((), nights_needed(), nights, DEFAULT_FDR, 0, note=reason)


def newest_part(s: Series, window: int = UPDATE_WINDOW) -> Series:
    """``s`` from its last environment change on, at most its newest ``window`` runs."""
    n = len(s.values)
    start = max(0, n - window, *(b.index for b in s.breaks if b.index < n))
    if start == 0:
        return s
    return replace(
        s,
        runs=s.runs[start:],
        dates=s.dates[start:],
        values=s.values[start:],
        breaks=(),
    )


def search(
    series: Sequence[Series],
    held_run: int,
    nights: int = DEFAULT_HISTORY_NIGHTS,
    fdr: float = DEFAULT_FDR,
    window: int = UPDATE_WINDOW,
    min_segment: int = MIN_SEGMENT,
) -> HistoryRead:
    """Each series' newest step in its newest part, the figures held together (BH at ``fdr``).

    Args:
        series: the measured figures' series, each ending at the judged run.
        held_run: the baseline's newest run.
        nights: the window a step must have begun within to alarm.
        fdr: the false discovery rate held across the figures.
        window: at most this many of the newest runs are read.
        min_segment: runs on each side of a change point.

    Raises:
        ValueError: ``nights`` below ``min_segment``, or as :func:`commscope.check.changes.find`.
    """
    if nights < min_segment:
        raise ValueError(
            f"a window of {nights} nights holds no step: one needs {min_segment} nights after"
            f" it; give {min_segment} or more"
        )
    needed = nights_needed(fdr, min_segment)
    parts = [newest_part(s, window) for s in series]
    longest = max(range(len(parts)), key=lambda i: len(parts[i].runs), default=None)
    if longest is None:
        return HistoryRead((), needed, nights, fdr, held_run, note="history: no figure to read")
    runs = parts[longest].runs
    since = _since(series[longest], runs)
    read = HistoryRead(runs, needed, nights, fdr, held_run, since=since)
    if len(runs) < needed:
        why = f"history: {len(runs)} nights, needs {needed}"
        if since is not None:
            why += f" (since the environment changed at run {since[0]})"
        return replace(read, note=why)
    steps = {}
    for found in find(parts, fdr, min_segment):
        if found.changes:
            newest = found.changes[-1]
            s = found.series
            steps[s.key] = Step(newest, len(s.values) - newest.index, s.better)
    return replace(read, steps=steps)


def _since(s: Series, part: Sequence[int]) -> tuple[int, tuple[str, ...]] | None:
    """The environment change ``part`` (a newest part of ``s``) starts at, if any."""
    if not part:
        return None
    for b in s.breaks:
        if b.index < len(s.runs) and s.runs[b.index] == part[0]:
            return part[0], b.changes
    return None
