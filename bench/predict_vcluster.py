"""How well placement predictions order and price the block All-to-all on the virtual cluster.

Builds a vcluster (root), measures its t(m, cf) tables (memory and NIC level, two ranks per
node), then runs `commscope validate predict` for each p: every multi-node placement is run
for real and set beside its prediction. Prints each placement's predicted and measured time,
and per p and size Kendall's tau and the median relative error against the goals (tau = 1,
median |error| <= 15 %). Takes about 15 minutes at the defaults. Not a test: it prints figures.

    .venv/bin/python bench/predict_vcluster.py [--nodes 8] [--rate 50mbit] [--procs 4,8]
        [--mpi openmpi] [--mca btl_tcp_flags=send,inplace,need-ack,need-csum,hetero-rdma]

The default --mca turns off the Open MPI TCP BTL's PUT protocol, under which a pair exchange
moves one direction at a time (give --mca none to keep Open MPI's defaults).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

NO_PUT = "btl_tcp_flags=send,inplace,need-ack,need-csum,hetero-rdma"
GOAL_MEDIAN_ERROR = 0.15


def commscope(store: Path, *args: str) -> str:
    """Run the CLI (argument list, no shell) and return its stdout; stop on failure."""
    argv = [sys.executable, "-m", "commscope", "--store", str(store), *args]
    out = subprocess.run(argv, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"commscope {' '.join(args)} failed: {out.stderr.strip()}")
    return out.stdout


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=8)
    ap.add_argument("--rate", default="50mbit")
    ap.add_argument("--procs", default="4,8")
    ap.add_argument("--sizes", default="256K,1MiB,4MiB")
    ap.add_argument("--mpi", default="openmpi")
    ap.add_argument("--mca", default=NO_PUT, help="NAME=VALUE, or none")
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("bench/predict_vcluster.py: the virtual cluster needs root; run it as root")
    mca = [] if args.mca == "none" else ["--mca", args.mca]
    store = Path(tempfile.mkdtemp(prefix="commscope-bench-")) / "store.sqlite"
    print(f"{args.nodes} nodes at {args.rate}, {args.mpi}, mca: {args.mca}; store {store}")
    commscope(store, "vcluster", "down")
    try:
        commscope(store, "vcluster", "up", "--nodes", str(args.nodes), "--rate", args.rate)
        run = json.loads(
            commscope(
                store,
                "run",
                "contention",
                "--vcluster",
                "--mpi",
                args.mpi,
                "--ranks-per-node",
                "2",
                "--levels",
                "memory,nic",
                "--sizes",
                args.sizes,
                "--json",
                "--quiet",
                *mca,
            )
        )["run"]
        print(commscope(store, "show", str(run)))
        met = True
        for p in args.procs.split(","):
            out = json.loads(
                commscope(
                    store,
                    "validate",
                    "predict",
                    "--procs",
                    p,
                    "--mpi",
                    args.mpi,
                    "--tables",
                    str(run),
                    "--sizes",
                    args.sizes,
                    "--vcluster",
                    "--json",
                )
            )
            print(f"p = {p}: placement, bytes, predicted ms, measured ms, error")
            for c in out["placements"]:
                print(
                    f"  {c['placement']:>5} {c['bytes']:>8} {c['predicted_s'] * 1e3:10.1f}"
                    f" {c['measured_s'] * 1e3:10.1f} {c['relative_error']:+7.1%}"
                )
            for v in out["sizes"]:
                ok = v["kendall_tau"] == 1.0 and v["median_relative_error"] <= GOAL_MEDIAN_ERROR
                met = met and ok
                print(
                    f"  {v['bytes']:>8} B: Kendall tau {v['kendall_tau']:.2f} (goal 1),"
                    f" median |error| {v['median_relative_error']:.1%} (goal <= 15 %)"
                    f"{'' if ok else '  MISSED'}"
                )
        print("goals met" if met else "goals missed")
        return 0
    finally:
        commscope(store, "vcluster", "down")


if __name__ == "__main__":
    sys.exit(main())
