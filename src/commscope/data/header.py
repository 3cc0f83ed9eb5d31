"""The header record: what ran, where, with which timer and options (the engine's first line)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class RankInfo:
    """Where one rank ran."""

    rank: int
    node: str
    node_index: int
    socket: int
    cpu: int
    pid: int
    affinity: tuple[int, ...] = ()


@dataclass(frozen=True)
class PairInfo:
    """A pair of ranks measured together and how far apart they are."""

    label: str
    ranks: tuple[int, int]


@dataclass(frozen=True)
class MpiInfo:
    """The MPI library the engine ran with."""

    library_version: str
    standard: str


@dataclass(frozen=True)
class TimerInfo:
    """The timer the engine chose and what it costs."""

    name: str
    resolution_s: float
    overhead_s: float
    frequency_hz: float | None = None


@dataclass(frozen=True)
class Header:
    """First record of an engine run: what ran, where, and with which options."""

    schema_version: int
    engine_version: str
    mpi: MpiInfo | None  # None for transport "tcp"
    nranks: int
    ranks: tuple[RankInfo, ...]
    timer: TimerInfo
    pairs: tuple[PairInfo, ...]
    options: Mapping[str, Any] = field(hash=False)
    started_unix: float
    socket_source: str | None
    raw: dict[str, Any] = field(compare=False, repr=False)

    @property
    def nodes(self) -> tuple[str, ...]:
        """Distinct node names, in the order of the first rank on each."""
        ordered = sorted(self.ranks, key=lambda r: r.rank)
        return tuple(dict.fromkeys(r.node for r in ordered))

    @property
    def transport(self) -> str:
        """What carried the messages: "mpi" (the engine) or "tcp" (commscope-tcp)."""
        return str(self.raw.get("transport", "mpi"))

    @property
    def pair_labels(self) -> tuple[str, ...]:
        """Distinct pair labels (intra-socket, inter-socket, inter-node), in header order."""
        return tuple(dict.fromkeys(p.label for p in self.pairs))
