"""The MPI's configured eager limits, as recorded with a run (run data ``protocol_limits``).

An eager limit is a setting, not a measurement: the size up to which the MPI sends a message
eagerly on one path (shared memory within a node, the network between nodes). Libraries count
their own headers into it (Open MPI's ob1 sends eagerly up to the BTL's limit less its match
header; MPICH's CH4 shared memory up to the cell size less cell and message headers), so the
switch sits up to ``headers_bytes`` below the recorded number.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

RUN_DATA_KIND = "protocol_limits"
SCOPES = ("intra-node", "inter-node")
HEADERS_BYTES = 128  # bound on the headers an MPI counts into its limit (tens of bytes)
# Settings raised alike with an eager limit when messages are to go at once: Open MPI's TCP
# transport also cuts a message into pieces of btl_tcp_max_send_size.
RAISED_WITH = {"btl_tcp_eager_limit": ("btl_tcp_max_send_size",)}


@dataclass(frozen=True)
class EagerLimit:
    """One path's eager limit: which MPI and path, the setting's name, value and origin."""

    mpi: str  # "Open MPI" or "MPICH"
    path: str  # the BTL or device part, e.g. "vader", "tcp", "ch4 posix"
    scope: str  # one of SCOPES: the pairs it applies to
    setting: str  # e.g. "btl_vader_eager_limit"
    bytes: int
    set_by: str  # "default", "--mca", "--cvar", "environment", a file
    headers_bytes: int = HEADERS_BYTES

    def raised_with(self) -> tuple[str, ...]:
        """The settings to raise with this one for messages up to a larger limit to go eagerly."""
        return RAISED_WITH.get(self.setting, ())

    def name(self) -> str:
        """How findings name it: ``the Open MPI vader eager limit (4096 B)``."""
        return f"the {self.mpi} {self.path} eager limit ({self.bytes} B)"

    def matches(self, below_bytes: int, above_bytes: int) -> bool:
        """True when a step from ``below_bytes`` to ``above_bytes`` can be this switch.

        The switch lies in [bytes - headers_bytes, bytes]; the step must contain a size there.
        """
        return below_bytes < self.bytes and above_bytes >= self.bytes - self.headers_bytes


def scope_of(pair: str) -> str | None:
    """The path a pair label uses; None for a pair whose placement is unknown."""
    if pair == "inter-node":
        return "inter-node"
    if pair in ("intra-socket", "inter-socket", "intra-node"):
        return "intra-node"
    return None


@dataclass(frozen=True)
class ProtocolLimits:
    """What was read about a run's MPI: limits per path, settings, and what stayed unknown."""

    mpi: str
    limits: tuple[EagerLimit, ...] = ()
    settings: dict[str, str] = field(default_factory=dict)  # read values of related settings
    unknown: tuple[str, ...] = ()  # why a path's limit is not known, one sentence each

    def for_pair(self, pair: str) -> list[EagerLimit]:
        """The limits on the path ``pair`` uses."""
        scope = scope_of(pair)
        return [lim for lim in self.limits if lim.scope == scope]

    def inter_node(self) -> EagerLimit | None:
        """The limit on the path between nodes, when it was read."""
        return next((lim for lim in self.limits if lim.scope == "inter-node"), None)

    def text(self) -> str:
        """One line for `show` and the report header."""
        parts = [
            f"{lim.scope} {lim.path} {lim.bytes} B ({lim.setting}, {lim.set_by})"
            for lim in self.limits
        ]
        return "; ".join(parts + list(self.unknown)) or "unknown"

    def to_json(self) -> dict[str, Any]:
        """The stored shape."""
        return {
            "mpi": self.mpi,
            "limits": [asdict(lim) for lim in self.limits],
            "settings": dict(self.settings),
            "unknown": list(self.unknown),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any] | None) -> ProtocolLimits | None:
        """Read the stored shape; None for a run without it or with a shape not understood."""
        if not isinstance(data, Mapping):
            return None
        try:
            return cls(
                mpi=str(data["mpi"]),
                limits=tuple(EagerLimit(**lim) for lim in data.get("limits", [])),
                settings={str(k): str(v) for k, v in (data.get("settings") or {}).items()},
                unknown=tuple(str(u) for u in data.get("unknown", [])),
            )
        except (KeyError, TypeError):
            return None


def settings_text(request: Mapping[str, Any]) -> str:
    """The MPI settings a run was launched with: ``--mca NAME=VALUE, --cvar NAME=VALUE``."""
    return ", ".join(
        f"--{flag} {name}={value}"
        for flag in ("mca", "cvar")
        for name, value in (request.get(flag) or {}).items()
    )


def naming_limits(mpi: str | None, limits: ProtocolLimits | None) -> ProtocolLimits | None:
    """The limits a run's steps may be named by: none for a run without MPI (TCP sockets)."""
    return limits if mpi else None
