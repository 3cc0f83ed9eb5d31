"""Whether a collective's launch times rise with how late its ranks began.

The MPIPerf window scheduler (Kurnosov 2012, MPIPerf) starts every rank of a launch at one
global time. Ranks that share cores always begin a little late, so a launch passes when its
latest rank began less than a timer tolerance plus 2 % of the launch's time late: a rank that
begins d late can end the launch at most d later. An operation that amplifies a delay breaks
that bound. Above the eager limit who arrives first decides which rendezvous answers queue
behind a stream (a pair exchange's first rank streams before it answers the other), so a
delay of a millisecond can cost tens. Such an operation's time then says as much about how
well the ranks started together as about the operation.

The check sorts the valid launches by start delay and, for the latest-starting fifth, two,
three and four fifths, takes the median time of that group less the median of the rest. The
largest of the four is the effect. It counts when it exceeds what those launches' delays can
explain (the largest of them) and 2 % of the other launches' median time (the share the
scheduler already lets a start delay add), and when fewer than 1 % of random reorderings of
the times give an effect as large (a permutation test, seeded: the same launches always give
the same answer).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from commscope.units import time_span_text, time_text

MIN_LAUNCHES = 10  # fifths of at least two launches
PERMUTATIONS = 1000
SEED = 2012  # fixed: a point's verdict does not change from one reading to the next
LEVEL = 0.01  # share of reorderings at least as extreme below which the effect counts
SHARE = 0.02  # of the time: the rise the engine's late rule (LATE_SHARE) already accepts


@dataclass(frozen=True)
class SkewEffect:
    """Launches that began later ran longer than their delay explains.

    Attributes:
        launches: valid launches checked.
        later: how many of them, the latest to begin, ran longer.
        from_delay_s: the smallest start delay among those.
        max_delay_s: the largest start delay among those (what the delays can explain).
        later_median_s: their median time.
        rest_median_s: the other launches' median time.
        p_value: share of reorderings of the times that give as large an effect.
    """

    launches: int
    later: int
    from_delay_s: float
    max_delay_s: float
    later_median_s: float
    rest_median_s: float
    p_value: float

    @property
    def effect_s(self) -> float:
        """How much longer the later-starting launches ran (medians)."""
        return self.later_median_s - self.rest_median_s

    def text(self) -> str:
        """One clause for a warning line."""
        return (
            f"launch times rise with start delay: the {self.later} of {self.launches} valid"
            f" launches begun {time_span_text(self.from_delay_s, self.max_delay_s)}"
            f" late took {time_text(self.later_median_s)} (median), the rest"
            f" {time_text(self.rest_median_s)}: the operation amplifies start skew"
        )


def _splits(n: int) -> list[int]:
    """Sizes of the latest-starting groups: one to four fifths, each side two or more."""
    return sorted({k for j in range(1, 5) if 2 <= (k := round(n * j / 5)) <= n - 2})


def _effects(ordered: NDArray[np.float64], splits: Sequence[int]) -> NDArray[np.float64]:
    """Per row (times in start-delay order), per split, later group's median less the rest's."""
    n = ordered.shape[1]
    return np.stack(
        [
            np.median(ordered[:, n - k :], axis=1) - np.median(ordered[:, : n - k], axis=1)
            for k in splits
        ],
        axis=1,
    )


def effect(times_s: Sequence[float], delays_s: Sequence[float]) -> SkewEffect | None:
    """The rise of launch time with start delay, or None when there is none to speak of.

    ``times_s`` and ``delays_s``: per valid launch, its time and its latest rank's start
    delay. None as well with fewer than ``MIN_LAUNCHES`` launches or no spread of delays.
    """
    t = np.asarray(times_s, dtype=np.float64)
    d = np.asarray(delays_s, dtype=np.float64)
    if t.size != d.size:
        raise ValueError(f"{t.size} launch times against {d.size} start delays")
    if t.size < MIN_LAUNCHES or np.ptp(d) == 0.0:
        return None
    order = np.argsort(d, kind="stable")
    t, d = t[order], d[order]
    splits = _splits(t.size)
    observed = _effects(t[None, :], splits)[0]
    best = int(np.argmax(observed))
    k = splits[best]
    # Within what the delays themselves can add, or what the late rule lets them add.
    if observed[best] <= max(d[-1], SHARE * float(np.median(t[: t.size - k]))):
        return None
    rnd = np.random.default_rng(SEED)
    shuffled = rnd.permuted(np.broadcast_to(t, (PERMUTATIONS, t.size)), axis=1)
    as_large = int((_effects(shuffled, splits).max(axis=1) >= observed[best]).sum())
    p = (1 + as_large) / (1 + PERMUTATIONS)
    if p >= LEVEL:
        return None
    return SkewEffect(
        launches=int(t.size),
        later=k,
        from_delay_s=float(d[-k]),
        max_delay_s=float(d[-1]),
        later_median_s=float(np.median(t[-k:])),
        rest_median_s=float(np.median(t[:-k])),
        p_value=p,
    )
