"""Sample statistics for timings: trimming, mean, standard error, Student-t intervals.

Every function takes a one-dimensional sequence of numbers. A single value is a valid sample:
its spread is unknown, so std and standard error are NaN and its confidence interval collapses
to the value, without numpy or scipy warnings.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

# n * fraction is computed in binary floating point: 100 * 0.29 gives 28.999999999999996.
_FLOOR_SLACK = 1e-9


def _array(values: ArrayLike) -> NDArray[np.float64]:
    data = np.asarray(values, dtype=np.float64)
    if data.ndim != 1:
        raise ValueError(f"expected a one-dimensional sample, got shape {data.shape}")
    if data.size == 0:
        raise ValueError("expected at least one value, got an empty sample")
    return data


def _check_level(level: float) -> None:
    if not 0.0 < level < 1.0:
        raise ValueError(f"confidence level {level} must lie strictly between 0 and 1")


def mean(values: ArrayLike) -> float:
    """Arithmetic mean."""
    return float(np.mean(_array(values)))


def std(values: ArrayLike) -> float:
    """Sample standard deviation (ddof=1); NaN for a single value."""
    data = _array(values)
    if data.size < 2:
        return math.nan
    return float(np.std(data, ddof=1))


def standard_error(values: ArrayLike) -> float:
    """Standard error of the mean, std / sqrt(n); NaN for a single value."""
    data = _array(values)
    return std(data) / math.sqrt(data.size)


def relative_standard_error(values: ArrayLike) -> float:
    """Standard error divided by the absolute mean; NaN for one value or a zero mean."""
    data = _array(values)
    centre = abs(mean(data))
    if centre == 0.0:
        return math.nan
    return standard_error(data) / centre


def median(values: ArrayLike) -> float:
    """Median."""
    return float(np.median(_array(values)))


def percentile(values: ArrayLike, q: float) -> float:
    """The q-th percentile (0 <= q <= 100), linear interpolation between order statistics."""
    if not 0.0 <= q <= 100.0:
        raise ValueError(f"percentile {q} must lie between 0 and 100")
    return float(np.percentile(_array(values), q))


def trimmed(values: ArrayLike, fraction: float) -> NDArray[np.float64]:
    """Drop the extremes of a sample, as MPIPerf does before averaging.

    floor(n * fraction) values are dropped from each end of the sorted sample.

    Args:
        values: the sample.
        fraction: share dropped at each end, 0 <= fraction < 0.5.

    Returns:
        The remaining values, sorted ascending (never empty).

    Raises:
        ValueError: the sample is empty or fraction is out of range.
    """
    if not 0.0 <= fraction < 0.5:
        raise ValueError(f"trim fraction {fraction} must satisfy 0 <= fraction < 0.5")
    data = np.sort(_array(values))
    cut = math.floor(data.size * fraction + _FLOOR_SLACK)
    return data[cut : data.size - cut]


def confidence_interval(values: ArrayLike, level: float = 0.95) -> tuple[float, float]:
    """Two-sided Student-t confidence interval for the mean.

    Args:
        values: the sample.
        level: confidence level, e.g. 0.95.

    Returns:
        (low, high); (mean, mean) for a single value or a sample without spread.
    """
    _check_level(level)
    data = _array(values)
    centre = mean(data)
    se = standard_error(data)
    if data.size < 2 or se == 0.0:
        return (centre, centre)
    from scipy import stats as sps  # 0.5 s to import: only where an interval is drawn

    half = float(sps.t.ppf(0.5 + level / 2.0, data.size - 1)) * se
    return (centre - half, centre + half)


@dataclass(frozen=True)
class Summary:
    """Statistics of one (possibly trimmed) sample."""

    n: int
    mean: float
    se: float
    min: float
    max: float
    median: float
    ci_low: float
    ci_high: float
    level: float

    @property
    def rse(self) -> float:
        """Relative standard error, se / |mean|; NaN when the mean is zero."""
        return self.se / abs(self.mean) if self.mean != 0.0 else math.nan


def summarize(values: ArrayLike, level: float = 0.95, trim: float = 0.0) -> Summary:
    """Summarise a sample after trimming ``trim`` of it at each end.

    Args:
        values: the sample.
        level: confidence level of the interval.
        trim: share dropped at each end before anything is computed (see ``trimmed``).

    Returns:
        The summary of the values that remain; ``n`` counts those.
    """
    _check_level(level)
    data = trimmed(values, trim)
    low, high = confidence_interval(data, level)
    return Summary(
        n=int(data.size),
        mean=mean(data),
        se=standard_error(data),
        min=float(data[0]),
        max=float(data[-1]),
        median=median(data),
        ci_low=low,
        ci_high=high,
        level=level,
    )
