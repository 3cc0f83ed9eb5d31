"""Which runs a figure's spread leaves out: a run far off the others, or a loaded one.

(a) A run far off the others: the Iglewicz-Hoaglin modified z-score (Iglewicz and Hoaglin
1993, "How to Detect and Handle Outliers"), M_i = 0.6745 (y_i - median(y)) / MAD with
MAD = median |y_i - median(y)|, applied when ``OUTLIER_MIN_RUNS`` (3) or more runs have the
figure. Their fixed cut, |M_i| > 3.5, leaves a
clean run out of 21 % of figures of 5 normal runs (29 % of 3, 13 % of 10), and every clean
run left out narrows the spread a check is judged by. So the cut is calibrated per number of
runs n: the 1 - ``OUTLIER_LEVEL`` (95 %) quantile of max_i |M_i| over n independent normal
runs, found by a seeded simulation of ``OUTLIER_DRAWS`` sets (:func:`outlier_cut`; 22.0 for
3 runs, 7.9 for 5, 4.6 for 10). Assumed: the clean runs' y are normal. A run 10 times slower
than its neighbours that spread by 1-3 % has an M in the hundreds.
When MAD is 0 (more than half the runs agree exactly) the mean absolute deviation from the
median takes its place, M_i = (y_i - median) / (1.253314 MeanAD) (both scales estimate the
standard deviation of a normal sample); when that is 0 too every run agrees and none is left
out. (b) A run the load monitor flagged: other processes took more than ``BUSY_SHARE`` of a
host's CPUs and more than ``LOAD_MARGIN`` beyond the baseline runs' median share
(:func:`commscope.check.environment.loaded_runs`; the margin a check uses to name load).
At least ``MIN_KEPT`` (2) runs are kept: when the rules would leave fewer, the runs furthest
off (largest |M_i|, outliers before loaded runs) are left out first and the rest kept. Every
left-out run is named per figure with its cause.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping, Sequence

import numpy as np

OUTLIER_LEVEL = 0.05  # chance that a figure of clean normal runs loses one as far off
OUTLIER_DRAWS = 100_000  # simulated sets per number of runs for the cut
OUTLIER_SEED = 20261206  # the simulation's seed: the same cut on every machine
OUTLIER_MIN_RUNS = 3  # the rule applies from this many runs
MIN_KEPT = 2  # runs a figure keeps, whatever the rules say
MAD_SCALE = 0.6745  # the normal's 3rd quartile: MAD / 0.6745 estimates sigma
MEAN_AD_SCALE = 1.253314  # sqrt(pi / 2): MeanAD x 1.2533 estimates sigma
FAR = "far off the others"  # the cause's first words, counted in summaries
LOADED = "loaded"


@functools.lru_cache(maxsize=64)
def outlier_cut(n: int) -> float:
    """The |modified z| beyond which one of ``n`` runs is far off the others.

    The 1 - ``OUTLIER_LEVEL`` quantile of max_i |M_i| over ``n`` independent standard normal
    values, from ``OUTLIER_DRAWS`` seeded draws (about 30 ms for 5 runs; kept per n). The
    quantile's own sampling error at 100,000 draws is under 1 % of it for n of 4 or more.
    """
    rng = np.random.default_rng(OUTLIER_SEED + n)
    y = rng.standard_normal((OUTLIER_DRAWS, n))
    dev = y - np.median(y, axis=1, keepdims=True)
    mad = np.median(np.abs(dev), axis=1, keepdims=True)
    largest = np.max(np.abs(MAD_SCALE * dev / mad), axis=1)
    return float(np.quantile(largest, 1 - OUTLIER_LEVEL))


def left_out_of(centers: Sequence[float], loaded: Mapping[int, str]) -> tuple[tuple[int, str], ...]:
    """Which of a figure's run ``centers`` to leave out of its spread, and why.

    ``loaded``: index of a run the load monitor flagged -> the cause. Outliers by the
    modified z-score first (largest |M| first), then loaded runs, at most len - ``MIN_KEPT``.
    """
    n = len(centers)
    log = min(centers) > 0 if centers else False
    y = np.array([math.log(c) if log else c for c in centers], dtype=float)
    z = np.zeros(n)
    if n >= OUTLIER_MIN_RUNS:
        middle = float(np.median(y))
        dev = y - middle
        mad = float(np.median(np.abs(dev)))
        mean_ad = float(np.mean(np.abs(dev)))
        if mad > 0:
            z = MAD_SCALE * dev / mad
        elif mean_ad > 0:
            z = dev / (MEAN_AD_SCALE * mean_ad)
    cut = outlier_cut(n) if n >= OUTLIER_MIN_RUNS else math.inf
    causes: dict[int, list[str]] = {}
    for i in range(n):
        if abs(z[i]) > cut:
            causes.setdefault(i, []).append(
                f"{FAR} (modified z-score {z[i]:+.1f}, beyond +-{cut:.1f} for {n} runs)"
            )
    for i, cause in loaded.items():
        causes.setdefault(i, []).append(cause)
    order = sorted(causes, key=lambda i: (not abs(z[i]) > cut, -abs(z[i]), i))
    room = max(0, n - MIN_KEPT)
    return tuple(sorted((i, "; ".join(causes[i])) for i in order[:room]))
