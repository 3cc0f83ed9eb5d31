"""One run read from the store once: what analysis, `show` and the report work from.

The store decodes a run's records in one pass; the report and the terminal views receive this
object (and what the analysis makes of it), never the store.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from commscope.data.records import (
    PAIRED_OPS,
    Coll,
    Contention,
    Linpack,
    LogGP,
    Point,
    Stream,
    is_rma,
    mbw_pairs,
)
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

    @property
    def ends(self) -> list[dict[str, Any] | None]:
        """Each launch's end record (None where a launch ended without one)."""
        return [seg.end for seg in self.segments]


def read_run(store: Store, run_id: int) -> RunData:
    """Read run ``run_id`` with every record, decoding each record once."""
    records = store.measurements(run_id)
    return RunData(
        info=store.get_run(run_id),
        points=[
            p
            for p in of_class(records, Point)
            if p.op not in PAIRED_OPS and not is_rma(p.op) and mbw_pairs(p.op) is None
        ],
        colls=of_class(records, Coll),
        contentions=of_class(records, Contention),
        streams=of_class(records, Stream),
        linpacks=of_class(records, Linpack),
        loggps=of_class(records, LogGP),
        segments=store.segments(run_id),
        netload=store.run_data(run_id, "netload"),
        paired=[p for p in of_class(records, Point) if p.op in PAIRED_OPS],
        rma=[p for p in of_class(records, Point) if is_rma(p.op)],
        mbws=[p for p in of_class(records, Point) if mbw_pairs(p.op) is not None],
    )
