"""Protocol regimes: thresholds found from the data, and a Hockney fit within each regime.

MPI libraries switch protocol with message size (inline/short, eager, rendezvous), and each
switch shows as a step in time between neighbouring sizes. Within one regime the Hockney model
t(m) = alpha + m / beta holds, so log t grows with log m at a slope between 0 and 1.

Threshold detection. Work in log size x and log time y. For each gap between neighbouring
sizes (+-3-byte perturbations are neighbours like any other), take the sizes within one octave
on each side of the gap, not crossing a threshold already found, at least two on each side.
Fit two parallel lines, one per side, sharing the slope estimated within the sides (clipped to
[0, 1.5]); the step is the difference of their intercepts, in log time. When the sides span too
little size to estimate a slope, the step is the change in mean log time beyond what any slope
between 0 and 1 explains. The largest step becomes a threshold when it is at least
``min_jump`` (20 % by default) and at least five times the robust spread (1.4826 x MAD) of the
steps at all gaps; repeat until no step qualifies. A step is relative to the local trend, so
a single slow size is diluted by its neighbours while a level shift is not.

Hockney fit: alpha >= 0 and 1/beta >= 0 minimising the sum of squared relative residuals
((t - alpha - m / beta) / t)^2, so small and large sizes weigh alike.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

MIN_JUMP = 0.2
WINDOW_OCTAVES = 1.0
NOISE_FACTOR = 5.0
MAX_THRESHOLDS = 8
PERTURBATION = 3  # bytes; a threshold's nominal size may sit that far above the first size
_MIN_SPREAD = 0.01  # sum of squared log-size deviations needed to estimate a slope
_MAX_SLOPE = 1.5
_MAD_TO_SIGMA = 1.4826


@dataclass(frozen=True)
class Threshold:
    """A step in time between two neighbouring sizes: a protocol switch."""

    below_bytes: int  # last size of the lower regime
    above_bytes: int  # first size of the upper regime
    nominal_bytes: int | None  # power of two in [below, above + 3], where the switch sits
    jump: float  # relative change of time beyond the trend: 0.5 = 50 % slower above

    def to_json(self) -> dict[str, Any]:
        """Plain dict with full key names."""
        return asdict(self)


@dataclass(frozen=True)
class HockneyFit:
    """t(m) = alpha + m / beta fitted to some sizes."""

    alpha_s: float
    beta_Bps: float | None  # None when time does not grow with size
    rms_relative_error: float
    n_sizes: int

    def to_json(self) -> dict[str, Any]:
        """Plain dict with full key names."""
        return asdict(self)

    def time_s(self, nbytes: ArrayLike) -> NDArray[np.float64]:
        """Model time for ``nbytes``."""
        m = np.asarray(nbytes, dtype=np.float64)
        slope = 0.0 if self.beta_Bps is None else 1.0 / self.beta_Bps
        return self.alpha_s + m * slope


@dataclass(frozen=True)
class Regime:
    """One protocol regime: its size range and Hockney fit."""

    first_bytes: int
    last_bytes: int
    fit: HockneyFit

    def to_json(self) -> dict[str, Any]:
        """Plain dict with full key names (the fit's fields inline)."""
        d = {"first_bytes": self.first_bytes, "last_bytes": self.last_bytes}
        d.update(asdict(self.fit))
        return d


def _sorted_positive(
    sizes: ArrayLike, times: ArrayLike
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    m = np.asarray(sizes, dtype=np.float64)
    t = np.asarray(times, dtype=np.float64)
    keep = (m > 0) & np.isfinite(t) & (t > 0)
    order = np.argsort(m[keep], kind="stable")
    return m[keep][order], t[keep][order]


def _step(
    x: NDArray[np.float64], y: NDArray[np.float64], gap: int, half: float, breaks: Sequence[int]
) -> float:
    """Step in log time across ``gap`` (between index gap and gap + 1); NaN if not testable."""
    n = x.size
    lo_bound = max((b + 1 for b in breaks if b < gap), default=0)
    hi_bound = min((b for b in breaks if b > gap), default=n - 1)
    left = np.arange(lo_bound, gap + 1)
    left = left[x[left] >= x[gap] - half]
    right = np.arange(gap + 1, hi_bound + 1)
    right = right[x[right] <= x[gap + 1] + half]
    if left.size < 2 or right.size < 2:
        return math.nan
    xl, yl, xr, yr = x[left], y[left], x[right], y[right]
    dxl, dxr = xl - xl.mean(), xr - xr.mean()
    sxx = float(np.dot(dxl, dxl) + np.dot(dxr, dxr))
    rise = float(yr.mean() - yl.mean())
    run = float(xr.mean() - xl.mean())
    if sxx >= _MIN_SPREAD:
        sxy = float(np.dot(dxl, yl - yl.mean()) + np.dot(dxr, yr - yr.mean()))
        slope = min(max(sxy / sxx, 0.0), _MAX_SLOPE)
        return rise - slope * run
    # No slope from within the sides: count only what no Hockney slope (0..1) explains.
    if rise > run:
        return rise - run
    return min(rise, 0.0)


def _nominal(below: int, above: int) -> int | None:
    p = 1 << int(math.floor(math.log2(above + PERTURBATION)))
    return p if p >= below else None


def find_thresholds(
    sizes: ArrayLike,
    times: ArrayLike,
    *,
    min_jump: float = MIN_JUMP,
    window_octaves: float = WINDOW_OCTAVES,
    noise_factor: float = NOISE_FACTOR,
    max_thresholds: int = MAX_THRESHOLDS,
) -> tuple[Threshold, ...]:
    """Protocol thresholds: steps in time between neighbouring sizes (see module docstring).

    Args:
        sizes: message sizes in bytes (0 is ignored).
        times: median time per message at each size, seconds.
        min_jump: smallest relative step reported (0.2 = 20 %, either direction).
        window_octaves: how far on each side of a gap the local trend is taken from.
        noise_factor: a step must also exceed this many robust spreads of all steps.
        max_thresholds: stop after this many.

    Returns:
        The thresholds, ascending by size.
    """
    m, t = _sorted_positive(sizes, times)
    if m.size < 4:
        return ()
    x, y = np.log(m), np.log(t)
    half = window_octaves * math.log(2.0)
    floor = math.log1p(min_jump)
    breaks: list[int] = []
    noise: float | None = None
    while len(breaks) < max_thresholds:
        steps = np.array([_step(x, y, g, half, breaks) for g in range(m.size - 1)])
        if noise is None:
            finite = steps[np.isfinite(steps)]
            if finite.size == 0:
                break
            noise = _MAD_TO_SIGMA * float(np.median(np.abs(finite - np.median(finite))))
        steps[breaks] = np.nan
        if not np.isfinite(steps).any():
            break
        gap = int(np.nanargmax(np.abs(steps)))
        if abs(steps[gap]) < max(floor, noise_factor * noise):
            break
        breaks.append(gap)
    out = []
    for gap in sorted(breaks):
        below, above = int(m[gap]), int(m[gap + 1])
        steps_now = _step(x, y, gap, half, [b for b in breaks if b != gap])
        jump = float(math.expm1(steps_now)) if math.isfinite(steps_now) else math.nan
        out.append(Threshold(below, above, _nominal(below, above), jump))
    return tuple(out)


def nonnegative_lstsq2(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The z >= 0 that minimises ||a z - b|| for a two-column ``a``: exact, no iteration.

    The problem is a convex quadratic: its minimum is the unconstrained one when that is
    feasible, and otherwise lies on the face z0 = 0 or z1 = 0, where it is the clamped
    one-column fit. Written out because importing scipy.optimize for its nnls costs half a
    second on every `show` (tests/unit/test_analysis.py checks it against SciPy's).
    """
    z = np.linalg.lstsq(a, b, rcond=None)[0]
    if bool(np.all(z >= 0)):
        return np.asarray(z, dtype=np.float64)
    best, best_cost = np.zeros(2), float(b @ b)
    for j in (0, 1):
        col = a[:, j]
        norm2 = float(col @ col)
        if norm2 <= 0:
            continue
        face = np.zeros(2)
        face[j] = max(0.0, float(col @ b) / norm2)
        cost = float(np.sum((a @ face - b) ** 2))
        if cost < best_cost:
            best, best_cost = face, cost
    return best


def hockney_fit(sizes: ArrayLike, times: ArrayLike) -> HockneyFit | None:
    """Fit t(m) = alpha + m / beta with alpha, 1/beta >= 0 (relative least squares).

    Returns:
        The fit, or None when no size has a positive time.
    """
    m = np.asarray(sizes, dtype=np.float64)
    t = np.asarray(times, dtype=np.float64)
    keep = np.isfinite(t) & (t > 0) & (m >= 0)
    m, t = m[keep], t[keep]
    if m.size == 0:
        return None
    a = np.column_stack([1.0 / t, m / t])
    scale = np.linalg.norm(a, axis=0)
    scale[scale == 0] = 1.0  # every size 0: the slope column is all zeros
    z = nonnegative_lstsq2(a / scale, np.ones(m.size))
    alpha, slope = float(z[0] / scale[0]), float(z[1] / scale[1])
    if slope * float(m.max()) <= 1e-9 * float(t.max()):
        slope = 0.0  # round-off that nnls leaves on a flat curve (1e-23 s/B): no bandwidth
    resid = 1.0 - (alpha + slope * m) / t
    rms = float(math.sqrt(float(np.mean(resid**2))))
    return HockneyFit(alpha, 1.0 / slope if slope > 0 else None, rms, int(m.size))


def piecewise_hockney(
    sizes: ArrayLike, times: ArrayLike, thresholds: Sequence[Threshold]
) -> tuple[Regime, ...]:
    """A Hockney fit per regime between ``thresholds`` (size 0 joins the first regime)."""
    m = np.asarray(sizes, dtype=np.float64)
    t = np.asarray(times, dtype=np.float64)
    edges = [-math.inf] + [th.below_bytes for th in thresholds] + [math.inf]
    regimes = []
    for lo, hi in zip(edges[:-1], edges[1:], strict=True):
        inside = (m > lo) & (m <= hi)
        fit = hockney_fit(m[inside], t[inside])
        if fit is not None:
            used = m[inside & np.isfinite(t) & (t > 0)]
            regimes.append(Regime(int(used.min()), int(used.max()), fit))
    return tuple(regimes)
