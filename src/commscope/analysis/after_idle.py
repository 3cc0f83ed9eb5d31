"""What the first exchange after an idle period costs (``run contention --idle S``).

Over TCP, a connection that sent nothing for longer than its retransmission timeout (200 ms
at least) sends again from the initial window of 10 segments when
net.ipv4.tcp_slow_start_after_idle is 1 and the congestion control leaves the window to TCP
(the kernel exempts BBR). The window then grows back in slow start, one doubling per round
trip: that costs a few round trips where the link's bandwidth-delay product is larger than
those 10 segments, and nothing where it is smaller. A collective whose calls are spaced
wider than the RTO, or that leaves a connection idle that long between its steps, meets it
on every call. With --idle, each repetition of a t(m, cf) cell starts after the pairs sent
nothing for S seconds, and its first exchange is timed on its own before the warm ones.

A cell's cost is the median exchange after idle less the median warm one (both the slowest
process of the pairs, as t(m, cf) is). It is called a cost only when every exchange after
idle was slower than every warm one: with n repetitions of each, chance orders them so with
probability 1 / C(2n, n) (1 in 252 for the default 5), where the machine's noise is alike
for both.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from commscope.analysis.contention import LEVELS
from commscope.data.records import Contention


@dataclass(frozen=True)
class AfterIdle:
    """One cell: its warm exchanges and the first exchanges after idle, in exchange times."""

    level: str
    cf: int
    bytes: int
    idle_s: float
    warm_s: tuple[float, ...]  # per repetition, the slowest process's exchange time
    after_s: tuple[float, ...]

    @property
    def warm_median_s(self) -> float:
        """Median warm exchange."""
        return float(np.median(self.warm_s))

    @property
    def after_median_s(self) -> float:
        """Median first exchange after idle."""
        return float(np.median(self.after_s))

    @property
    def cost_s(self) -> float:
        """Median exchange after idle less the median warm exchange."""
        return self.after_median_s - self.warm_median_s

    @property
    def every_one_slower(self) -> bool:
        """Every exchange after idle took longer than every warm one."""
        return min(self.after_s) > max(self.warm_s)

    def to_json(self) -> dict[str, Any]:
        """Plain dict: times in seconds."""
        return {
            "level": self.level,
            "cf": self.cf,
            "bytes": self.bytes,
            "idle_s": self.idle_s,
            "warm_exchange_s": self.warm_median_s,
            "after_idle_exchange_s": self.after_median_s,
            "cost_s": self.cost_s,
            "every_one_slower": self.every_one_slower,
        }


def _exchanges(samples: tuple[tuple[float, ...], ...]) -> tuple[float, ...]:
    # A sample is half its exchange (two transfers per exchange, as t(m, cf) is).
    return tuple(2.0 * max(rep) for rep in samples)


def cells(points: list[Contention]) -> list[AfterIdle]:
    """The cells measured after idle, by level (hierarchy order), cf and size."""
    found = [
        AfterIdle(
            p.level, p.cf, p.bytes, p.idle_s, _exchanges(p.samples_s), _exchanges(p.after_idle_s)
        )
        for p in points
        if p.after_idle_s
    ]
    return sorted(found, key=lambda c: (LEVELS.index(c.level), c.cf, c.bytes))
