"""One placement at one size, its predicted time beside its measured one.

``validate.predict`` measures and builds these; ``validate.pairs`` judges them two by two.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any


@dataclass(frozen=True)
class PlacementTime:
    """One placement at one size: predicted against measured."""

    placement: str
    nodes: int
    per_node: int
    bytes: int
    predicted_s: float
    measured_s: float
    relative_error: float  # (predicted - measured) / measured
    run_id: int
    # What TCP lost during the placement's run: its measured times carry the stalls.
    tcp_loss_warnings: tuple[str, ...] = ()
    # Nodes whose TCP ran BBR, which slows connections that idle between steps (no pair
    # table sees it): the measured time may exceed a right prediction.
    bbr_nodes: tuple[str, ...] = ()
    # The point's launches: without a valid one, these say why (late starts: ranks waited
    # for a core longer than the share of the launch a start may be late by; else overruns).
    launches: int = 0
    valid_launches: int = 0
    late_launches: int = 0  # started late on some rank (overrun as well or not)
    # Standard error of measured_s: MPIPerf's SE of one run; over several runs the larger of
    # the spread between them and their own SEs (``over_runs``).
    measured_se_s: float = math.nan
    answer_wait_s: float = 0.0  # of predicted_s: answers waiting behind busy queues
    # The point's launches that began later ran longer than their delay explains
    # (``analysis.start_skew``): its measured time depends on how well its ranks started.
    start_skew: str = ""
    run_times_s: tuple[float, ...] = ()  # each run's measured time (NaN: no valid launch)

    def to_json(self) -> dict[str, Any]:
        """Plain dict with full key names."""
        return asdict(self)

    def unmeasured_reason(self) -> str:
        """Why the point has no time, in a few words (empty when it has one)."""
        if math.isfinite(self.measured_s):
            return ""
        if not self.launches:
            return "no launch ran"
        late = self.late_launches
        invalid = self.launches - self.valid_launches
        parts = [f"{late} started late (a rank waited for a core)"] if late else []
        if invalid > late:  # a launch both late and overrun counts as late
            parts.append(f"{invalid - late} overran their window")
        return f"{self.valid_launches} valid of {self.launches} launches; " + ", ".join(parts)
