"""One run read from the store once: what analysis, `show` and the report work from.

The store decodes a run's records in one pass; the report and the terminal views receive this
object (and what the analysis makes of it), never the store.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from commscope.data.mpi_config import RUN_DATA_KIND, ProtocolLimits
from commscope.data.point_ops import family
from commscope.data.records import Coll, Contention, Linpack, LogGP, Point, Stream
from commscope.data.store import RunInfo, SegmentInfo, Store, of_class


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
    paired: list[Point] = field(default_factory=list)  # matrix and bisection points
    rma: list[Point] = field(default_factory=list)  # one-sided series, not in ``points``
    # multi-pair points (op mbw_k<k>): Points, kept apart from the pair-by-pair ones above
    mbws: list[Point] = field(default_factory=list)
    protocol_limits: ProtocolLimits | None = None  # the MPI's eager limits, when recorded

    @property
    def ends(self) -> list[dict[str, Any] | None]:
        """Each launch's end record (None where a launch ended without one)."""
        return [seg.end for seg in self.segments]


def read_run(store: Store, run_id: int) -> RunData:
    """Read run ``run_id`` with every record, decoding each record once."""
    records = store.measurements(run_id)
    points = of_class(records, Point)

    def of_family(name: str) -> list[Point]:
        return [p for p in points if family(p.op) == name]

    return RunData(
        info=store.get_run(run_id),
        points=of_family("p2p"),
        colls=of_class(records, Coll),
        contentions=of_class(records, Contention),
        streams=of_class(records, Stream),
        linpacks=of_class(records, Linpack),
        loggps=of_class(records, LogGP),
        segments=store.segments(run_id),
        netload=store.run_data(run_id, "netload"),
        paired=of_family("paired"),
        rma=of_family("rma"),
        mbws=of_family("mbw"),
        protocol_limits=ProtocolLimits.from_json(store.run_data(run_id, RUN_DATA_KIND)),
    )
