"""Run-to-run variances borrowed across related figures: the moderated t of empirical Bayes.

Smyth, G. K. (2004), "Linear models and empirical Bayes methods for assessing differential
expression in microarray experiments" (the method of the limma package). A baseline of a few
runs estimates each figure's run-to-run variance s_g^2 from d_g = n_g - 1 degrees of freedom:
with two or three runs the estimate is nearly useless on its own (its 99 % quantile of t has
31.8 or 7.0 in front of it). Figures of one family (the same measured quantity at other sizes
and on other pairs, see :func:`family_of`) vary by similar amounts, and their variances say
what a figure's variance is likely to be before its own runs are seen.

Model and assumption: within a family the true variances sigma_g^2 are exchangeable draws
from a scaled inverse chi-square prior with d0 degrees of freedom and scale s0^2,

    1 / sigma_g^2 ~ chi^2_{d0} / (d0 s0^2),   s_g^2 | sigma_g^2 ~ sigma_g^2 chi^2_{d_g} / d_g.

Then s_g^2 / s0^2 follows Fisher's F(d_g, d0), and the prior is fitted by the method of
moments on log s_g^2 (limma's ``fitFDist`` without covariate):

    e_g = log s_g^2 - digamma(d_g / 2) + log(d_g / 2)
    mean(e) = log s0^2 - digamma(d0 / 2) + log(d0 / 2)
    var(e) - mean(trigamma(d_g / 2)) = trigamma(d0 / 2)

trigamma is inverted with Brent's method. When the observed variance of the e_g does not
exceed what sampling alone gives (the left side is <= 0), the figures' variances are all one
variance seen through noise: d0 = infinity and s0^2 = exp(mean(e)). The posterior variance
and its degrees of freedom are

    s~_g^2 = (d0 s0^2 + d_g s_g^2) / (d0 + d_g),   df_g = d0 + d_g,

the latter capped, as in limma, at the family's total d_g (no figure can know more than all
the family's runs say together). Under the model (s_run - mean) / (s~ sqrt(1 + 1/n)) follows
Student's t with df_g exactly.

No moderation (d0 = 0, the figure's own s_g^2 and d_g) when the family has fewer than
``MIN_FIGURES`` figures with d_g >= 1: two variances give no estimate of their spread.

Failure mode: a family whose figures do not vary alike (quiet intra-node latencies beside
noisy inter-node ones) breaks the exchangeability. The fit then sees a wide spread of log
s_g^2 and returns a small d0, so little is borrowed; but what is borrowed pulls the noisy
figures' variances down (fewer false alarms caught by their own spread) and the quiet ones'
up (less sensitivity). A single wild variance inflates var(e) and lowers d0 in the same way
(limma's robust variant, not used here, trims such variances).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from scipy import optimize, special

MIN_FIGURES = 3  # figures with d_g >= 1 a family needs before its prior is fitted
SIZE_LABELS = ("bytes",)


@dataclass(frozen=True)
class Prior:
    """A family's prior: d0 (0: none fitted, inf: one common variance) and s0^2."""

    d0: float
    s0_squared: float
    figures: int  # figures with d_g >= 1 it was fitted from
    total_df: float  # the family's sum of d_g: the most a posterior's df may reach

    def posterior(self, s_squared: float, d: int) -> tuple[float, float]:
        """(s~^2, df) of a figure with sample variance ``s_squared`` on ``d`` df.

        With no prior (d0 = 0) the figure's own: (s_squared, d); d = 0 then gives df 0.
        """
        if self.d0 == 0 or self.figures < MIN_FIGURES:
            return s_squared, float(d)
        if math.isinf(self.d0):
            return self.s0_squared, self.total_df
        s2 = (self.d0 * self.s0_squared + d * s_squared) / (self.d0 + d)
        return s2, min(self.d0 + d, self.total_df)


NO_PRIOR = Prior(0.0, 0.0, 0, 0.0)


def family_of(name: str, labels: Mapping[str, str]) -> str:
    """The family a figure's variance is borrowed within: the figure's name.

    One family holds every size and pair of a quantity (all ``p2p_latency_seconds``). Size
    bands (eager and rendezvous messages) are not split apart: a p2p baseline measures two
    or three sizes on two or three pairs, so a family per band would hold fewer than
    ``MIN_FIGURES`` figures and borrow nothing; and where sizes do vary unlike each other,
    the fit sees it (a wide spread of log s_g^2) and returns a small d0, borrowing little.
    ``labels`` are taken for a finer rule to come, and not used.
    """
    del labels
    return name


def trigamma_inverse(y: float) -> float:
    """The x > 0 with trigamma(x) = y (trigamma falls from infinity to 0 on x > 0)."""
    if not y > 0:
        raise ValueError(f"trigamma takes only positive values, not {y}")

    def f(x: float) -> float:
        return float(special.polygamma(1, x)) - y

    lo, hi = 1.0, 1.0
    while f(lo) < 0:
        lo /= 2
    while f(hi) > 0:
        hi *= 2
    return float(optimize.brentq(f, lo, hi, xtol=1e-12, rtol=1e-12))


def fit_prior(variances: Sequence[float], dfs: Sequence[int]) -> Prior:
    """The prior (d0, s0^2) of a family from its figures' variances and degrees of freedom.

    Figures with d_g = 0 (one run) say nothing of the spread and are left out of the fit.
    A variance of exactly 0 (identical run centers) has no logarithm: as in limma, the
    variances are held at least 1e-5 times their median (the median itself, if 0, at 1).
    """
    pairs = [(float(s), int(d)) for s, d in zip(variances, dfs, strict=True) if d >= 1]
    total = float(sum(d for _, d in pairs))
    if len(pairs) < MIN_FIGURES:
        return Prior(0.0, 0.0, len(pairs), total)
    s2 = np.maximum(np.array([s for s, _ in pairs]), 0.0)
    d = np.array([d for _, d in pairs], dtype=float)
    middle = float(np.median(s2)) or 1.0
    s2 = np.maximum(s2, 1e-5 * middle)
    e = np.log(s2) - special.digamma(d / 2) + np.log(d / 2)
    e_mean = float(np.mean(e))
    e_var = float(np.var(e, ddof=1)) - float(np.mean(special.polygamma(1, d / 2)))
    if e_var <= 0:
        return Prior(math.inf, math.exp(e_mean), len(pairs), total)
    d0 = 2 * trigamma_inverse(e_var)
    s0_squared = math.exp(e_mean + float(special.digamma(d0 / 2)) - math.log(d0 / 2))
    return Prior(d0, s0_squared, len(pairs), total)
