"""Run-to-run spread of Alltoall 1 MiB, quiet and with a busy loop on one core.

Eight independent runs (each its own launch, clock sync and measurement) of MPI_Alltoall at
1 MiB on 2 ranks, quiet and with a process spinning on one core, interleaved, for the MPIPerf
window method and, beside it, the naive back-to-back loop after MPI_Barrier. Prints each run's
median and trimmed mean T, the window method's valid share, late share and warnings, then the
coefficient of variation (std / mean over runs) of each. Not a test: it prints figures.

    .venv/bin/python bench/coll_under_load.py [--runs 8] [--size 1MiB] [--mpi openmpi]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from commscope.analysis.coll import CollSummary, summarize
from commscope.data.request import RunRequest
from commscope.data.store import Store
from commscope.measure import engine, runner
from commscope.measure import mpi as mpi_mod
from commscope.units import parse_size


def one_run(
    store: Store, mpi: mpi_mod.MPIInstall, size: int, sync: str, budget_s: float
) -> CollSummary:
    request = {
        "benchmark": "coll",
        "mpi": mpi.choice,
        "np": 2,
        "launcher": "auto",
        "timeout_s": 600,
        "engine": {
            "ops": "alltoall",
            "sizes": [size],
            "coll_sizes": [size],
            "sync": sync,
            "coll_budget_s": budget_s,
        },
    }
    run_id = store.create_run("coll", f"under load {sync}", mpi.tag, mpi.launcher, 2, request)
    runner.run(store, run_id, RunRequest.from_json(request), mpi)
    [point] = store.colls(run_id)
    return summarize(point)


def loaded_run(
    store: Store, mpi: mpi_mod.MPIInstall, size: int, sync: str, budget_s: float, cpu: int
) -> CollSummary:
    hog = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        os.sched_setaffinity(hog.pid, {cpu})
        return one_run(store, mpi, size, sync, budget_s)
    finally:
        hog.kill()
        hog.wait()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=8)
    parser.add_argument("--size", default="1MiB")
    parser.add_argument("--mpi", default="openmpi")
    parser.add_argument(
        "--coll-budget",
        type=float,
        default=1.0,
        help="seconds one collective point may take at most",
    )
    args = parser.parse_args()
    mpi = mpi_mod.resolve(args.mpi)
    engine.find(mpi)
    size = parse_size(args.size)
    cpu = min(os.sched_getaffinity(0))
    rows: dict[tuple[str, str], list[CollSummary]] = {}
    print(
        f"{'run':>3} {'load':>6} {'method':>7} {'median us':>10} {'T us':>10} {'valid':>9} "
        f"{'late':>5}  warnings"
    )
    with tempfile.TemporaryDirectory() as tmp, Store.open(Path(tmp) / "s.sqlite") as store:
        for i in range(args.runs):
            for load in ("quiet", "hog"):
                for sync, method in (("linear", "window"), ("barrier", "naive")):
                    s = (
                        one_run(store, mpi, size, sync, args.coll_budget)
                        if load == "quiet"
                        else loaded_run(store, mpi, size, sync, args.coll_budget, cpu)
                    )
                    rows.setdefault((load, method), []).append(s)
                    print(
                        f"{i + 1:>3} {load:>6} {method:>7} {s.median_s * 1e6:>10.1f} "
                        f"{s.time_s * 1e6:>10.1f} {s.nc:>4}/{s.nt:<4} {s.late_share:>5.0%}  "
                        f"{','.join(s.warnings) or '-'}",
                        flush=True,
                    )
    print(
        f"\nover {args.runs} runs ({args.size}, 2 ranks, {mpi.tag}; hog: a busy loop on cpu "
        f"{cpu}); CV = std / mean of the per-run figure:"
    )
    for (load, method), xs in rows.items():
        for name in ("median_s", "time_s"):
            vals = [getattr(s, name) for s in xs if getattr(s, name) == getattr(s, name)]
            if len(vals) < 2:
                print(f"  {load:>5} {method:>6} {name:>8}: fewer than 2 runs with a value")
                continue
            cv = statistics.stdev(vals) / statistics.mean(vals)
            print(
                f"  {load:>5} {method:>6} {name:>8}: mean {statistics.mean(vals) * 1e6:9.1f} "
                f"us, min {min(vals) * 1e6:9.1f}, max {max(vals) * 1e6:9.1f}, CV {cv:7.1%}"
            )
        flagged = sum(1 for s in xs if s.warnings)
        print(f"  {load:>5} {method:>6}: {flagged} of {len(xs)} runs flagged")
    return 0


if __name__ == "__main__":
    sys.exit(main())
