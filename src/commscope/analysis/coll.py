"""Collective results as MPIPerf reports them (Kurnosov 2012, MPIPerf, section 4).

Per point: nt launches, nc valid ones, ns kept after dropping g' of the smallest and largest
valid times, the mean T of those, its standard error, min, max, the absolute error
E = t_alpha * SE (Student) and the confidence interval at the chosen level. Recomputed from
the raw launches, so other trimming or levels need no new run.

Warnings say when a window-method point is not to be trusted as it stands: ``too_few_valid``
when fewer than the stop rule's minimum of valid launches remain (the figures come from a
handful of launches, or none), ``late_starts`` when at least half of the launches started late
on some rank (other processes took the ranks' cores: the figures come from the launches the
machine left alone), ``clock_drift`` when the clock check after the point found the ranks'
clocks apart by more than both estimates' error bounds explain, and that excess is over 5 % of
the point's median time (every launch time and every late/overrun verdict can be off by it),
``start_skew`` when the valid launches whose ranks began later ran longer than their delay
explains (``analysis.start_skew``: the operation amplifies start skew, so the point's time
depends on how well its ranks started together). The engine only flags each launch, records
its start delay and writes the check; the reading is done here.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

from commscope.analysis import start_skew, stats
from commscope.analysis.start_skew import SkewEffect
from commscope.data.records import Coll
from commscope.units import time_text

LEVELS = (0.90, 0.95, 0.99)
DEFAULT_TRIM = 0.25  # g' = 25 %, as MPIPerf
MIN_VALID = 10  # valid launches stop rule b asks for (and --min-valid's default)
LATE_SHARE = 0.5  # share of late launches from which a point is called disturbed
DRIFT_SHARE = 0.05  # unexplained clock disagreement, as a share of the median, that voids a point
WARNINGS = {
    "too_few_valid": "too few valid launches",
    "late_starts": "most launches started late (other processes took the ranks' cores)",
    "clock_drift": "the clocks drifted apart during the point (try --sync drift)",
    "start_skew": "launch times rise with start delay",
}


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
    late_share: float = 0.0  # launches started late on some rank / all launches
    warnings: tuple[str, ...] = ()  # keys of WARNINGS
    clock_unexplained_s: float | None = None  # clock check after the point (window method)
    start_delay_median_s: float | None = None  # valid launches' latest rank's start delay
    start_skew: SkewEffect | None = None  # later-starting launches ran longer (warning)

    def to_json(self) -> dict[str, Any]:
        """Plain dict with full key names; NaN becomes None, tuples lists."""
        return {
            k: (
                None
                if isinstance(v, float) and math.isnan(v)
                else list(v)
                if isinstance(v, tuple)
                else v
            )
            for k, v in asdict(self).items()
        }


def min_valid_of(options: dict[str, Any] | None) -> int:
    """Valid launches a point of a run with these engine options needs (header ``options``)."""
    options = options or {}
    if str(options.get("stop", "b")).startswith("rse"):
        return int(options.get("min_valid", MIN_VALID))
    return MIN_VALID


def clock_unexplained_s(point: Coll) -> float | None:
    """Clock disagreement after the point beyond the estimates' bounds (None: not checked)."""
    check = point.raw.get("clock_check") or {}
    value = check.get("unexplained_s")
    return float(value) if value is not None else None


def skew_of(point: Coll) -> SkewEffect | None:
    """How the valid launches' times rise with their start delay (None: they do not)."""
    delays = point.valid_start_delays_s
    if point.method != "window" or delays is None:
        return None
    return start_skew.effect(point.valid_times_s, delays)


def warnings_of(
    point: Coll,
    nc: int,
    late: int,
    min_valid: int = MIN_VALID,
    median_s: float = float("nan"),
    skew: SkewEffect | None = None,
) -> tuple[str, ...]:
    """What makes a window-method point untrustworthy as it stands (keys of WARNINGS).

    ``skew``: the point's ``skew_of``.
    """
    if point.method != "window":
        return ()
    found = []
    if nc < min_valid:
        found.append("too_few_valid")
    if point.n_samples and late / point.n_samples >= LATE_SHARE:
        found.append("late_starts")
    drift = clock_unexplained_s(point)
    if drift is not None and drift > 0 and not drift <= DRIFT_SHARE * median_s:
        found.append("clock_drift")
    if skew is not None:
        found.append("start_skew")
    return tuple(found)


def summarize(
    point: Coll, level: float = 0.95, trim: float = DEFAULT_TRIM, min_valid: int = MIN_VALID
) -> CollSummary:
    """Statistics of one collective point from its valid launches.

    Args:
        point: the raw launches.
        level: confidence level of the interval.
        trim: share of valid times dropped at each end.
        min_valid: valid launches below which the point is flagged ``too_few_valid``.

    Returns:
        The MPIPerf row, with its late share and warnings.
    """
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
    skew = skew_of(point)
    return CollSummary(
        point.op,
        point.bytes,
        point.nranks,
        point.root,
        point.method,
        point.n_samples,
        len(valid),
        ns,
        late,
        overrun,
        mean,
        med,
        se,
        lo,
        hi,
        err,
        ci_lo,
        ci_hi,
        level,
        point.stop,
        overlap,
        late / point.n_samples if point.n_samples else 0.0,
        warnings_of(point, len(valid), late, min_valid, med, skew),
        clock_unexplained_s(point),
        _median_delay_s(point),
        skew,
    )


def _median_delay_s(point: Coll) -> float | None:
    """Median start delay of the valid launches (None: not recorded, or none valid)."""
    delays = point.valid_start_delays_s
    return stats.median(delays) if delays else None


def summaries(
    points: list[Coll], level: float = 0.95, trim: float = DEFAULT_TRIM, min_valid: int = MIN_VALID
) -> list[CollSummary]:
    """Summaries ordered by operation, size and process count."""
    return [
        summarize(p, level, trim, min_valid)
        for p in sorted(points, key=lambda p: (p.op, p.bytes, p.nranks))
    ]


def warning_text(s: CollSummary) -> str:
    """One line saying why a flagged point is not to be trusted (empty when it is not)."""
    if not s.warnings:
        return ""
    parts = [
        s.start_skew.text() if w == "start_skew" and s.start_skew else WARNINGS[w]
        for w in s.warnings
    ]
    if s.clock_unexplained_s is not None and "clock_drift" in s.warnings:
        parts.append(f"{time_text(s.clock_unexplained_s)} unexplained")
    return (
        f"{s.op} {s.bytes} B: "
        + "; ".join(parts)
        + f" ({s.nc} valid of {s.nt}, {s.late_share:.0%} started late)"
    )
