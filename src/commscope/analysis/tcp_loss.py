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

Each namespace also names its TCP congestion control. Under BBR a connection that idled while
its rank exchanged with other peers restarts well below the link rate, which pair
measurements never see: :func:`bbr_nodes` finds the namespaces that ran it. And each
names how much one socket may queue below TCP (net.ipv4.tcp_limit_output_bytes): where that is
more than a node's shaped queue holds, a fan-out's sockets overflow it into drops and timeouts,
so runs under different limits are not alike. And each names
whether TCP restarts a connection after idle (net.ipv4.tcp_slow_start_after_idle, 1 by default):
a connection that sent nothing for longer than its RTO (200 ms at least) starts again from the
initial window of 10 segments, and one that used less than its window for that long has the
window cut (RFC 2861), unless its congestion control sets the rate itself, as BBR does (the
kernel skips both then). Growing the window back costs a few round trips where a link's
bandwidth-delay product exceeds those 10 segments.
:func:`idle_restart_nodes` finds the namespaces where it applies.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from commscope.strict import CONGESTION_CONTROL_NAME
from commscope.units import size_text

T = TypeVar("T")

RESENT_SHARE = 0.01  # resent / sent from which a namespace's link is called lossy
MIN_SEGMENTS = 1000  # segments sent below which a share says nothing


@dataclass(frozen=True)
class NamespaceLoss:
    """One network namespace of a run: what its TCP sent and resent while the ranks measured."""

    nodes: tuple[str, ...]
    out_segs: int | None  # new segments sent; None: the counter could not be read
    retrans_segs: int | None
    timeouts: int | None
    congestion_control: str = ""  # net.ipv4.tcp_congestion_control; "": not recorded
    tcp_limit_output_bytes: int | None = None  # None: not recorded
    tcp_slow_start_after_idle: int | None = None  # 1: idle connections restart; None: unknown

    @property
    def restarts_after_idle(self) -> bool:
        """Whether an idle connection here starts again from the initial window.

        The kernel restarts it when the setting is on and the congestion control leaves the
        window to TCP (BBR sets the rate itself, and is exempt); unknown counts as no.
        """
        cc = self.congestion_control
        return bool(self.tcp_slow_start_after_idle) and cc not in ("", "bbr")

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


def _congestion(value: Any) -> str:
    return value if isinstance(value, str) and CONGESTION_CONTROL_NAME.fullmatch(value) else ""


def namespaces(end: dict[str, Any] | None) -> list[NamespaceLoss]:
    """The TCP loss table of an end record (empty for runs that have none)."""
    return [
        NamespaceLoss(
            tuple(str(n) for n in ns.get("nodes", ())),
            _count(ns.get("out_segs")),
            _count(ns.get("retrans_segs")),
            _count(ns.get("timeouts")),
            _congestion(ns.get("congestion_control")),
            _count(ns.get("tcp_limit_output_bytes")),
            _count(ns.get("tcp_slow_start_after_idle")),
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


def _nodes_by(
    ends: list[dict[str, Any] | None], setting: Callable[[NamespaceLoss], T | None]
) -> dict[T, tuple[str, ...]]:
    """Each recorded value of a namespace setting with the nodes that had it, in order."""
    found: dict[T, list[str]] = {}
    for end in ends:
        for ns in namespaces(end):
            value = setting(ns)
            if value is not None:
                nodes = found.setdefault(value, [])
                nodes += [n for n in ns.nodes if n not in nodes]
    return {value: tuple(nodes) for value, nodes in found.items()}


def congestion_controls(ends: list[dict[str, Any] | None]) -> dict[str, tuple[str, ...]]:
    """The congestion controls a run's namespaces ran, each with its nodes, in order."""
    return _nodes_by(ends, lambda ns: ns.congestion_control or None)


def socket_queue_limits(ends: list[dict[str, Any] | None]) -> dict[int, tuple[str, ...]]:
    """The bytes one TCP socket could queue below TCP, each with its nodes, in order."""
    return _nodes_by(ends, lambda ns: ns.tcp_limit_output_bytes)


def idle_restarts(ends: list[dict[str, Any] | None]) -> dict[int, tuple[str, ...]]:
    """The tcp_slow_start_after_idle values a run's namespaces had, each with its nodes."""
    return _nodes_by(ends, lambda ns: ns.tcp_slow_start_after_idle)


def idle_restart_nodes(ends: list[dict[str, Any] | None]) -> tuple[str, ...]:
    """Nodes where an idle connection restarts, when the run crossed two namespaces or more."""
    if crossed_namespaces(ends) < 2:
        return ()
    found = [
        n for end in ends for ns in namespaces(end) if ns.restarts_after_idle for n in ns.nodes
    ]
    return tuple(dict.fromkeys(found))


def crossed_namespaces(ends: list[dict[str, Any] | None]) -> int:
    """How many network namespaces (hosts, vcluster nodes) the run's ranks ran in."""
    return len({ns.nodes for end in ends for ns in namespaces(end)})


def bbr_nodes(ends: list[dict[str, Any] | None]) -> tuple[str, ...]:
    """Nodes that ran BBR, when the run crossed two namespaces or more (else none)."""
    crossed = crossed_namespaces(ends) > 1
    return congestion_controls(ends).get("bbr", ()) if crossed else ()


def _across_nodes_text(ends: list[dict[str, Any] | None], found: dict[str, tuple[str, ...]]) -> str:
    """``VALUE on every node`` or ``A on n1; B on n2``, for a run across nodes; else ''."""
    if crossed_namespaces(ends) < 2 or not found:
        return ""
    recorded = {n for nodes in found.values() for n in nodes}
    everywhere = recorded == {n for end in ends for ns in namespaces(end) for n in ns.nodes}
    if len(found) == 1 and everywhere:
        return f"{next(iter(found))} on every node"
    return "; ".join(f"{value} on {', '.join(nodes)}" for value, nodes in found.items())


def congestion_text(ends: list[dict[str, Any] | None]) -> str:
    """The congestion control of a run across nodes, e.g. ``cubic on every node``; else ''."""
    return _across_nodes_text(ends, congestion_controls(ends))


def socket_queue_text(ends: list[dict[str, Any] | None]) -> str:
    """One socket's queue limit of a run across nodes, e.g. ``32 KiB on every node``; else ''."""
    found = socket_queue_limits(ends)
    return _across_nodes_text(ends, {size_text(b, exact=True): n for b, n in found.items()})


def idle_restart_text(ends: list[dict[str, Any] | None]) -> str:
    """tcp_slow_start_after_idle of a run across nodes, e.g. ``1 on every node``; else ''."""
    return _across_nodes_text(ends, {str(v): n for v, n in idle_restarts(ends).items()})


def _values(ends: list[dict[str, Any] | None]) -> dict[str, set[str]]:
    """Per TCP setting the engine records, the values a run's namespaces had, as text."""
    return {
        "congestion control": set(congestion_controls(ends)),
        "socket queue limit": {size_text(b, exact=True) for b in socket_queue_limits(ends)},
        "slow start after idle": {str(v) for v in idle_restarts(ends)},
    }


def setting_differences(
    first: list[dict[str, Any] | None], second: list[dict[str, Any] | None]
) -> list[str]:
    """The TCP settings two runs recorded and ran under differently, in words.

    E.g. ``congestion control cubic against bbr``; a setting either run did not record is
    left out.
    """
    a, b = _values(first), _values(second)
    return [
        f"{name} {'/'.join(sorted(a[name]))} against {'/'.join(sorted(b[name]))}"
        for name in a
        if a[name] and b[name] and a[name] != b[name]
    ]
