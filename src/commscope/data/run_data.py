"""One run read from the store once: what analysis, `show` and the report work from.

The store decodes a run's records in one pass; the report and the terminal views receive this
object (and what the analysis makes of it), never the store.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from commscope.data.mpi_config import RUN_DATA_KIND, ProtocolLimits
from commscope.data.records import Coll, Contention, Linpack, LogGP, Point, Stream
from commscope.data.store import RunInfo, SegmentInfo, Store


@dataclass(frozen=True)
class RunData:
    """A stored run: its facts, its records by kind, its launches and derived data."""

    info: RunInfo
    points: list[Point]
    colls: list[Coll]
    contentions: list[Contention]
    streams: list[Stream]
    linpacks: list[Linpack]
    loggps: list[LogGP]
    segments: list[SegmentInfo]
    netload: Any  # a simulated run's network load per link, or None
    protocol_limits: ProtocolLimits | None = None  # the MPI's eager limits, when recorded

    @property
    def ends(self) -> list[dict[str, Any] | None]:
        """Each launch's end record (None where a launch ended without one)."""
        return [seg.end for seg in self.segments]


def read_run(store: Store, run_id: int) -> RunData:
    """Read run ``run_id`` with every record, decoding each record once."""
    records = store.measurements(run_id)

    def of(cls: type[Any]) -> list[Any]:
        return [r for r in records if isinstance(r, cls)]

    return RunData(
        info=store.get_run(run_id),
        # The orders the store's accessors give (records arrive ordered by op, pair, bytes).
        points=of(Point),
        colls=of(Coll),
        contentions=sorted(of(Contention), key=lambda p: (p.level, p.cf, p.bytes)),
        streams=of(Stream),
        linpacks=sorted(of(Linpack), key=lambda p: (p.cores, p.n)),
        loggps=sorted(of(LogGP), key=lambda p: (p.pair, p.bytes)),
        segments=store.segments(run_id),
        netload=store.run_data(run_id, "netload"),
        protocol_limits=ProtocolLimits.from_json(store.run_data(run_id, RUN_DATA_KIND)),
    )
