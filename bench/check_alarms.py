"""False alarms and detection of `commscope check` on a 2-node virtual cluster (root).

A baseline of 3 runs each of p2p (8 B, 64 KiB, 1 MiB) and Alltoall at 1 MiB, on 2 nodes at
--rate (default 400 mbit: at 1 gbit TCP between namespaces on two shared cores moved only
93 MB/s, 74 % of the rate, so a link at 800 mbit still carried all of it and a "20 % drop"
dropped nothing; at 400 mbit the link, not the CPU, is the bottleneck). Then:
  * false alarms: N checks of each baseline on the unchanged cluster, default tolerance;
    every non-zero exit is counted, with the figures that tripped;
  * detection: one node's link at 80 % of the rate (a 20 % bandwidth drop on one link), N
    checks of the p2p baseline: how many exit 2 naming that link's inter-node bandwidth;
  * the wall time of a check that measures (p2p and Alltoall, one after the other).
Prints the rates side by side; not a test.

    .venv/bin/python bench/check_alarms.py [--checks 20] [--baseline-runs 3] [--rate 400mbit]
        [--lock /tmp/commscope-bench.lock] [--store S]
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
from pathlib import Path

from bench_lock import locked

from commscope.measure import vcluster

SLOW_NODE = "csnode2"
REQUESTS = {
    "p2p": ["run", "p2p", "--vcluster", "--sizes", "8,64KiB,1MiB"],
    "coll": ["run", "coll", "--vcluster", "--ops", "alltoall", "--sizes", "1MiB"],
}


def commscope(store: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, COMMSCOPE_STORE=str(store))
    return subprocess.run(
        [sys.executable, "-m", "commscope", *args], capture_output=True, text=True, env=env
    )


def check(store: Path, baseline: str) -> tuple[int, float, dict]:
    start = time.monotonic()
    out = commscope(store, "check", "--baseline", baseline, "--json")
    took = time.monotonic() - start
    verdict = json.loads(out.stdout) if out.stdout.strip() else {"figures": [], "load": []}
    return out.returncode, took, verdict


def tripped(verdict: dict) -> list[str]:
    return [f"{f['status']} {f['key']} {f.get('worse_by') or 0:+.1%}"
            for f in verdict["figures"] if f["status"] in ("WARNING", "CRITICAL")]  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checks", type=int, default=20)
    parser.add_argument("--baseline-runs", type=int, default=3)
    parser.add_argument("--drop", type=float, default=0.2, help="bandwidth drop on one link")
    parser.add_argument("--rate", default="400mbit", help="every link's rate (tc syntax)")
    parser.add_argument("--lock", help="flock this file around the measurements")
    parser.add_argument("--store", help="store to use [default: a temporary one]")
    args = parser.parse_args()
    store = Path(args.store or tempfile.mkdtemp(prefix="check-alarms-")) / "store.sqlite"
    with locked(args.lock):
        if vcluster.status() is not None:
            print("a vcluster is up: run 'commscope vcluster down' first", file=sys.stderr)
            return 2
        vcluster.up(2, args.rate)
        try:
            return measure(args, store)
        finally:
            vcluster.down()


def measure(args: argparse.Namespace, store: Path) -> int:
    for name, request in REQUESTS.items():
        runs = []
        for _ in range(args.baseline_runs):
            out = commscope(store, *request, "--json", "--quiet")
            if out.returncode != 0:
                print(out.stderr, file=sys.stderr)
                return 1
            runs.append(str(json.loads(out.stdout)["run"]))
        commscope(store, "baseline", "create", name, *runs)
        print(f"baseline {name}: runs {', '.join(runs)}")

    alarms: dict[str, list[tuple[int, list[str], bool]]] = {name: [] for name in REQUESTS}
    walls = []
    for i in range(args.checks):
        both = 0.0
        for name in REQUESTS:
            code, took, verdict = check(store, name)
            both += took
            alarms[name].append((code, tripped(verdict), bool(verdict["load"])))
            print(f"unchanged check {i + 1} {name}: exit {code} in {took:.1f} s"
                  + (f": {'; '.join(tripped(verdict))}" if code else ""))  # fmt: skip
        walls.append(both)

    slow_rate = f"{round(vcluster.parse_rate(args.rate) * (1 - args.drop) / 1e6)}mbit"
    vcluster.set_rate(SLOW_NODE, slow_rate)
    caught = []
    for i in range(args.checks):
        code, took, verdict = check(store, "p2p")
        named = [
            f for f in verdict["figures"]
            if f["status"] == "CRITICAL" and f["name"] == "p2p_bandwidth_bytes_per_second"
            and SLOW_NODE in f["labels"].get("link", "")
        ]  # fmt: skip
        caught.append(code == 2 and bool(named))
        print(f"{slow_rate} check {i + 1}: exit {code}, inter-node bandwidth named:"
              f" {bool(named)} ({'; '.join(tripped(verdict))})")  # fmt: skip
    vcluster.set_rate(SLOW_NODE, args.rate)

    print()
    print(f"{'':34} {'p2p':>10} {'alltoall':>10}")
    for label, pick in (
        ("non-zero exits (unchanged)", lambda rows: sum(1 for c, _, _ in rows if c)),
        ("  of which CRITICAL", lambda rows: sum(1 for c, _, _ in rows if c == 2)),
        ("  of which under load", lambda rows: sum(1 for c, _, lo in rows if c and lo)),
    ):
        print(f"{label:34} {pick(alarms['p2p']):>10} {pick(alarms['coll']):>10}")
    either = sum(1 for p, c in zip(alarms["p2p"], alarms["coll"], strict=True) if p[0] or c[0])
    print(f"false-alarm rate (a non-zero exit of either check): {either}/{args.checks}")
    print(f"20 % drop on {SLOW_NODE}'s link caught: {sum(caught)}/{args.checks}")
    print(
        f"a check that measures (p2p + alltoall): median {statistics.median(walls):.1f} s,"
        f" max {max(walls):.1f} s"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
