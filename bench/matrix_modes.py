"""Measured pairs and wall time of the matrix's modes against N, under SMPI.

For each node count, a homogeneous simulated cluster (one rank per node, 1 Gbit/s, 2 us
NICs) measures the matrix in quick mode (--pairs quick: the hypercube's rounds) and, up to
``--all-up-to`` nodes, every pair (--pairs all); prints the ordered pairs each measured, the
wall time of `commscope simulate run`, and their ratios. Not a test.

    .venv/bin/python bench/matrix_modes.py [--nodes 16,64,256] [--all-up-to 256]
        [--lock /tmp/commscope-bench.lock]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_lock import locked

MODEL = (
    "name: flat{n}\nnodes: {n}\nsockets: 1\ncores: 1\n"
    "channels: {{nic: {{bandwidth: 1Gbit/s, latency: 2us}}}}\n"
)


def simulate(folder: Path, n: int, mode: str) -> tuple[int, float]:
    model = folder / f"c{n}.yaml"
    model.write_text(MODEL.format(n=n))
    env = dict(os.environ, COMMSCOPE_STORE=str(folder / "store.sqlite"))
    argv = [
        sys.executable,
        "-m",
        "commscope",
        "simulate",
        "run",
        "--cluster",
        str(model),
        "--nodes",
        str(n),
        "--neutral",
        "--json",
        "--",
        "matrix",
        "--np",
        str(n),
        "--sizes",
        "128KiB",
        "--samples",
        "2",
        "--pairs",
        mode,
        "--no-confirm",
    ]
    start = time.perf_counter()
    out = subprocess.run(argv, capture_output=True, text=True, env=env)  # fmt: skip
    took = time.perf_counter() - start
    if out.returncode != 0:
        raise SystemExit(f"{mode} at {n} nodes: {out.stderr.strip()}")
    run = json.loads(out.stdout)["run"]
    shown = subprocess.run([sys.executable, "-m", "commscope", "show", str(run), "--json"],
                           capture_output=True, text=True, env=env, check=True)  # fmt: skip
    bw = [m for m in json.loads(shown.stdout)["matrix"] if m["op"] == "matrix_bw"][0]
    pairs = sum(1 for row in bw["values"] for v in row if v is not None)
    return pairs, took


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", default="16,64,256")
    parser.add_argument("--all-up-to", type=int, default=256)
    parser.add_argument("--lock")
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="matrix-modes-"))
    rows = []
    with locked(args.lock):
        for n in (int(x) for x in args.nodes.split(",")):
            quick = simulate(folder, n, "quick")
            every = simulate(folder, n, "all") if n <= args.all_up_to else None
            rows.append((n, quick, every))
            print(f"{n} nodes: quick {quick[0]} pairs in {quick[1]:.1f} s"
                  + (f"; all {every[0]} pairs in {every[1]:.1f} s" if every else ""))  # fmt: skip
    print()
    print(f"{'nodes':>6} {'quick pairs':>12} {'N log2 N':>9} {'all pairs':>10} "
          f"{'quick s':>8} {'all s':>8} {'quick/all time':>15}")  # fmt: skip
    for n, (qp, qs), every in rows:
        ap, at = every if every else (n * (n - 1), float("nan"))
        print(f"{n:>6} {qp:>12} {n * math.ceil(math.log2(n)):>9} {ap:>10} {qs:>8.1f} {at:>8.1f}"
              f" {qs / at:>15.3f}")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
