"""Each pair of placements at one size: its predicted gap set beside its measured one.

Where the tables' own noise settles which of the two is faster (``predict.resolution``: at
least ``SUPPORT`` of the resampled tables agree), the measured order must be that one, as
Kendall's tau asks of every pair, unless the measurement's own noise leaves it no order: a
measured gap the other way that still agrees with the predicted gap within NOISE_SIGMAS
standard errors of both refutes nothing. Where the tables do not settle it, the pair is no
order to check: its predicted gap, with its spread over the resampled tables, must agree with
the measured gap within NOISE_SIGMAS standard errors of both.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

from commscope import predict
from commscope.predict import resolution
from commscope.predict.cost import CostModel
from commscope.validate.placement_time import PlacementTime

NOISE_SIGMAS = 2.0  # a gap within two standard errors of another agrees with it


@dataclass(frozen=True)
class PairVerdict:
    """Two measured placements at one size: the gap between them, predicted and measured.

    Gaps are relative: (t_a - t_b) / their mean. ``resolved``: the resampled tables order the
    pair the same way in at least ``resolution.SUPPORT`` of the resamples, and the hit is the
    same order measured or a measured gap within NOISE_SIGMAS standard errors (both gaps'
    errors) of the predicted one; otherwise the predicted gap is within the tables' noise, and
    the hit is only the latter.
    """

    a: str
    b: str
    predicted_gap: float
    predicted_gap_error: float  # standard deviation over the resampled tables
    a_faster_share: float  # share of resampled tables that predict a faster than b
    resolved: bool
    measured_gap: float
    measured_gap_error: float  # from the two points' standard errors
    hit: bool

    def text(self) -> str:
        """One line: the order or the two gaps, and the verdict.

        E.g. ``2x2 < 4x1 predicted (99% of resampled tables), measured 3.1% apart: hit``.
        """
        verdict = "hit" if self.hit else "MISSED"
        measured = f"measured {abs(self.measured_gap):.1%} apart"
        if self.resolved:
            first, second = (self.a, self.b) if self.predicted_gap < 0 else (self.b, self.a)
            share = max(self.a_faster_share, 1 - self.a_faster_share)
            if self.predicted_gap * self.measured_gap <= 0:
                measured += ", the other way"
                if self.hit:  # refutes nothing: within the noise of both gaps
                    measured += (
                        f", within two standard errors of the predicted"
                        f" {abs(self.predicted_gap):.1%} (+- {self.measured_gap_error:.1%}"
                        f" measured, +- {self.predicted_gap_error:.1%} predicted)"
                    )
            return (
                f"{first} < {second} predicted ({share:.0%} of resampled tables),"
                f" {measured}: {verdict}"
            )
        noise = (
            f"+- {self.measured_gap_error:.1%}"
            if math.isfinite(self.measured_gap_error)
            else "(no standard error, so no tie confirmed: a point on one valid launch)"
        )
        return (
            f"{self.a} and {self.b} within the tables' noise: predicted"
            f" {self.predicted_gap:+.1%} +- {self.predicted_gap_error:.1%}, measured"
            f" {self.measured_gap:+.1%} {noise}: {verdict}"
        )


def judge_pair(
    a: PlacementTime, b: PlacementTime, spread: resolution.Spread | None, i: int, j: int
) -> PairVerdict:
    """The verdict on placements a and b (columns i and j of ``spread``; None: no resampling)."""
    mean_p = (a.predicted_s + b.predicted_s) / 2
    mean_m = (a.measured_s + b.measured_s) / 2
    gap_p = (a.predicted_s - b.predicted_s) / mean_p
    gap_m = (a.measured_s - b.measured_s) / mean_m
    if spread is None:  # exact tables: any predicted gap is an order, an equality a tie
        err_p, share = 0.0, float(a.predicted_s < b.predicted_s)
        resolved = a.predicted_s != b.predicted_s
    else:
        err_p, share, resolved = (
            spread.gap_rel_error(i, j),
            spread.faster_share(i, j),
            spread.resolved(i, j),
        )
    err_m = math.hypot(a.measured_se_s / a.measured_s, b.measured_se_s / b.measured_s)
    # False where a point has no standard error (one valid launch): no agreement is confirmed.
    agree = abs(gap_m - gap_p) <= NOISE_SIGMAS * math.hypot(err_p, err_m)
    # A measured order within the measurement's own noise is no order: it cannot refute one.
    hit = (gap_p * gap_m > 0 or agree) if resolved else agree
    return PairVerdict(a.placement, b.placement, gap_p, err_p, share, resolved, gap_m, err_m, hit)


def judge_pairs(
    model: predict.ClusterModel,
    placements: Sequence[predict.Placement],
    mine: Sequence[PlacementTime],
    pattern: predict.Pattern,
    resampled: Sequence[CostModel],
) -> tuple[PairVerdict, ...]:
    """Every pair of the measured placements at one size (``mine[i]`` ran ``placements[i]``)."""
    if len(mine) < 2:
        return ()
    # The answers' waits are priced once, from the tables as measured: redrawn tables move
    # the transfers' times, not the waits measured apart (contention level queue).
    waits = [c.answer_wait_s for c in mine]
    spread = (
        resolution.spread(
            lambda cost: [
                predict.predict(model, pl, pattern, cost).time_s + w
                for pl, w in zip(placements, waits, strict=True)
            ],
            resampled,
        )
        if resampled
        else None
    )
    return tuple(
        judge_pair(mine[i], mine[j], spread, i, j)
        for i, j in itertools.combinations(range(len(mine)), 2)
    )
