"""What else ran while a run measured: other processes' CPU share and oversubscription.

The engine writes, per host, the ranks it ran, the CPUs their affinity allowed, the share of
the host's CPU time that other processes took while the ranks measured (from the host's CPU
counters, so it has their 10 ms tick as its step and says nothing about a short run), and the
largest share of the run one rank spent ready to run but waiting for a CPU (the kernel's
schedstat, in ns). A run earns a warning naming the host when others took more than
``BUSY_SHARE`` of its CPUs beyond what the counters' rounding can explain, when a rank waited
for a CPU more than ``WAIT_SHARE`` of the run, or when it ran more ranks than its ranks could
use CPUs: timings then include waiting for a core.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

BUSY_SHARE = 0.10  # others' share of a host's CPU time from which a run is called disturbed
WAIT_SHARE = 0.05  # share of the run a rank may wait for a CPU unremarked


@dataclass(frozen=True)
class HostLoad:
    """One host of a run, as the engine measured it."""

    nodes: tuple[str, ...]
    ranks: int
    cpus: int  # CPUs the ranks' affinity allowed
    host_cpus: int
    others_share: float | None  # None: the counters could not be read
    resolution: float  # the share's uncertainty from the counters' tick
    wait_share: float | None = None  # most a rank waited for a CPU, share of the run

    @property
    def oversubscribed(self) -> bool:
        """More ranks than CPUs they may run on."""
        return self.cpus > 0 and self.ranks > self.cpus

    @property
    def busy(self) -> bool:
        """Others took more than BUSY_SHARE, beyond the counters' rounding."""
        return self.others_share is not None and self.others_share - self.resolution > BUSY_SHARE

    @property
    def waited(self) -> bool:
        """A rank waited for a CPU more than WAIT_SHARE of the run."""
        return self.wait_share is not None and self.wait_share > WAIT_SHARE

    def warning(self) -> str:
        """One line saying what disturbed this host (empty when nothing did)."""
        where = ", ".join(self.nodes) or "a host"
        parts = []
        if self.busy:
            parts.append(
                f"other processes took {self.others_share:.0%} of the "
                f"{self.host_cpus} CPUs of {where} during the run"
            )
        if self.waited:
            parts.append(f"a rank on {where} waited for a CPU {self.wait_share:.0%} of the run")
        if self.oversubscribed:
            parts.append(f"{self.ranks} ranks shared {self.cpus} CPUs on {where} (oversubscribed)")
        return "; ".join(parts)


def hosts(end: dict[str, Any] | None) -> list[HostLoad]:
    """The load table of an end record (empty for runs that have none)."""
    out = []
    for h in (end or {}).get("load") or []:
        elapsed = h.get("elapsed_cpu_s") or 0.0
        share = h.get("others_share") if elapsed > 0 else None
        # Busy and idle time of every CPU are each rounded to one tick.
        resolution = 2 * h.get("tick_s", 0.01) * h["host_cpus"] / elapsed if elapsed else 1.0
        out.append(
            HostLoad(
                tuple(h.get("nodes", ())),
                int(h["ranks"]),
                int(h["cpus"]),
                int(h["host_cpus"]),
                share,
                resolution,
                h.get("ranks_wait_share"),
            )
        )
    return out


def warnings(ends: list[dict[str, Any] | None]) -> list[str]:
    """Warnings of a run's engine launches (segments), each host's once, in order."""
    found: list[str] = []
    for end in ends:
        for host in hosts(end):
            text = host.warning()
            if text and text not in found:
                found.append(text)
    return found
