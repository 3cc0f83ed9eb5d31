"""Contention tables: t(m, cf) per channel level and the degradation t(m,cf)/t(m,1).

As in Peryshkova and Kurnosov 2018 (contention-aware placement). A cell is the median over
repetitions of the slowest process of the cf pairs. The paper highlights cells whose
degradation exceeds cf: sharing the channel then costs more than running the transfers one
after another, so that many processes per channel is too many.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from commscope.data.records import Contention

LEVELS = ("memory", "socket", "nic", "fabric")
LEVEL_NAMES = {
    "memory": "memory controller",
    "socket": "socket interconnect",
    "nic": "NIC",
    "fabric": "fabric (disjoint node pairs)",
}


@dataclass(frozen=True)
class LevelTable:
    """t(m, cf) for one level: rows are sizes, columns are cf values (NaN where not measured)."""

    level: str
    sizes: NDArray[np.int64]
    cfs: NDArray[np.int64]
    t_s: NDArray[np.float64] = field(repr=False)

    @property
    def degradation(self) -> NDArray[np.float64]:
        """t(m, cf) / t(m, 1); NaN where either is missing."""
        if 1 not in self.cfs:
            return np.full_like(self.t_s, np.nan)
        base = self.t_s[:, list(self.cfs).index(1)][:, None]
        with np.errstate(invalid="ignore", divide="ignore"):
            return self.t_s / base

    @property
    def above_cf(self) -> NDArray[np.bool_]:
        """Cells whose degradation exceeds cf (the paper's highlighted cells)."""
        return self.degradation > self.cfs[None, :]

    def max_processes(self) -> dict[int, int]:
        """Per size: the largest cf whose degradation stays at or below cf (0 if none)."""
        out = {}
        for i, m in enumerate(self.sizes):
            ok = [
                int(c)
                for j, c in enumerate(self.cfs)
                if not math.isnan(self.degradation[i, j]) and not self.above_cf[i, j]
            ]
            out[int(m)] = max(ok, default=0)
        return out

    def to_json(self) -> dict[str, Any]:
        """Plain dict: sizes in bytes, times in seconds, NaN as None."""

        def clean(a: NDArray[Any]) -> list[list[Any]]:
            return [
                [None if isinstance(v, float) and math.isnan(v) else v for v in row]
                for row in a.tolist()
            ]

        return {
            "level": self.level,
            "bytes": self.sizes.tolist(),
            "cf": self.cfs.tolist(),
            "t_s": clean(self.t_s),
            "degradation": clean(self.degradation),
            "above_cf": self.above_cf.tolist(),
            "max_processes": {str(k): v for k, v in self.max_processes().items()},
        }


def tables(points: list[Contention]) -> dict[str, LevelTable]:
    """One t(m, cf) table per level present, levels in hierarchy order."""
    out = {}
    for level in LEVELS:
        mine = [p for p in points if p.level == level]
        if not mine:
            continue
        sizes = np.array(sorted({p.bytes for p in mine}), dtype=np.int64)
        cfs = np.array(sorted({p.cf for p in mine}), dtype=np.int64)
        t = np.full((sizes.size, cfs.size), np.nan)
        for p in mine:
            t[np.searchsorted(sizes, p.bytes), np.searchsorted(cfs, p.cf)] = p.median_s
        out[level] = LevelTable(level, sizes, cfs, t)
    return out
