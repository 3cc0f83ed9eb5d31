"""What the network lost while a run measured: TCP segments resent and retransmission timeouts.

The engine writes, per network namespace (a host, or a node of the virtual cluster), how many
new TCP segments it sent, how many it resent and how many retransmission timeouts fired while
the ranks measured (the kernel counts a resent segment apart from the new ones). The counters
cover the whole namespace, so other traffic of the host counts too.
A timeout stalls its connection for at least 200 ms (Linux's minimum RTO): any timing that
waited on it is that much too slow, so one timeout earns a warning. Resent segments alone
cost less (fast retransmit recovers within a round trip), so they earn one only above
``RESENT_SHARE`` of at least ``MIN_SEGMENTS`` segments sent, where the share is no accident
of a few segments.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

RESENT_SHARE = 0.01  # resent / sent from which a namespace's link is called lossy
MIN_SEGMENTS = 1000  # segments sent below which a share says nothing


@dataclass(frozen=True)
class NamespaceLoss:
    """One network namespace of a run: what its TCP sent and resent while the ranks measured."""

    nodes: tuple[str, ...]
    out_segs: int | None  # new segments sent; None: the counter could not be read
    retrans_segs: int | None
    timeouts: int | None

    @property
    def resent_share(self) -> float | None:
        """Resent segments per new segment sent (None when unknown or nothing was sent)."""
        if self.out_segs is None or self.retrans_segs is None or self.out_segs == 0:
            return None
        return self.retrans_segs / self.out_segs

    @property
    def lossy(self) -> bool:
        """A timeout fired, or over RESENT_SHARE of at least MIN_SEGMENTS was resent."""
        if self.timeouts:
            return True
        share = self.resent_share
        return share is not None and (self.out_segs or 0) >= MIN_SEGMENTS and share > RESENT_SHARE

    def warning(self) -> str:
        """One line naming the namespace and what it lost (empty when nothing was)."""
        if not self.lossy:
            return ""
        where = ", ".join(self.nodes) or "a host"
        parts = []
        if self.out_segs is not None and self.retrans_segs is not None:
            parts.append(f"sent {self.out_segs} segments and resent {self.retrans_segs}")
        if self.timeouts:
            parts.append(f"timed out {self.timeouts} time(s) (each stalls a connection >= 200 ms)")
        return f"TCP on {where} " + " and ".join(parts)


def _count(value: Any) -> int | None:
    ok = isinstance(value, int) and not isinstance(value, bool) and value >= 0
    return int(value) if ok else None


def namespaces(end: dict[str, Any] | None) -> list[NamespaceLoss]:
    """The TCP loss table of an end record (empty for runs that have none)."""
    return [
        NamespaceLoss(
            tuple(str(n) for n in ns.get("nodes", ())),
            _count(ns.get("out_segs")),
            _count(ns.get("retrans_segs")),
            _count(ns.get("timeouts")),
        )
        for ns in (end or {}).get("tcp_loss") or []
    ]


def warnings(ends: list[dict[str, Any] | None]) -> list[str]:
    """Warnings of a run's engine launches (segments), each namespace's once, in order."""
    found: list[str] = []
    for end in ends:
        for ns in namespaces(end):
            text = ns.warning()
            if text and text not in found:
                found.append(text)
    return found
