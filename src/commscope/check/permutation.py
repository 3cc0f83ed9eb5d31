"""The best split of each part of a series, and whether it holds: permutation tests, many at once.

Used by :mod:`commscope.check.changes`, whose docstring gives the method; here is how it is
computed. Every part of one search level is a candidate: its values (log scale) are
winsorized, centered, and scored at every split k by B_k = L C_k^2 / (k (L - k)); the best
score is tested against the best scores of random orderings of the same values.

**Permutations.** Parts of one length share their orderings: blocks of random orderings of
0..L-1 drawn from a fixed seed (``SEED``, L and the block's number), so an answer never
changes between calls and the orderings are made once for every figure of that length.
Many candidates still drawing are scored together by one matrix product per chunk of
orderings (:func:`best_scores`).

**Besag and Clifford's p-value.** For one candidate, orderings are drawn until
``EXCEEDANCES`` (h) of them reach its best score, p = h / r after r orderings, or until
``r_max``, p = (x + 1) / (r_max + 1) with x reached (Besag and Clifford 1991, "Sequential
Monte Carlo p-values"): valid whatever the sequence, and cheap where p is large.

**Only as far as Benjamini-Hochberg needs.** A candidate still drawing has a p-value the rule
above will give that lies between L = (x + 1) / (r_max + 1) (no ordering reaches it again)
and U = h / (r + h - x) (the next ones all do). After each block, Benjamini-Hochberg runs on
every candidate's U and on every L: a candidate kept on U is kept whatever comes, one not kept
on L is never kept, and both stop drawing. So the decisions are exactly those of drawing every
candidate to its end (by the monotonicity of the procedure), at a fraction of the cost when
many figures change at once; a stopped candidate reports U, an upper bound of its p-value.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats

EXCEEDANCES = 10  # Besag-Clifford's h: orderings at the observed best before stopping
MIN_PERMUTATIONS = 999
MAX_PERMUTATIONS = 99_999
WINSOR = 3.0  # robust standard deviations from a part's median a value is pulled in to
SEED = 2014  # the orderings' seed: the same answer on every call
MAD_SCALE = 1.4826  # 1 / 0.6745: MAD x 1.4826 estimates a normal's sigma
MEAN_AD_SCALE = 1.253314  # sqrt(pi / 2): MeanAD x 1.2533 estimates sigma
_BATCH = 32  # the first block of orderings; each next one doubles
_ELEMENTS = 1 << 22  # values permuted at once (32 MiB of float64)
# From this many rows on, of at most this length, one matrix product scores every ordering:
# it adds n x K products a row and ordering where the sums add n values, which BLAS wins
# at the nightly window's 30 runs (4x at 85 rows) and loses on a full series of 1,000.
PRODUCT_ROWS = 16
PRODUCT_LENGTH = 120


@dataclass(frozen=True)
class Candidate:
    """A part's best split and its test.

    Attributes:
        split: the first index after the split, within the part (None: every value alike).
        t: the two-sample t statistic there (winsorized values; inf: no spread within sides).
        p: its permutation p-value (an upper bound of it when the test stopped early).
        q: its Benjamini-Hochberg adjusted p-value among the family's candidates.
        kept: q is at most the false discovery rate.
    """

    split: int | None
    t: float
    p: float
    q: float
    kept: bool


def permutations_for(parts: int, fdr: float) -> int:
    """r_max: enough orderings for the smallest p-value to pass BH's first threshold."""
    need = math.ceil(parts / fdr) - 1 if parts else 0
    return int(min(MAX_PERMUTATIONS, max(MIN_PERMUTATIONS, need)))


def winsorized(y: np.ndarray) -> np.ndarray:
    """Each row of ``y`` (last axis) pulled in to ``WINSOR`` robust standard deviations.

    Around the row's median; the scale is 1.4826 MAD, else 1.2533 x the mean absolute
    deviation; a row of equal values is left as it is.
    """
    middle = np.median(y, axis=-1, keepdims=True)
    dev = np.abs(y - middle)
    scale = MAD_SCALE * np.median(dev, axis=-1, keepdims=True)
    scale = np.where(scale > 0, scale, MEAN_AD_SCALE * np.mean(dev, axis=-1, keepdims=True))
    out: np.ndarray = np.clip(y, middle - WINSOR * scale, middle + WINSOR * scale)
    return out


def scores(z: np.ndarray, m: int) -> np.ndarray:
    """B_k = L C_k^2 / (k (L - k)) for k = m .. L - m of centered ``z`` (last axis)."""
    n = z.shape[-1]
    k = np.arange(m, n - m + 1)
    c = np.cumsum(z, axis=-1)[..., m - 1 : n - m]
    out: np.ndarray = c * c * (n / (k * (n - k)))
    return out


def located(raw: np.ndarray, candidate: np.ndarray, m: int) -> np.ndarray:
    """Each row's split, moved to the best one within ``m`` runs of its candidate on ``raw``.

    Winsorizing caps a step's values at 3 robust standard deviations from the part's median:
    enough to test, but a step near the end then stands out little more than its neighbours'
    noise. The location is taken on the values as they are, near the candidate only, where
    one run far off cannot pull it further than the test's own choice.
    """
    n = raw.shape[1]
    found = scores(raw - raw.mean(axis=1, keepdims=True), m)  # column j: split j + m
    k = np.arange(m, n - m + 1)
    near = np.abs(k[None, :] - candidate[:, None]) <= m
    out: np.ndarray = np.where(near, found, -np.inf).argmax(axis=1) + m
    return out


@functools.lru_cache(maxsize=32)
def _orderings(n: int, block: int) -> np.ndarray:
    """The ``block``-th block of random orderings of n values, the same on every call."""
    size = int(min(_BATCH << min(block, 20), max(_BATCH, (_ELEMENTS // 4) // n)))
    rng = np.random.default_rng([SEED, n, block])
    out = rng.permuted(np.broadcast_to(np.arange(n, dtype=np.intp), (size, n)), axis=1)
    out.flags.writeable = False
    return out


class _Length:
    """The candidates of one length: their values, best scores and orderings drawn so far."""

    def __init__(self, rows: np.ndarray, raw: np.ndarray, m: int) -> None:
        self.rows = rows  # their indices in the family
        self.m = m
        z = winsorized(raw)
        self.z = z - z.mean(axis=1, keepdims=True)
        total = np.einsum("ij,ij->i", self.z, self.z)
        found = scores(self.z, m)
        self.best = found.max(axis=1)
        self.split = located(raw, found.argmax(axis=1) + m, m)
        between = found[np.arange(len(raw)), self.split - m]
        n = raw.shape[1]
        with np.errstate(divide="ignore", invalid="ignore"):
            self.t = np.sqrt((n - 2) * between / (total - between))
        self.varies = total > 0
        self.drawn = 0
        self.block = 0

    def draw(self, active: np.ndarray, seen: np.ndarray, r_max: int) -> np.ndarray:
        """Draw the next block for the ``active`` rows (their family indices, in this length).

        Updates ``seen`` (orderings reaching each row's best); returns, per active row, the
        number of orderings at which it reached ``EXCEEDANCES`` (0: not yet).
        """
        n = self.z.shape[1]
        block = _orderings(n, self.block)[: r_max - self.drawn]
        local = np.searchsorted(self.rows, active)
        stop_at = np.zeros(len(active), dtype=np.int64)
        tie = self.best * (1 - 1e-9)  # equal up to rounding counts as reaching it
        for part in _chunks(np.arange(len(active)), len(block)):
            rows = local[part]
            reach = best_scores(self.z[rows], block, self.m) >= tie[rows, None]
            count = seen[active[part], None] + np.cumsum(reach, axis=1)
            done = count[:, -1] >= EXCEEDANCES
            first = np.argmax(count >= EXCEEDANCES, axis=1)
            stop_at[part[done]] = self.drawn + first[done] + 1
            seen[active[part]] = count[:, -1]
        self.drawn += len(block)
        self.block += 1
        return stop_at


def best_scores(z: np.ndarray, block: np.ndarray, m: int) -> np.ndarray:
    """Each row's best score max_k B_k under each ordering of ``block`` (rows x orderings).

    ``z``: centered rows of one length n; ``block``: orderings of 0..n-1, one in each of its
    rows (one column of the result each).
    Few rows or long ones: each ordering's values gathered and summed (a cumulative sum).
    From ``PRODUCT_ROWS`` rows of at most ``PRODUCT_LENGTH`` values on:
    C_k = z @ [the value's position < k], one matrix product for every row at once, the
    orderings' indicator made once for all of them; the same sums added in another order
    (equal to rounding, far inside the 1e-9 that counts as a tie), four times faster at 85
    rows of 30 (a night's new change points among 10,000 figures).
    """
    n = z.shape[1]
    out = np.empty((len(z), len(block)))
    if len(z) < PRODUCT_ROWS or n > PRODUCT_LENGTH:
        for part in _chunks(np.arange(len(z)), len(block) * n):
            out[part] = scores(z[part][:, block], m).max(axis=2)
        return out
    k = np.arange(m, n - m + 1)
    weight = n / (k * (n - k))
    position = np.argsort(block, axis=1)  # where each value lands in each ordering
    step = max(1, _ELEMENTS // (max(len(z), n) * len(k)))  # orderings per product
    for start in range(0, len(block), step):
        first = position[start : start + step, :, None] < k  # (orderings, n, K)
        indicator = first.transpose(1, 0, 2).reshape(n, -1).astype(float)
        c = (z @ indicator).reshape(len(z), len(first), len(k))
        np.square(c, out=c)
        c *= weight
        out[:, start : start + len(first)] = c.max(axis=2)
    return out


def _chunks(rows: np.ndarray, per_row: int) -> Iterator[np.ndarray]:
    """``rows`` in chunks of at most ``_ELEMENTS`` values at ``per_row`` values each."""
    size = max(1, _ELEMENTS // max(1, per_row))
    for start in range(0, len(rows), size):
        yield rows[start : start + size]


def _kept(p: np.ndarray, fdr: float) -> np.ndarray:
    out: np.ndarray = stats.false_discovery_control(p, method="bh") <= fdr
    return out


def best_splits(
    parts: Sequence[np.ndarray], m: int, fdr: float, settle: bool = True
) -> list[Candidate]:
    """Each part's best split (``m`` or more values each side), tested together at ``fdr``.

    Args:
        parts: the parts' values (log scale), each at least 2 ``m`` long.
        m: the fewest values on each side of a split.
        fdr: the Benjamini-Hochberg level.
        settle: stop drawing for a candidate once its decision is settled (False draws every
            candidate to its end: the same decisions, at the full cost).
    """
    count = len(parts)
    if not count:
        return []
    r_max = permutations_for(count, fdr)
    by_length: dict[int, list[int]] = {}
    for i, y in enumerate(parts):
        by_length.setdefault(len(y), []).append(i)
    lengths = [
        _Length(np.array(rows), np.stack([parts[i] for i in rows]), m)
        for rows in by_length.values()
    ]
    split = np.zeros(count, dtype=np.int64)
    t = np.zeros(count)
    varies = np.zeros(count, dtype=bool)
    for g in lengths:
        split[g.rows], t[g.rows], varies[g.rows] = g.split, g.t, g.varies
    seen = np.zeros(count, dtype=np.int64)
    drawn = np.zeros(count, dtype=np.int64)
    p = np.where(varies, np.nan, 1.0)  # known p-values; NaN while drawing
    while True:
        for g in lengths:
            active = g.rows[np.isnan(p[g.rows])]
            if not active.size:
                continue
            stop_at = g.draw(active, seen, r_max)
            drawn[active] = g.drawn
            done = stop_at > 0
            p[active[done]] = EXCEEDANCES / stop_at[done]
            if g.drawn >= r_max:
                rest = active[~done]
                p[rest] = (seen[rest] + 1) / (r_max + 1)
        open_ = np.isnan(p)
        if not open_.any():
            break
        if not settle:
            continue
        # The p-value each open candidate can still reach: no ordering reaches its best
        # again (low), or the next ones all do (high; past r_max, as many as are left).
        low = np.where(open_, (seen + 1) / (r_max + 1), p)
        earliest = drawn + EXCEEDANCES - seen  # where the h-th could come at the soonest
        last = (np.minimum(EXCEEDANCES - 1, seen + r_max - drawn) + 1) / (r_max + 1)
        reachable = EXCEEDANCES / np.maximum(1, earliest)
        high = np.where(open_, np.where(earliest <= r_max, reachable, last), p)
        settled = open_ & (_kept(high, fdr) | ~_kept(low, fdr))
        p[settled] = high[settled]
    q = stats.false_discovery_control(p, method="bh")
    return [
        Candidate(
            int(split[i]) if varies[i] else None,
            float(t[i]),
            float(p[i]),
            float(q[i]),
            bool(varies[i] and q[i] <= fdr),
        )
        for i in range(count)
    ]
