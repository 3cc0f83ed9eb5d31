"""Synthetic but schema-valid runs for report tests: two pairs of p2p curves and collectives.

Records are built by hand as the engine would write them and validated with record_from_dict,
so reports are exercised on realistic shapes (an eager/rendezvous step, a cache dip, raw
collective launches with invalid ones flagged) without running MPI.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from commscope.data.mpi_config import RUN_DATA_KIND, ProtocolLimits
from commscope.data.record_parse import record_from_dict
from commscope.data.records import Coll, Header, Measured, Point
from commscope.data.store import Store
from commscope.units import netpipe_schedule

SIZES = netpipe_schedule(1 << 20, 3)
WINDOW = 64


def header(nodes: tuple[str, str] = ("n0", "n1"), started_unix: float = 1732230000.0) -> Header:
    ranks = [
        {
            "rank": i,
            "node": nodes[i // 2],
            "node_index": i // 2,
            "socket": i % 2,
            "cpu": i,
            "pid": 100 + i,
            "affinity": [i],
        }
        for i in range(4)
    ]
    rec = record_from_dict(
        {
            "type": "header",
            "schema_version": 1,
            "engine_version": "0.1.0",
            "mpi": {
                "library_version": "Open MPI v4.1.4, package: Debian OpenMPI",
                "standard": "3.1",
            },
            "nranks": 4,
            "ranks": ranks,
            "socket_source": "hwloc",
            "timer": {"name": "monotonic_raw", "resolution_s": 1e-9, "overhead_s": 2.5e-8},
            "pairs": [
                {"label": "intra-socket", "ranks": [0, 1]},
                {"label": "inter-node", "ranks": [0, 2]},
            ],
            "options": {"ops": "pingpong,bw,bibw", "sizes": SIZES, "window": WINDOW},
            "started_unix": started_unix,
        },
        "synthetic header",
    )
    assert isinstance(rec, Header)
    return rec


def one_way(pair: str, m: np.ndarray) -> np.ndarray:
    if pair == "intra-socket":  # eager up to 4 KiB, then rendezvous; caches end at 128 KiB
        t = np.where(m <= 3075, 0.3e-6 + m / 8e9, 2.3e-6 + m / 11e9)
        return np.where(m > 131075, t * 1.4, t)
    return 17e-6 + m / 1.1e9  # inter-node


def points(pair: str, ranks: tuple[int, int], seed: int = 0) -> list[Point]:
    rng = np.random.default_rng(seed)
    m = np.array(SIZES, dtype=float)
    out = []
    for op in ("pingpong", "bw", "bibw"):
        t = one_way(pair, m) * (1.0 if op == "pingpong" else 0.6 if op == "bw" else 0.35)
        for size, ti in zip(SIZES, t, strict=True):
            msgs = 1 if op == "pingpong" else WINDOW * (2 if op == "bibw" else 1)
            samples = ti * msgs * np.exp(rng.normal(0, 0.01, 12))
            data = {
                "type": "point",
                "op": op,
                "pair": pair,
                "ranks": list(ranks),
                "bytes": size,
                "bytes_per_sample": size * msgs,
                "iters_per_sample": 10,
                "warmup": 2,
                "samples_s": [float(s) for s in samples],
                "stop": "rse",
            }
            if op != "pingpong":
                data["window"] = WINDOW
            rec = record_from_dict(data, f"synthetic {op} {size}")
            assert isinstance(rec, Point)
            out.append(rec)
    return out


def colls(seed: int = 1) -> list[Coll]:
    """MPIPerf-style raw launches: allreduce and bcast per size, a few launches invalid."""
    rng = np.random.default_rng(seed)
    out = []
    for op, base in (("allreduce", 4e-6), ("bcast", 2.5e-6)):
        for size in (0, 8, 64, 512, 4096, 32768, 262144):
            n = 40
            times = (base + size / 2e9) * np.exp(rng.normal(0, 0.05, n))
            flags = [0] * n
            for i in rng.choice(n, 4, replace=False):
                flags[int(i)] = int(rng.integers(1, 4))
                times[int(i)] *= 3.0
            rec = record_from_dict(
                {
                    "type": "coll",
                    "op": op,
                    "group": "world",
                    "nranks": 4,
                    "bytes": size,
                    "root": 0 if op == "bcast" else None,
                    "method": "window",
                    "buffers": "cold",
                    "times_s": [float(t) for t in times],
                    "flags": flags,
                    "stage": [1] * n,
                    "windows_s": [float(times.max() * 1.1)],
                    "stop": "rule_b",
                },
                f"synthetic {op} {size}",
            )
            assert isinstance(rec, Coll)
            out.append(rec)
    return out


def window_coll(
    times: Sequence[float], flags: Sequence[int], delays: Sequence[float] | None = None
) -> Coll:
    """A 256 KiB all-to-all point of MPIPerf launches, with its start delays when given."""
    rec = record_from_dict(
        {
            "type": "coll",
            "op": "alltoall",
            "group": "world",
            "nranks": 4,
            "bytes": 262144,
            "root": None,
            "method": "window",
            "times_s": list(times),
            "flags": list(flags),
            **({} if delays is None else {"start_delays_s": list(delays)}),
            "stage": [1] * len(times),
            "stop": "rule_b",
        },
        "synthetic alltoall",
    )
    assert isinstance(rec, Coll)
    return rec


def store_run(
    path: Path,
    label: str,
    with_colls: bool = True,
    limits: ProtocolLimits | None = None,
    request: dict[str, Any] | None = None,
) -> int:
    """Store one complete synthetic run (with its eager limits, if given) and return its id."""
    with Store.open(path) as store:
        run_id = store.create_run("p2p", label, "openmpi-4.1.4", "mpirun", 4, request or {"np": 4})
        if limits is not None:
            store.set_run_data(run_id, RUN_DATA_KIND, limits.to_json())
        seg = store.start_segment(run_id, ["mpirun", "-n", "4", "commscope-engine"])
        store.set_header(run_id, seg, header())
        records: list[Point | Coll] = [
            *points("intra-socket", (0, 1)),
            *points("inter-node", (0, 2), seed=5),
        ]
        if with_colls:
            records += colls()
        for rec in records:
            store.add_point(run_id, seg, rec)
        store.finish_segment(seg, "complete")
        store.set_run_status(run_id, "complete")
    return run_id


def store_records(
    path: Path, kind: str, records: Sequence[Measured], label: str, nranks: int
) -> int:
    """Store ``records`` as one complete run of benchmark ``kind`` and return its id."""
    with Store.open(path) as store:
        run_id = store.create_run(kind, label, "synthetic", "none", nranks, {})
        seg = store.start_segment(run_id, ["synthetic"])
        for rec in records:
            store.add_point(run_id, seg, rec)
        store.finish_segment(seg, "complete")
        store.set_run_status(run_id, "complete")
    return run_id
