"""How far the tables' own noise moves a prediction: the t(m, cf) tables resampled.

A table cell is the median of its repetitions; the same tables measured again would read
other medians, and every prediction priced from them would move. Drawing each cell's
repetitions again with replacement (Efron's bootstrap) and predicting again, ``RESAMPLES``
times, gives each placement's predicted time a spread, and each pair of placements the share
of resampled tables under which the first is the faster. A pair that the tables order the
same way in at least ``SUPPORT`` of them is resolved; otherwise the tables cannot tell the
two apart, and their predicted gap is no order to act on or to check: recursive doubling's
2x2 and 4x1 differ by one intra-node step, a few tenths of a per cent of their time, less
than the noise of the NIC cells that price both.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from commscope.analysis import contention
from commscope.data.records import Contention
from commscope.predict.cost import CostModel

RESAMPLES = 200
SUPPORT = 0.95  # share of resampled tables that must agree on an order
SEED = 20180524  # fixed: the same tables give the same spread every time


def redrawn(cells: Sequence[Contention], rng: np.random.Generator) -> list[Contention]:
    """The cells with their repetitions drawn again, with replacement, as many as measured."""
    out = []
    for cell in cells:
        n = len(cell.samples_s)
        picks = rng.integers(0, n, size=n) if n else np.zeros(0, dtype=np.int64)
        out.append(dataclasses.replace(cell, samples_s=tuple(cell.samples_s[i] for i in picks)))
    return out


def resampled_costs(
    cells: Sequence[Contention],
    cost_of: Callable[[dict[str, contention.LevelTable]], CostModel],
    resamples: int = RESAMPLES,
    seed: int = SEED,
) -> list[CostModel]:
    """``resamples`` cost models, each priced from the tables of redrawn ``cells``."""
    rng = np.random.default_rng(seed)
    return [cost_of(contention.tables(redrawn(cells, rng))) for _ in range(resamples)]


@dataclass(frozen=True)
class Spread:
    """Predicted times of the same placements under each resampled table.

    ``times_s[r, i]`` is placement i's time under resample r.
    """

    times_s: NDArray[np.float64]

    def faster_share(self, i: int, j: int) -> float:
        """Share of resamples under which placement i is strictly faster than j."""
        return float(np.mean(self.times_s[:, i] < self.times_s[:, j]))

    def fastest_share(self, i: int) -> float:
        """Share of resamples under which no placement is faster than i (a tie counts for each)."""
        t = self.times_s
        others = np.delete(t, i, axis=1)
        return float(np.mean(t[:, i] <= others.min(axis=1)))

    def resolved(self, i: int, j: int) -> bool:
        """The tables order i and j the same way in at least SUPPORT of the resamples."""
        return max(self.faster_share(i, j), self.faster_share(j, i)) >= SUPPORT

    def gap_rel_error(self, i: int, j: int) -> float:
        """Standard deviation of the relative gap (t_i - t_j) / mean over the resamples."""
        a, b = self.times_s[:, i], self.times_s[:, j]
        ok = np.isfinite(a) & np.isfinite(b)
        if ok.sum() < 2:
            return math.inf
        return float(np.std((a[ok] - b[ok]) / ((a[ok] + b[ok]) / 2)))


def spread(predicted: Callable[[CostModel], list[float]], costs: Sequence[CostModel]) -> Spread:
    """Each cost model's predicted times (``predicted(cost)``: one per placement, in order)."""
    return Spread(np.array([predicted(cost) for cost in costs], dtype=float))
