"""commscope's start-up and per-run overhead next to bare Python and a bare mpirun, interleaved.

Each round times, one after the other: ``python -c pass``, ``commscope --version``,
``commscope --help``, ``commscope run --help``, the engine launched bare under mpirun for one
8-byte ping-pong point on 2 ranks (the job commscope itself builds: same launcher, argv and
environment), and ``commscope run p2p --sizes 8 --ops pingpong --np 2 --json --quiet`` of that
point. An untimed round first builds the engine if needed and warms the caches; the store is
created there, so timed runs add to an existing store as users' runs do.

The engine's end record holds its measuring time (after MPI_Init and set-up, up to the end
record), so each launch splits into measuring and the rest; the driver's overhead of one run is
the rest of the commscope run minus the rest of the bare one (Python start, parsing, the store,
reading the records). Prints per round and medians of rounds, in milliseconds. Not a test: it
prints figures.

    flock /tmp/commscope-bench.lock .venv/bin/python bench/startup.py [--rounds 10] [--mpi mpich]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from commscope.data.request import RunRequest
from commscope.data.store import Store
from commscope.measure import engine, launch, runner
from commscope.measure import mpi as mpi_mod

POINT = ["p2p", "--sizes", "8", "--ops", "pingpong", "--np", "2", "--json", "--quiet"]
COLUMNS = ("pass", "--version", "--help", "run --help", "mpirun", "engine", "run p2p", "engine")


def commscope_argv() -> list[str]:
    """The installed ``commscope`` script next to this Python, else ``python -m commscope``."""
    script = Path(sys.executable).with_name("commscope")
    return [str(script)] if script.exists() else [sys.executable, "-m", "commscope"]


def wall(argv: list[str], env: dict[str, str] | None = None) -> tuple[float, str]:
    """Run ``argv`` to completion; return (wall seconds, stdout)."""
    t0 = time.perf_counter()
    out = subprocess.run(
        argv, check=True, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env
    )
    return time.perf_counter() - t0, out.stdout


def end_elapsed(stdout: str) -> float:
    """The ``elapsed_s`` of the engine's end record in its JSON-lines output."""
    for line in reversed(stdout.splitlines()):
        if line.startswith("{") and json.loads(line).get("type") == "end":
            return float(json.loads(line)["elapsed_s"])
    raise RuntimeError("the engine wrote no end record")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--mpi", help="as commscope run --mpi (default: mpiexec on PATH)")
    args = parser.parse_args()
    cs = commscope_argv()
    point = [*POINT, *(["--mpi", args.mpi] if args.mpi else [])]
    with tempfile.TemporaryDirectory() as tmp:
        store_path = Path(tmp) / "store.sqlite"
        run_point = [*cs, "--store", str(store_path), "run", *point]

        def commscope_run() -> tuple[float, float]:
            seconds, out = wall(run_point)
            with Store.open(store_path) as store:
                end = store.segments(json.loads(out)["run"])[-1].end or {}
            return seconds, float(end["elapsed_s"])

        commscope_run()  # untimed: builds the engine if needed, creates the store
        with Store.open(store_path) as store:
            first = store.get_run(store.resolve_run("latest"))
            request = first.request
            stored_argv = list(store.segments(first.id)[-1].argv)
        # The job runner.run builds for this request, launched here without commscope.
        mpi = mpi_mod.resolve(request["mpi"])
        engine_options = RunRequest.from_json(request).engine
        argv = runner.engine_argv(str(engine.find(mpi).path), engine_options, set())
        job = launch.build_job(mpi, request["np"], argv, request["launcher"])
        bare_env = dict(os.environ, **job.env)
        if job.argv != stored_argv:
            print(f"warning: commscope launched {' '.join(stored_argv)}")

        def bare_run() -> tuple[float, float]:
            seconds, out = wall(job.argv, bare_env)
            return seconds, end_elapsed(out)

        steps: list[Callable[[], tuple[float, ...]]] = [
            lambda: wall([sys.executable, "-c", "pass"])[:1],
            lambda: wall([*cs, "--version"])[:1],
            lambda: wall([*cs, "--help"])[:1],
            lambda: wall([*cs, "run", "--help"])[:1],
            bare_run,
            commscope_run,
        ]
        bare_run()  # untimed as well: the first launch of the job pages the MPI in
        if sys.dont_write_bytecode:
            print(
                "note: PYTHONDONTWRITEBYTECODE is set: sources without a cached .pyc are"
                " compiled at every start (installed packages have theirs)"
            )
        print(f"commscope: {' '.join(cs)}")
        print(f"run:       {' '.join(run_point[len(cs) :])}")
        print(f"bare job:  {' '.join(job.argv)}")
        print(f"{'round':>5}" + "".join(f"{c:>11}" for c in COLUMNS) + "   (ms)")
        rows: list[list[float]] = []
        for i in range(args.rounds):
            row = [t for step in steps for t in step()]
            rows.append(row)
            print(f"{i + 1:>5}" + "".join(f"{t * 1e3:>11.1f}" for t in row), flush=True)
    med = [statistics.median(r[k] for r in rows) for k in range(len(COLUMNS))]
    print(f"{'median':>5}" + "".join(f"{t * 1e3:>11.1f}" for t in med))

    def median_ms(fn: Callable[[list[float]], float]) -> float:
        return statistics.median(fn(r) for r in rows) * 1e3

    print(f"\nmedians of {args.rounds} rounds, ms:")
    print(f"  python -c pass                {med[0] * 1e3:8.1f}")
    print(
        f"  commscope --version           {med[1] * 1e3:8.1f}"
        f"   ({median_ms(lambda r: r[1] - r[0]):.1f} beyond python -c pass)"
    )
    print(f"  commscope --help              {med[2] * 1e3:8.1f}")
    print(f"  commscope run --help          {med[3] * 1e3:8.1f}")
    print(
        f"  bare mpirun, one point        {med[4] * 1e3:8.1f}"
        f"   (engine measuring {med[5] * 1e3:.1f}, launch and MPI start/end"
        f" {median_ms(lambda r: r[4] - r[5]):.1f})"
    )
    print(
        f"  commscope run, one point      {med[6] * 1e3:8.1f}"
        f"   (engine measuring {med[7] * 1e3:.1f}, the rest"
        f" {median_ms(lambda r: r[6] - r[7]):.1f})"
    )
    overhead = median_ms(lambda r: (r[6] - r[7]) - (r[4] - r[5]))
    print(
        f"  driver overhead per run       {overhead:8.1f}"
        f"   (run minus bare, measuring taken out; {median_ms(lambda r: r[6] - r[4]):.1f}"
        " with it)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
