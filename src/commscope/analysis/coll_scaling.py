"""Collective time against the number of processes (``commscope run coll --procs 2,4,8``).

Each point was timed by the MPIPerf method (Kurnosov 2012, MPIPerf) on the first p ranks of
the job; this puts the summaries of one operation and size side by side over p. The
link-bound model of a bandwidth-bound allgather (every rank must receive the (p - 1) blocks of
the others through its own link, whatever the algorithm: Chan, Heimlich, Purkayastha and van de
Geijn 2007, "Collective communication: theory, practice, and experience") predicts time
growing as (p - 1) * m / bandwidth; ``link_bound_ratio`` gives that growth between two p.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from commscope.analysis.coll import CollSummary


@dataclass(frozen=True)
class ScalingRow:
    """One operation at one size over the process counts it was measured on (p ascending)."""

    op: str
    bytes: int
    procs: tuple[int, ...]
    times_s: tuple[float, ...]  # T per p; NaN where no launch was valid
    ci_low_s: tuple[float, ...]
    ci_high_s: tuple[float, ...]
    flagged: tuple[bool, ...]  # the point carries a warning (see analysis.coll.WARNINGS)

    def time_at(self, p: int) -> float:
        """T at p processes (NaN when p was not measured)."""
        return self.times_s[self.procs.index(p)] if p in self.procs else math.nan

    def growth(self) -> float:
        """T at the largest p over T at the smallest (NaN when either is missing or 0)."""
        first, last = self.times_s[0], self.times_s[-1]
        return last / first if first > 0 and math.isfinite(last) else math.nan

    def to_json(self) -> dict[str, Any]:
        """Plain dict; NaN becomes None."""

        def clean(xs: tuple[float, ...]) -> list[float | None]:
            return [None if math.isnan(x) else x for x in xs]

        return {
            "op": self.op,
            "bytes": self.bytes,
            "procs": list(self.procs),
            "times_s": clean(self.times_s),
            "ci_low_s": clean(self.ci_low_s),
            "ci_high_s": clean(self.ci_high_s),
            "flagged": list(self.flagged),
            "growth": None if math.isnan(self.growth()) else self.growth(),
        }


def scaling(rows: list[CollSummary]) -> list[ScalingRow]:
    """One row per operation and size measured at two or more process counts.

    Args:
        rows: summaries of one run (any order); rows of one process count alone are left out.

    Returns:
        Rows ordered by operation and size, process counts ascending within each.
    """
    by_point: dict[tuple[str, int], dict[int, CollSummary]] = {}
    for s in rows:
        by_point.setdefault((s.op, s.bytes), {})[s.nranks] = s
    out = []
    for (op, size), at in sorted(by_point.items()):
        if len(at) < 2:
            continue
        ps = tuple(sorted(at))
        out.append(
            ScalingRow(
                op,
                size,
                ps,
                tuple(at[p].time_s for p in ps),
                tuple(at[p].ci_low_s for p in ps),
                tuple(at[p].ci_high_s for p in ps),
                tuple(bool(at[p].warnings) for p in ps),
            )
        )
    return out


def process_counts(rows: list[ScalingRow]) -> tuple[int, ...]:
    """Every process count any row has, ascending (the scaling table's columns)."""
    return tuple(sorted({p for r in rows for p in r.procs}))


def link_bound_ratio(p_small: int, p_large: int) -> float:
    """How much a link-bound allgather's time grows from p_small to p_large processes.

    Each rank receives (p - 1) blocks through its own link, so T is proportional to p - 1.
    """
    if p_small < 2 or p_large < p_small:
        raise ValueError(f"process counts {p_small}, {p_large}: need 2 <= small <= large")
    return (p_large - 1) / (p_small - 1)
