"""Tolerances derived from the noise a test measured itself.

A bound that a physical argument sets (a 10 mbit link is ten times slower than a 100 mbit one)
still has to allow for the uncertainty of the medians it compares. That uncertainty comes from
the samples: the standard error of a median is about 1.2533 sigma / sqrt(n), with sigma
estimated robustly as IQR / 1.349. Bounds widen by three such errors, so a quiet run keeps the
physical band and a noisy run gets exactly the room its own samples justify.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

SIGMAS = 3.0


def median_rel_error(samples: Sequence[float]) -> float:
    """Relative standard error of the median of ``samples`` (0 for fewer than two)."""
    x = np.asarray([s for s in samples if math.isfinite(s)], dtype=float)
    if x.size < 2:
        return 0.0
    q25, med, q75 = np.percentile(x, [25, 50, 75])
    if med <= 0:
        return 0.0
    sigma = (q75 - q25) / 1.349
    return float(1.2533 * sigma / math.sqrt(x.size) / med)


def ratio_rel_error(*samples: Sequence[float]) -> float:
    """Relative error of a ratio or product of the medians of ``samples`` (errors in quadrature)."""
    return math.sqrt(sum(median_rel_error(s) ** 2 for s in samples))


def widened(lo: float, hi: float, rel_error: float) -> tuple[float, float]:
    """The band [lo, hi] widened by SIGMAS relative errors on each side."""
    margin = SIGMAS * rel_error
    return lo * (1 - margin), hi * (1 + margin)
