"""Change points: the runs where a figure's history stepped to another level, and how sure.

A **series** is one figure over the runs of one request on one set of hosts, oldest first
(:func:`commscope.check.history.series_of` builds them). Its values are taken on the log
scale, y = log(center): a time or a rate changes by a factor, and a difference of y reads as
a share.

**Parts.** A changed environment (another MPI library, kernel, CPU, TCP setting, engine
option: :func:`commscope.check.environment.changes` between consecutive runs) starts a new
part; no change point is sought across it, and the output names it. Each part is searched on
its own.

**Splitting** (binary segmentation, as E-divisive does; Matteson and James 2014, "A
nonparametric approach for multiple change point analysis of multivariate data"). In a part
y_1..y_L, every split k with at least ``MIN_SEGMENT`` runs on each side is scored by the
two-sample t statistic of y_1..y_k against y_k+1..y_L with a pooled variance (Apache Otava's
E-divisive with a t-test scores splits with it); the split with the largest |t| is the
candidate. As L is fixed, t^2 = (L - 2) B / (S - B) with S the total sum of squares and
B = L C_k^2 / (k (L - k)) the between-sides sum of squares (C_k the sum of the first k
centered values), so the largest |t| is the largest B: one cumulative sum scores every
split.

**Robust to one bad run.** Before scoring, a part's values are winsorized at 3
(``permutation.WINSOR``) robust standard deviations from its median (the scale 1.4826 MAD,
or 1.2533 x the mean absolute deviation where the MAD is 0). One run far off is pulled in
to 3 standard deviations, so alone it moves the mean of a side of ``MIN_SEGMENT`` runs by at
most one: the chance variation of the largest |t|, not a step. A step of many runs is not a few far
values: it moves the median and survives. The median and MAD are symmetric functions of the
values, so winsorizing commutes with the permutations below and the test stays exact. It
also caps a step's own values, which blurs where a step near the end begins: the split is
placed on the values as they are, at the best split within ``MIN_SEGMENT`` runs of the
test's candidate (:func:`commscope.check.permutation.located`).

**Significance: a permutation test of the maximum.** The t statistic of a split chosen to
maximise it is not Student-distributed (its p-value would be far too small: a series with no
change would "change" in most analyses). The candidate's p-value is the share of random
orderings of the same winsorized values whose largest B reaches the observed one: exact when
the runs of the part are exchangeable (the null: no change, independent runs, any noise
distribution), and it accounts for the choice of the split, as Matteson and James test
E-divisive's. The permutations are drawn from a fixed seed (the same answer on every call)
until h = 10 of them reach the observed maximum, giving p = h / r after r permutations, or
until r_max are drawn, giving p = (x + 1) / (r_max + 1): Besag and Clifford's (1991,
"Sequential Monte Carlo p-values") valid p-value, which spends few permutations where the
p-value is clearly large. r_max = m / q - 1 for m parts tested at false discovery rate q
(at least 999, at most 99,999): the smallest p-value then reaches Benjamini-Hochberg's first
threshold q / m. Past the cap, a change must show in several figures at once to pass (with
10,000 parts at q = 1 %, in 10). A candidate stops drawing as soon as the p-value it can
still reach settles its Benjamini-Hochberg decision, so the decisions are exactly those of
drawing every candidate to its end (:mod:`commscope.check.permutation`). A part can only be
as significant as its orderings are many: with 5 runs after 8, no ordering test of 13 runs
gets below 2 / C(13, 5) = 0.0016 (the 5 highest values at either end).

**Many figures: false change points held across figures, not per figure.** The candidates of
every part of every series are one family: Benjamini-Hochberg at q (``DEFAULT_FDR``, 1 %,
:func:`scipy.stats.false_discovery_control`) keeps those whose adjusted p-value (q value) is
at most q. So among the figures said to have changed, the expected share that did not is at
most q, however many figures are read: for independent tests and under positive dependence
(the figures of one link move together): Benjamini and Yekutieli (2001, "The control of the
false discovery rate in multiple testing under dependency"). A kept split divides
its part in two, and the candidates of the new parts form the next family, tested the same
way (hierarchical testing, Yekutieli 2008, "Hierarchical false discovery rate-controlling
methodology", who bounds the false discovery rate over all levels by a small multiple of q);
a part shorter than 2 ``MIN_SEGMENT`` runs is not split again.

**Each change**: its first run and date, its size as the ratio of the medians after and
before (the runs from the previous change, or the part's start, to the next), as a share,
better or worse by the figure's ``better``, its p and q values, and the level of the search
that found it.

**Assumptions.** Within a part, the runs are independent and exchangeable when nothing
changed: a slow drift, a weekly cycle or runs that follow each other's load break it and show
as change points. A step is a lasting change of level; ``MIN_SEGMENT`` (3) runs must follow
it before it can be found, and a single run off the others is never one. Two runs far off
at the end of a part are not told from a step two runs old: they can show as a change of the
last three or four runs, which the next run confirms or not. Each search is a new look at the
same history: the false discovery rate holds per search, and a nightly search of a history
that grows by one run a night looks again every night (the false change points per 1,000
nights are a replay bench's to measure).

**The nightly update** (:func:`update`) looks only where a new run can change the answer:
each series' newest part (from its last known change point or environment change, at most
the newest ``UPDATE_WINDOW`` runs), one candidate each, held together by Benjamini-Hochberg.
Earlier change points stand as found; a full search (:func:`find`) revisits them.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from commscope.check import permutation
from commscope.kinds.figures import LOWER

MIN_SEGMENT = 3  # runs on each side of a change point
DEFAULT_FDR = 0.01  # Benjamini-Hochberg level across figures
UPDATE_WINDOW = 30  # the newest runs the nightly update looks at


@dataclass(frozen=True)
class Break:
    """An environment change: ``index`` is the first run of the new environment."""

    index: int
    changes: tuple[str, ...]  # what changed, one phrase each ("MPI library: A -> B")


@dataclass(frozen=True)
class Series:
    """One figure over runs of one request on one set of hosts, oldest first.

    Attributes:
        key: the figure's key.
        better: ``lower`` or ``higher``.
        runs: the runs' ids.
        dates: their creation times (Unix seconds).
        values: the figure's value in each run (positive: read on the log scale).
        breaks: environment changes, by the index of their first run.
        unit: the values' unit.
    """

    key: str
    better: str
    runs: tuple[int, ...]
    dates: tuple[float, ...]
    values: tuple[float, ...]
    breaks: tuple[Break, ...] = ()
    unit: str = ""

    def parts(self) -> list[tuple[int, int]]:
        """(start, stop) of each part between environment changes."""
        edges = sorted({0, len(self.values), *(b.index for b in self.breaks)})
        return [(a, b) for a, b in zip(edges, edges[1:], strict=False) if b > a]


@dataclass(frozen=True)
class Change:
    """A change point: the figure's level changed from run ``run_id`` on.

    Attributes:
        key: the figure's key.
        index: the run's index in its series.
        run_id: the first run at the new level.
        created_unix: its date.
        ratio: median after / median before (of the runs to the neighbouring change points
            or environment changes).
        median_before, median_after: those medians, in the figure's unit.
        direction: ``better`` or ``worse``, by the figure's ``better``.
        p: the permutation p-value of the split (an upper bound of it when its drawing
            stopped once its decision was settled).
        q: its Benjamini-Hochberg adjusted p-value among its level's candidates.
        t: the two-sample t statistic of the split (winsorized log values).
        before: runs in the segment before it; after: in the segment after it.
        level: 1 for a part's first split, 2 for a split of one of its halves, ...
    """

    key: str
    index: int
    run_id: int
    created_unix: float
    ratio: float
    median_before: float
    median_after: float
    direction: str
    p: float
    q: float
    t: float
    before: int
    after: int
    level: int

    @property
    def share(self) -> float:
        """The change as a share of the level before (+0.25: 25 % higher)."""
        return self.ratio - 1

    def to_json(self) -> dict[str, object]:
        """Plain dict with full key names."""
        return {
            "key": self.key,
            "run": self.run_id,
            "created_unix": self.created_unix,
            "ratio": self.ratio,
            "change": self.share,
            "median_before": self.median_before,
            "median_after": self.median_after,
            "direction": self.direction,
            "p_value": self.p,
            "q_value": self.q,
            "t": self.t if math.isfinite(self.t) else None,
            "runs_before": self.before,
            "runs_after": self.after,
            "level": self.level,
        }


@dataclass(frozen=True)
class SeriesChanges:
    """A series and its change points, oldest first; ``note`` says why none could be sought."""

    series: Series
    changes: tuple[Change, ...]
    note: str | None = None


@dataclass(frozen=True)
class _Part:
    series: int  # index into the series searched
    start: int
    stop: int
    level: int


def find(
    series: Sequence[Series], fdr: float = DEFAULT_FDR, min_segment: int = MIN_SEGMENT
) -> list[SeriesChanges]:
    """Every series' change points, held together by Benjamini-Hochberg at ``fdr``.

    Raises:
        ValueError: ``fdr`` not in (0, 1) or ``min_segment`` below 2.
    """
    _check(fdr, min_segment)
    logs, notes = _logs([s.values for s in series])
    parts = [
        _Part(i, a, b, 1)
        for i, y in enumerate(logs)
        if y is not None
        for a, b in series[i].parts()
        if b - a >= 2 * min_segment
    ]
    found: dict[int, list[tuple[int, float, float, float, int]]] = {}
    while parts:  # one level of the search: one family for Benjamini-Hochberg
        values = [_values(logs, part) for part in parts]
        children = []
        tested_all = permutation.best_splits(values, min_segment, fdr)
        for part, tested in zip(parts, tested_all, strict=True):
            if not tested.kept or tested.split is None:
                continue
            split = part.start + tested.split
            found.setdefault(part.series, []).append(
                (split, tested.p, tested.q, tested.t, part.level)
            )
            for a, b in ((part.start, split), (split, part.stop)):
                if b - a >= 2 * min_segment:
                    children.append(_Part(part.series, a, b, part.level + 1))
        parts = children
    out = []
    for i, s in enumerate(series):
        note = notes.get(i)
        if note is None and not any(b - a >= 2 * min_segment for a, b in s.parts()):
            note = f"too few runs: a change needs {min_segment} runs on each side"
        out.append(SeriesChanges(s, _changes(s, found.get(i, [])), note))
    return out


def update(
    series: Sequence[Series],
    last_change: Mapping[str, int | None],
    fdr: float = DEFAULT_FDR,
    window: int = UPDATE_WINDOW,
    min_segment: int = MIN_SEGMENT,
) -> list[SeriesChanges]:
    """The nightly update: a change point in each series' newest part, if any.

    Args:
        series: the series that have a new run.
        last_change: key -> the run id of its last change point found before (None: none).
        fdr: the Benjamini-Hochberg level across the series.
        window: at most this many of the newest runs are looked at.
        min_segment: runs on each side of a change point.

    Returns:
        Per series, only its new change point (of level 1), or none.
    """
    _check(fdr, min_segment)
    starts = {}
    for i, s in enumerate(series):
        n = len(s.values)
        start = max(0, n - window, *(b.index for b in s.breaks if b.index < n))
        since = last_change.get(s.key)
        if since is not None and since in s.runs:
            start = max(start, s.runs.index(since))
        if n - start >= 2 * min_segment:
            starts[i] = start
    # Only each series' newest part is read: the cost follows the window, not the history.
    tails, notes = _logs([series[i].values[a:] for i, a in starts.items()])
    rows = list(starts)  # a tail's row -> its series
    parts = [_Part(row, 0, len(y), 1) for row, y in enumerate(tails) if y is not None]
    found: dict[int, list[tuple[int, float, float, float, int]]] = {}
    tested_all = permutation.best_splits([_values(tails, p) for p in parts], min_segment, fdr)
    for part, tested in zip(parts, tested_all, strict=True):
        i = rows[part.series]
        if tested.kept and tested.split is not None:
            found[i] = [(starts[i] + tested.split, tested.p, tested.q, tested.t, 1)]
    notes = {rows[row]: note for row, note in notes.items()}
    return [  # sized from the newest part's start: the edge before the new change point
        SeriesChanges(s, _changes(s, found.get(i, []), (starts.get(i, 0),)), notes.get(i))
        for i, s in enumerate(series)
    ]


def _values(logs: Sequence[np.ndarray | None], part: _Part) -> np.ndarray:
    y = logs[part.series]
    assert y is not None  # parts are made of series on the log scale only
    return y[part.start : part.stop]


def _check(fdr: float, min_segment: int) -> None:
    if not 0 < fdr < 1:
        raise ValueError(f"false discovery rate {fdr!r} is not between 0 and 1")
    if min_segment < 2:
        raise ValueError(f"a segment of {min_segment} runs has no spread; give 2 or more")


def _logs(
    values: Sequence[Sequence[float]],
) -> tuple[list[np.ndarray | None], dict[int, str]]:
    """Each series' log values (None where a value is not positive and finite), and why."""
    logs: list[np.ndarray | None] = []
    notes = {}
    for i, found in enumerate(values):
        v = np.asarray(found, dtype=float)
        if v.size and not (np.all(np.isfinite(v)) and np.all(v > 0)):
            logs.append(None)
            notes[i] = "not on a log scale: a value is not positive"
        else:
            logs.append(np.log(v))
    return logs, notes


def _changes(
    s: Series, found: Sequence[tuple[int, float, float, float, int]], edges: Sequence[int] = ()
) -> tuple[Change, ...]:
    """The found splits as changes, each sized against its neighbouring edges."""
    if not found:
        return ()
    y = np.log(np.asarray(s.values, dtype=float))
    splits = sorted(found)
    bounds = sorted({0, len(y), *(b.index for b in s.breaks), *edges, *(f[0] for f in splits)})
    out = []
    for index, p, q, t, level in splits:
        before = max(b for b in bounds if b < index)
        after = min(b for b in bounds if b > index)
        low, high = float(np.median(y[before:index])), float(np.median(y[index:after]))
        ratio = math.exp(high - low)
        worse = ratio > 1 if s.better == LOWER else ratio < 1
        out.append(
            Change(
                s.key,
                index,
                s.runs[index],
                s.dates[index],
                ratio,
                math.exp(low),
                math.exp(high),
                "worse" if worse else "better",
                p,
                q,
                t,
                index - before,
                after - index,
                level,
            )
        )
    return tuple(out)
