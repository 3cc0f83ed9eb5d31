"""Collective results as MPIPerf reports them (Kurnosov 2012, MPIPerf, section 4).

Per point: nt launches, nc valid ones, ns kept after dropping g' of the smallest and largest
valid times, the mean T of those, its standard error, min, max, the absolute error
E = t_alpha * SE (Student) and the confidence interval at the chosen level. Recomputed from
the raw launches, so other trimming or levels need no new run.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

from commscope import stats
from commscope.records import Coll

LEVELS = (0.90, 0.95, 0.99)
DEFAULT_TRIM = 0.25  # g' = 25 %, as MPIPerf


@dataclass(frozen=True)
class CollSummary:
    """One row of the MPIPerf report."""

    op: str
    bytes: int
    nranks: int
    root: int | None
    method: str
    nt: int  # launches
    nc: int  # valid launches
    ns: int  # valid launches kept after trimming
    invalid_late: int
    invalid_overrun: int
    time_s: float  # T: mean of the kept times
    median_s: float
    se_s: float
    min_s: float
    max_s: float
    error_s: float  # E = t_alpha * SE
    ci_low_s: float
    ci_high_s: float
    level: float
    stop: str
    overlap_pct: float | None

    def to_json(self) -> dict[str, Any]:
        """Plain dict with full key names; NaN becomes None."""
        return {k: (None if isinstance(v, float) and math.isnan(v) else v)
                for k, v in asdict(self).items()}


def summarize(point: Coll, level: float = 0.95, trim: float = DEFAULT_TRIM) -> CollSummary:
    """Statistics of one collective point from its valid launches."""
    valid = point.valid_times_s
    late = sum(1 for f in point.flags if f & 1)
    overrun = sum(1 for f in point.flags if f & 2)
    overlap = (point.raw.get("overlap") or {}).get("overlap_pct")
    nan = float("nan")
    if valid:
        s = stats.summarize(valid, level=level, trim=trim)
        half = (s.ci_high - s.ci_low) / 2
        figures = (s.n, s.mean, s.median, s.se, s.min, s.max, half, s.ci_low, s.ci_high)
    else:
        figures = (0, nan, nan, nan, nan, nan, nan, nan, nan)
    ns, mean, med, se, lo, hi, err, ci_lo, ci_hi = figures
    return CollSummary(point.op, point.bytes, point.nranks, point.root, point.method,
                       point.n_samples, len(valid), ns, late, overrun, mean, med, se, lo, hi,
                       err, ci_lo, ci_hi, level, point.stop, overlap)


def summaries(points: list[Coll], level: float = 0.95,
              trim: float = DEFAULT_TRIM) -> list[CollSummary]:
    """Summaries ordered by operation and size."""
    return [summarize(p, level, trim) for p in sorted(points, key=lambda p: (p.op, p.bytes))]
