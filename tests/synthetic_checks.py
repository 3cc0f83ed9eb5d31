"""Stored p2p and collective runs whose inter-node times are scaled: checks' test material."""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path
from typing import Any

from commscope.data.record_parse import record_from_dict
from commscope.data.records import Coll, Point
from commscope.data.store import Store
from tests import synthetic_runs as syn

LOAD_END = {
    "type": "end",
    "points": 1,
    "elapsed_s": 10.0,
    "load": [
        {
            "nodes": ["n0", "n1"],
            "ranks": 4,
            "cpus": 4,
            "host_cpus": 8,
            "elapsed_cpu_s": 80.0,
            "tick_s": 0.01,
            "ranks_cpu_s": 20.0,
            "others_share": 0.5,
        }
    ],
}


def scaled(rec: Point | Coll, factor: float) -> Point | Coll:
    """The record with every time multiplied by ``factor``."""
    raw = dict(rec.raw)
    key = "samples_s" if isinstance(rec, Point) else "times_s"
    raw[key] = [t * factor for t in raw[key]]
    out = record_from_dict(raw, "scaled")
    assert isinstance(out, (Point, Coll))
    return out


def store_run(
    path: Path,
    seed: int,
    inter_node: float = 1.0,
    nodes: tuple[str, str] = ("n0", "n1"),
    end: dict[str, Any] | None = None,
    mpi: str = "openmpi-4.1.4",
    request: dict[str, Any] | None = None,
    started_unix: float = 1732230000.0,
    status: str = "complete",
    sizes: Collection[int] | None = None,
) -> int:
    """A p2p + collectives run; inter-node times scaled by ``inter_node``.

    ``request``: as stored (default ``{"np": 4}``); ``started_unix``: when its engine
    started (its night); ``status``: "complete", or "incomplete" for a run stopped early;
    ``sizes``: keep only the p2p points of these sizes (a run stored in a tenth of the time).
    """
    records: list[Point | Coll] = [
        *syn.points("intra-socket", (0, 1), seed=seed),
        *(scaled(p, inter_node) for p in syn.points("inter-node", (0, 2), seed=seed + 100)),
        *syn.colls(seed=seed + 200),
    ]
    if sizes is not None:
        records = [r for r in records if isinstance(r, Coll) or r.bytes in sizes]
    with Store.open(path) as store:
        stored = {"np": 4} if request is None else request
        run_id = store.create_run("p2p", f"seed {seed}", mpi, "mpirun", 4, stored)
        seg = store.start_segment(run_id, ["mpirun", "-n", "4", "commscope-engine"])
        store.set_header(run_id, seg, syn.header(nodes, started_unix))
        for rec in records:
            store.add_point(run_id, seg, rec)
        store.finish_segment(seg, status, end=end)
        store.set_run_status(run_id, status)
    return run_id
