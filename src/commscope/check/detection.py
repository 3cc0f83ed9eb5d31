"""What a baseline can detect, summarised: per family, per left-out run, per coarse figure.

``baseline create`` and ``baseline show`` print these (:mod:`commscope.check.baseline` holds
the method): each family's decision thresholds and detection limits, the runs left out of
figures' spreads and why, and the figures a check will not judge.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping
from dataclasses import dataclass

from commscope.check.baseline import Baseline, Limits
from commscope.check.left_out import FAR, LOADED
from commscope.check.moderated import NO_PRIOR, Prior


@dataclass(frozen=True)
class FamilySummary:
    """One family: its figures, its prior, the median and largest of its limits."""

    family: str
    figures: int
    judged: int
    prior: Prior
    decision: tuple[float, float] | None  # (median, largest) L_C share; None: none drawn
    detection: tuple[float, float] | None  # (median, largest) L_D share


@dataclass(frozen=True)
class LeftOutSummary:
    """One run left out of some figures' spreads for one cause."""

    run: int | None
    cause: str  # FAR or LOADED
    figures: int


@dataclass(frozen=True)
class Coarse:
    """A figure a check will not judge, with the runs left out of it."""

    key: str
    detection: float | None
    reason: str
    left_out: list[str]


def _middle_and_most(values: list[float]) -> tuple[float, float] | None:
    return (statistics.median(values), max(values)) if values else None


def families(baseline: Baseline, limits: Mapping[str, Limits]) -> list[FamilySummary]:
    """Per family, in the baseline's order."""
    priors = baseline.priors()
    keys: dict[str, list[str]] = {}
    for key, base in baseline.figures.items():
        keys.setdefault(base.family, []).append(key)
    out = []
    for family, members in keys.items():
        drawn = [limits[k] for k in members]
        out.append(
            FamilySummary(
                family,
                len(members),
                sum(1 for x in drawn if x.judged),
                priors.get(family, NO_PRIOR),
                _middle_and_most([x.decision for x in drawn if x.decision is not None]),
                _middle_and_most([x.detection for x in drawn if x.detection is not None]),
            )
        )
    return out


def left_out(baseline: Baseline) -> list[LeftOutSummary]:
    """Per run and cause, how many figures left it out; by run."""
    counts: dict[tuple[int | None, str], int] = {}
    for base in baseline.figures.values():
        for i, cause in base.left_out:
            for kind in (FAR, LOADED):
                if kind in cause:
                    run = base.runs[i]
                    counts[run, kind] = counts.get((run, kind), 0) + 1
    return [
        LeftOutSummary(run, cause, n)
        for (run, cause), n in sorted(counts.items(), key=lambda x: (x[0][0] or 0, x[0][1]))
    ]


def coarse(baseline: Baseline, limits: Mapping[str, Limits]) -> list[Coarse]:
    """Figures a check will not judge, coarsest first."""
    out = [
        Coarse(key, lim.detection, lim.reason or "", baseline.figures[key].left_out_text())
        for key, lim in limits.items()
        if not lim.judged
    ]
    return sorted(out, key=lambda c: -(c.detection if c.detection is not None else float("inf")))
