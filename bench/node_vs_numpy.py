"""The node benchmark's Linpack rate against a bare numpy.linalg.solve, interleaved rounds.

Both solve the same random system of order N on the same pinned cores with the same BLAS
thread count. Each round measures one solve of each, in alternating order (ABBA) so that drift
on a shared machine falls on both; the per-round figures, the medians and their ratio
(goal: >= 0.95) are printed. N defaults to the largest N of the newest node run in the store
(for the most cores it measured), else 4000. Not a test: it prints figures.

    .venv/bin/python bench/node_vs_numpy.py [--n 4500] [--cores 2] [--rounds 5]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

import numpy as np

from commscope.data.location import default_store
from commscope.data.store import Store
from commscope.measure.compute import linpack, node, pinning


def newest_node_run(store_path: str) -> tuple[int, int] | None:
    """(largest N, cores) of the newest node run's most-cores sweep, if there is one."""
    try:
        with Store.open(store_path) as store:
            runs = [r for r in store.list_runs() if r.kind == "node" and r.n_points]
            if not runs:
                return None
            points = store.linpacks(runs[-1].id)
    except Exception:  # no store yet, or another version: fall back to the default N
        return None
    cores = max(p.cores for p in points)
    return max(p.n for p in points if p.cores == cores), cores


def numpy_solve(problem: linpack.Problem, cores: int) -> float:
    """GFLOPS of one numpy.linalg.solve (its own copy of A included, as a bare call pays it)."""
    t0 = time.perf_counter()
    x = np.linalg.solve(problem.a, problem.b)
    seconds = time.perf_counter() - t0
    r = linpack.scaled_residual(problem.a, x, problem.b, problem.a_norm)
    linpack.check_residual(r, problem.n, cores)
    return linpack.gflops(problem.n, seconds)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, help="matrix order (default: see above)")
    parser.add_argument("--cores", type=int, help="cores and BLAS threads (default: see above)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--store", default=default_store())
    args = parser.parse_args()
    found = newest_node_run(args.store)
    n = args.n or (found[0] if found else 4000)
    allowed = pinning.allowed_cpus()
    cores = args.cores or (found[1] if found else pinning.resolve_cores("all", allowed)[0])
    cpus = pinning.choose_cpus(cores, allowed)
    problem = linpack.make_problem(n, node.DEFAULT_SEED)
    ours: list[float] = []
    theirs: list[float] = []
    with pinning.placed(cpus, cores) as place:
        libs = ", ".join(f"{b['internal_api']} {b['version']}" for b in place.blas)
        print(f"N={n} on cpus {list(place.cpus)}, {place.threads} BLAS threads ({libs})")
        node.measure_point(n, place, 1, node.DEFAULT_SEED, warmup=False)  # warm both up
        numpy_solve(problem, cores)
        print(f"{'round':>5} {'node GFLOPS':>12} {'numpy GFLOPS':>13}")
        for i in range(args.rounds):
            pair = [
                lambda: node.measure_point(n, place, 1, node.DEFAULT_SEED, warmup=False).gflops[0],
                lambda: numpy_solve(problem, cores),
            ]
            first, second = (0, 1) if i % 2 == 0 else (1, 0)
            got = {first: pair[first](), second: pair[second]()}
            ours.append(got[0])
            theirs.append(got[1])
            print(f"{i + 1:>5} {got[0]:>12.2f} {got[1]:>13.2f}", flush=True)
    mo, mt = statistics.median(ours), statistics.median(theirs)
    print(
        f"median node {mo:.2f} GFLOPS, numpy.linalg.solve {mt:.2f} GFLOPS;"
        f" ratio node/numpy {mo / mt:.3f} (goal >= 0.95)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
