"""What a check of a stored run costs with 10,000 baseline figures.

Builds (once, cached in the folder given) a store with three all-pairs matrix runs of
``--nodes`` nodes (latency and bandwidth per ordered node pair, two sizes: 4 n (n - 1)
figures, 10,200 at 51 nodes), makes a baseline of them, and times, through the CLI as a user
runs it: `baseline create`, `check --baseline B RUN` of a fourth run, and the same check with
`--json`; beside them `commscope runs`, the fixed cost of starting the CLI on this store.
Prints the median and the fastest of the repeats. Not a test.

    .venv/bin/python bench/check_scale.py [--nodes 51] [--repeat 5] [--folder /tmp/cs]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
from bench_store import built

from commscope.data.record_parse import record_from_dict
from commscope.data.records import Header, Point
from commscope.data.store import Store

SIZES = (8, 1 << 20)
WINDOW = 16


def header(n: int) -> Header:
    ranks = [
        {"rank": i, "node": f"node{i:04d}", "node_index": i, "socket": 0, "cpu": 0,
         "pid": 100 + i, "affinity": [0]}
        for i in range(n)
    ]  # fmt: skip
    rec = record_from_dict(
        {
            "type": "header",
            "schema_version": 1,
            "engine_version": "0.1.0",
            "mpi": {"library_version": "Open MPI v4.1.4", "standard": "3.1"},
            "nranks": n,
            "ranks": ranks,
            "socket_source": "hwloc",
            "timer": {"name": "monotonic_raw", "resolution_s": 1e-9, "overhead_s": 2.5e-8},
            "pairs": [],
            "options": {"ops": "matrix"},
            "started_unix": 1732230000.0,
        },
        "bench header",
    )
    assert isinstance(rec, Header)
    return rec


def points(n: int, rng: np.random.Generator) -> list[Point]:
    out = []
    for op, nbytes in (("matrix_lat", SIZES[0]), ("matrix_bw", SIZES[1])):
        for size in (nbytes, nbytes * 2):
            for a in range(n):
                for b in range(n):
                    if a == b:
                        continue
                    lat = op == "matrix_lat"
                    per_sample = 8 if lat else WINDOW * size
                    t = 20e-6 if lat else per_sample / 1e8
                    samples = t * np.exp(rng.normal(0, 0.02, 8))
                    rec = record_from_dict(
                        {
                            "type": "point", "op": op, "pair": f"{a}->{b}", "ranks": [a, b],
                            "bytes": size, "bytes_per_sample": per_sample,
                            "window": 1 if lat else WINDOW, "iters_per_sample": 1, "warmup": 1,
                            "samples_s": [float(s) for s in samples], "stop": "max_samples",
                        },
                        "bench point",
                    )  # fmt: skip
                    assert isinstance(rec, Point)
                    out.append(rec)
    return out


def build(path: Path, n: int) -> None:
    rng = np.random.default_rng(1)
    with Store.open(path) as store:
        for i in range(4):
            run_id = store.create_run("matrix", f"bench {i}", "openmpi-4.1.4", "mpirun", n, {})
            seg = store.start_segment(run_id, ["bench"])
            store.set_header(run_id, seg, header(n))
            for p in points(n, rng):
                store.add_point(run_id, seg, p)
            store.finish_segment(seg, "complete")
            store.set_run_status(run_id, "complete")


def timed(store: Path, repeat: int, *args: str) -> list[float]:
    env = dict(os.environ, COMMSCOPE_STORE=str(store))
    out = []
    for _ in range(repeat):
        start = time.perf_counter()
        done = subprocess.run([sys.executable, "-m", "commscope", *args], env=env,
                              capture_output=True, text=True)  # fmt: skip
        out.append(time.perf_counter() - start)
        if done.returncode not in (0, 1, 2):
            raise SystemExit(f"commscope {' '.join(args)}: {done.stderr}")
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=51)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--folder", default="/tmp/commscope-check-scale")
    args = parser.parse_args()
    store = built(Path(args.folder) / f"store-{args.nodes}.sqlite", lambda p: build(p, args.nodes))
    subprocess.run([sys.executable, "-m", "commscope", "--store", str(store), "baseline",
                    "delete", "b"], capture_output=True)  # fmt: skip
    rows = [
        ("commscope runs", timed(store, args.repeat, "runs")),
        ("baseline create b 1 2 3", timed(store, 1, "baseline", "create", "b", "1", "2", "3")),
        ("check --baseline b 4", timed(store, args.repeat, "check", "--baseline", "b", "4")),
        ("check --baseline b 4 --json",
         timed(store, args.repeat, "check", "--baseline", "b", "4", "--json")),
    ]  # fmt: skip
    env = dict(os.environ, COMMSCOPE_STORE=str(store))
    shown = subprocess.run([sys.executable, "-m", "commscope", "baseline", "list", "--json"],
                           env=env, capture_output=True, text=True).stdout  # fmt: skip
    print(f"store: {store.stat().st_size / 1e6:.0f} MB; baselines: {shown.strip()}")
    print(f"{'command':34} {'median s':>9} {'fastest s':>10}")
    for name, times in rows:
        print(f"{name:34} {statistics.median(times):>9.2f} {min(times):>10.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
