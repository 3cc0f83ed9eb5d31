"""HPL simulated against HPL measured, grid by grid.

Rechistov et al. 2012 ("Simulation of a cluster: the Simics-based approach") judged their
model by HPL's GFLOPS on the real cluster beside the simulated one. Here each grid has one or
more measured solves and one simulated solve; the measured solves' spread is the run-to-run
noise, and only grids whose measured rates differ by more than that noise have an order the
simulation can be held to.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from itertools import combinations
from typing import Any


@dataclass(frozen=True)
class GridAgreement:
    """One grid: its measured solves and its simulated solve, GFLOPS."""

    grid: str
    measured: tuple[float, ...]
    simulated: float

    @property
    def measured_gflops(self) -> float:
        """The median of the measured solves."""
        return statistics.median(self.measured)

    @property
    def spread(self) -> float:
        """(max - min) / median of the measured solves: 0 with one solve."""
        return (max(self.measured) - min(self.measured)) / self.measured_gflops

    @property
    def ratio(self) -> float:
        """Simulated over measured GFLOPS."""
        return self.simulated / self.measured_gflops

    def to_json(self) -> dict[str, Any]:
        """Plain dict for JSON output."""
        return {
            "grid": self.grid,
            "measured_gflops": list(self.measured),
            "measured_median": self.measured_gflops,
            "spread": self.spread,
            "simulated_gflops": self.simulated,
            "ratio": self.ratio,
        }


@dataclass(frozen=True)
class HPLAgreement:
    """Every grid, and how the simulated order of the grids compares with the measured one."""

    grids: tuple[GridAgreement, ...]

    @property
    def noise(self) -> float:
        """The run-to-run noise: the largest spread of any grid's measured solves."""
        return max(g.spread for g in self.grids)

    def measured_order(self) -> list[str]:
        """Grids fastest first, by the measured medians."""
        return [g.grid for g in sorted(self.grids, key=lambda g: -g.measured_gflops)]

    def simulated_order(self) -> list[str]:
        """Grids fastest first, by the simulated rates."""
        return [g.grid for g in sorted(self.grids, key=lambda g: -g.simulated)]

    def resolved_pairs(self) -> list[tuple[GridAgreement, GridAgreement]]:
        """Pairs of grids whose measured medians differ by more than the noise."""
        return [
            (a, b)
            for a, b in combinations(self.grids, 2)
            if abs(a.measured_gflops - b.measured_gflops)
            > self.noise * max(a.measured_gflops, b.measured_gflops)
        ]

    def disagreeing_pairs(self) -> list[tuple[str, str]]:
        """Resolved pairs the simulation orders the other way round."""
        return [
            (a.grid, b.grid)
            for a, b in self.resolved_pairs()
            if (a.measured_gflops - b.measured_gflops) * (a.simulated - b.simulated) <= 0
        ]

    def to_json(self) -> dict[str, Any]:
        """Plain dict for JSON output."""
        return {
            "grids": [g.to_json() for g in self.grids],
            "noise": self.noise,
            "measured_order": self.measured_order(),
            "simulated_order": self.simulated_order(),
            "same_order": self.measured_order() == self.simulated_order(),
            "resolved_pairs": [[a.grid, b.grid] for a, b in self.resolved_pairs()],
            "disagreeing_pairs": [list(p) for p in self.disagreeing_pairs()],
        }


def compare(measured: dict[str, list[float]], simulated: dict[str, float]) -> HPLAgreement:
    """Measured solves (GFLOPS per grid) against one simulated rate per grid.

    Raises:
        ValueError: a grid lacks one side, or has no measured solve.
    """
    if set(measured) != set(simulated):
        raise ValueError(
            f"grids differ: measured {sorted(measured)}, simulated {sorted(simulated)}"
        )
    if not measured or any(not v for v in measured.values()):
        raise ValueError("every grid needs at least one measured solve")
    return HPLAgreement(tuple(GridAgreement(g, tuple(measured[g]), simulated[g]) for g in measured))
