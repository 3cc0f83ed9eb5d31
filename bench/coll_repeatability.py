"""Run-to-run repeatability of collective timings: window method against the naive loop.

Eight independent runs (each its own launch, clock sync and measurement) of Alltoall and
Bcast at 1 MiB on 2 ranks, for the MPIPerf window method and for the naive back-to-back loop
after MPI_Barrier, interleaved. Prints each run's reported time and the coefficient of
variation (std / mean over runs) per operation and method. Beside them, the same for the
median one-way time of a 1 MiB ping-pong (up to 1000 samples per run): the machine's own
run-to-run variation, which no collective method can get below. Not a test: it prints figures.

    .venv/bin/python bench/coll_repeatability.py [--runs 8] [--size 1MiB] [--np 2] [--stop b]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

from commscope.analysis.coll import summarize
from commscope.data.request import RunRequest
from commscope.data.store import Store
from commscope.measure import engine, runner
from commscope.measure import mpi as mpi_mod
from commscope.units import parse_size

OPS = ("alltoall", "bcast")


def one_run(
    store: Store,
    mpi: mpi_mod.MPIInstall,
    np_: int,
    size: int,
    sync: str,
    stop: str,
    budget_s: float,
) -> dict[str, float]:
    request = {
        "benchmark": "coll",
        "mpi": mpi.choice,
        "np": np_,
        "launcher": "auto",
        "timeout_s": 600,
        "engine": {
            "ops": ",".join(OPS),
            "sizes": [size],
            "coll_sizes": [size],
            "sync": sync,
            "timer": "tsc",
            "stop": stop,
            "coll_budget_s": budget_s,
        },
    }
    run_id = store.create_run("coll", f"repeatability {sync}", mpi.tag, mpi.launcher, np_, request)
    runner.run(store, run_id, RunRequest.from_json(request), mpi)
    return {c.op: summarize(c).time_s for c in store.colls(run_id)}


def one_pingpong(store: Store, mpi: mpi_mod.MPIInstall, size: int) -> float:
    request = {
        "benchmark": "p2p",
        "mpi": mpi.choice,
        "np": 2,
        "launcher": "auto",
        "timeout_s": 600,
        "engine": {"ops": "pingpong", "sizes": [size], "timer": "tsc"},
    }
    run_id = store.create_run("p2p", "repeatability floor", mpi.tag, mpi.launcher, 2, request)
    runner.run(store, run_id, RunRequest.from_json(request), mpi)
    return store.points(run_id)[0].median_s


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=8)
    parser.add_argument("--size", default="1MiB")
    parser.add_argument("--np", type=int, default=2)
    parser.add_argument("--mpi", default="openmpi")
    parser.add_argument("--stop", default="b", help="window method's stop rule (a, b, rse:X)")
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
    times: dict[tuple[str, str], list[float]] = {}
    with tempfile.TemporaryDirectory() as tmp, Store.open(Path(tmp) / "s.sqlite") as store:
        print(f"{'run':>3} {'method':>7} " + " ".join(f"{op + ' (us)':>15}" for op in OPS))
        for i in range(args.runs):
            for sync, method in (("linear", "window"), ("barrier", "naive")):
                result = one_run(store, mpi, args.np, size, sync, args.stop, args.coll_budget)
                for op in OPS:
                    times.setdefault((op, method), []).append(result[op])
                print(
                    f"{i + 1:>3} {method:>7} "
                    + " ".join(f"{result[op] * 1e6:>15.2f}" for op in OPS),
                    flush=True,
                )
            times.setdefault(("pingpong", "floor"), []).append(one_pingpong(store, mpi, size))
    print(
        f"\ncoefficient of variation over {args.runs} runs ({args.size}, {args.np} ranks, "
        f"{mpi.tag}, window stop rule {args.stop}):"
    )
    for op, methods in [(op, ("window", "naive")) for op in OPS] + [("pingpong", ("floor",))]:
        for method in methods:
            xs = times[(op, method)]
            cv = statistics.stdev(xs) / statistics.mean(xs)
            print(f"  {op:>9} {method:>7}: mean {statistics.mean(xs) * 1e6:9.2f} us, CV {cv:6.2%}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
