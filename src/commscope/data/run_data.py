"""One run read from the store once: what analysis, `show` and the report work from.

The store decodes a run's records in one pass; the report and the terminal views receive this
object (and what the analysis makes of it), never the store.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from commscope.data.mpi_config import RUN_DATA_KIND, ProtocolLimits
from commscope.data.point_ops import P2P, family
from commscope.data.records import Coll, Contention, Linpack, LogGP, Point, Queue, Stream
from commscope.data.store import RunInfo, SegmentInfo, Store, of_class


@dataclass(frozen=True)
class RunData:
    """A stored run: its facts, its records by kind, its launches and derived data."""

    info: RunInfo
    points: list[Point]
    colls: list[Coll]
    contentions: list[Contention]
    queues: list[Queue]  # contention level "queue": waits behind a node's outgoing stream
    streams: list[Stream]
    linpacks: list[Linpack]
    loggps: list[LogGP]
    segments: list[SegmentInfo]
    netload: Any  # a simulated run's network load per link, or None
    # Points of the other families (data/point_ops.family: paired, rma, mbw), by family.
    families: dict[str, list[Point]] = field(default_factory=dict)
    protocol_limits: ProtocolLimits | None = None  # the MPI's eager limits, when recorded
    program: Any = None  # a whole program's data, simulated or measured (kind app or hpl), or None

    def family(self, name: str) -> list[Point]:
        """The run's Points of family ``name`` (``points`` holds the p2p family)."""
        return self.points if name == P2P else self.families.get(name, [])

    @property
    def ends(self) -> list[dict[str, Any] | None]:
        """Each launch's end record (None where a launch ended without one)."""
        return [seg.end for seg in self.segments]


def read_run(store: Store, run_id: int) -> RunData:
    """Read run ``run_id`` with every record, decoding each record once."""
    info = store.get_run(run_id)
    records = store.measurements(run_id)
    families: dict[str, list[Point]] = {}
    for p in of_class(records, Point):
        families.setdefault(family(p.op), []).append(p)

    return RunData(
        info=info,
        points=families.pop(P2P, []),
        colls=of_class(records, Coll),
        contentions=of_class(records, Contention),
        queues=of_class(records, Queue),
        streams=of_class(records, Stream),
        linpacks=of_class(records, Linpack),
        loggps=of_class(records, LogGP),
        segments=store.segments(run_id),
        netload=store.run_data(run_id, "netload"),
        families=families,
        protocol_limits=ProtocolLimits.from_json(store.run_data(run_id, RUN_DATA_KIND)),
        program=_program(store, info),
    )


def _program(store: Store, info: RunInfo) -> Any:
    """The data a run keeps under its own kind's name (None for most kinds).

    `simulate app`, `simulate hpl` and `run hpl` keep the program's outcome there.
    """
    return store.run_data(info.id, info.kind)
