"""commscope's mbw beside OSU 7.4's osu_mbw_mr on this node, for each MPI.

For k pairs (2k ranks, launched as commscope launches them), each size and window: commscope
``run mbw --np 2k --pairs-per-step k --min-samples 100`` and osu_mbw_mr ``-W window -m
size:size`` on the same 2k ranks. commscope's figure is bytes over the median window time of
its samples; osu_mbw_mr's is bytes over the senders' mean time, so the bytes over commscope's
mean window time are printed too ("cs mean"): where the two statistics part, the machine
held some windows up. Rounds alternate the tools; the per-round ratio commscope / OSU and
its median over the rounds are printed. Goal: within 5 % (docs/validation/mbw.md). peers.py
calls this after its own rounds; on its own:

    flock /tmp/commscope-bench.lock .venv/bin/python bench/peers_mbw.py [--rounds 3]
        [--mpi openmpi,mpich] [--pairs 1,2] [--sizes 8,4096,1048576] [--window 64]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import statistics
import sys
import tempfile
from pathlib import Path

import peers_run

from commscope.data.store import Store
from commscope.measure import launch
from commscope.measure import mpi as mpi_mod

GOAL = 0.05  # |commscope / OSU - 1| at most this, per the median of the rounds
# osu_mbw_mr times 100 windows per size (20 from 8 KiB); commscope takes at least as many
# samples here, so both span a similar stretch of this busy machine's time (with its default
# 10, a 4 KiB point lasted 0.3 ms and read 2-3x OSU's figure under MPICH).
OSU_ITERATIONS = 100


def cs_mbw(
    cs: list[str], store: Path, env: dict[str, str], mpi: str, k: int, size: int, window: int
) -> tuple[float, float]:
    """commscope's aggregate bytes/s for k pairs at one size, at the median and the mean
    window time (NaN when the run failed)."""
    argv = [*cs, "--store", str(store), "run", "mbw", "--mpi", mpi, "--np", str(2 * k),
            "--pairs-per-step", str(k), "--sizes", str(size), "--window", str(window),
            "--min-samples", str(OSU_ITERATIONS), "--json", "--quiet"]  # fmt: skip
    o = peers_run.run_cmd(argv, env)
    if o.error:
        return math.nan, math.nan
    with Store.open(store) as s:
        [point] = s.points(int(json.loads(o.stdout)["run"]))
    return point.bandwidth_Bps, point.bytes_per_sample / statistics.fmean(point.samples_s)


def osu_mbw(
    mpi: mpi_mod.MPIInstall, built: Path, env: dict[str, str], k: int, size: int, window: int
) -> float:
    """osu_mbw_mr's aggregate bytes/s for k pairs at one size (NaN when absent)."""
    osu = built / peers_run.OSU_PT2PT / "osu_mbw_mr"
    program = [str(osu), "-W", str(window), "-m", f"{size}:{size}"]
    row = re.compile(rf"^{size}\s+([\d.]+)\s+[\d.]+\s*$", re.MULTILINE)
    o = peers_run.run_cmd(launch.build_job(mpi, 2 * k, program).argv, env, row)
    m = row.search(o.stdout)
    return float(m.group(1)) * 1e6 if m else math.nan


def compare(mpis: list[str], rounds: int, pairs: list[int], sizes: list[int], window: int) -> int:
    """Print per-round figures and ratios, then the medians against the goal."""
    cs = peers_run.commscope_argv()
    env = dict(os.environ, **launch.root_env())
    ratios: dict[tuple[str, int, int], list[float]] = {}
    print(f"\nmbw beside osu_mbw_mr (window {window}; MB/s = 10^6 bytes/s, aggregate over pairs)")
    print(f"{'round':>5} {'mpi':>8} {'k':>2} {'bytes':>8} {'commscope':>11} {'cs mean':>11}"
          f" {'osu':>11} {'ratio':>7} {'mean ratio':>10}")  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="commscope-mbw-") as tmp:
        store = Path(tmp) / "store.sqlite"
        build, script = peers_run.build_peers, peers_run.BUILD_SCRIPT
        installs = {m: (mpi_mod.resolve(m), build(m, script)) for m in mpis}
        for r in range(1, rounds + 1):
            for name, (mpi, built) in installs.items():
                for k in pairs:
                    for size in sizes:
                        ours, mean = cs_mbw(cs, store, env, name, k, size, window)
                        theirs = osu_mbw(mpi, built, env, k, size, window)
                        ratio = ours / theirs
                        ratios.setdefault((name, k, size), []).append(ratio)
                        print(f"{r:>5} {name:>8} {k:>2} {size:>8} {ours / 1e6:>11.1f}"
                              f" {mean / 1e6:>11.1f} {theirs / 1e6:>11.1f} {ratio:>7.3f}"
                              f" {mean / theirs:>10.3f}", flush=True)  # fmt: skip
    print("\nmedian ratio commscope / osu_mbw_mr over the rounds:")
    missed = 0
    for (name, k, size), values in ratios.items():
        med = statistics.median(values)
        ok = abs(med - 1) <= GOAL
        missed += not ok
        print(f"  {name:>8} k={k} {size:>8} B: {med:.3f}  {'PASS' if ok else 'MISS'}"
              f" (goal within {GOAL:.0%})")  # fmt: skip
    return missed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--mpi", default="openmpi,mpich")
    parser.add_argument("--pairs", default="1,2", help="pair counts k (2k ranks each)")
    parser.add_argument("--sizes", default="8,4096,1048576")
    parser.add_argument("--window", type=int, default=64)
    args = parser.parse_args()
    compare(
        [m for m in args.mpi.split(",") if m],
        args.rounds,
        [int(k) for k in args.pairs.split(",")],
        [int(s) for s in args.sizes.split(",")],
        args.window,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
