"""Does the matrix name the right thing, once confirmed? Three faults on a 4-node vcluster (root).

Each case runs `commscope run matrix --vcluster` ``--runs`` times (first pass, then the
confirmation round against healthy partners) and counts what the confirmed verdicts name:
  * healthy: every link at the cluster's rate; nothing may be named bad (transients may be);
  * slow node: one node's link at half the rate, both ways: that node, named bad every time;
  * slow link: one ordered pair slowed on the sender's side alone (an htb class for the
    receiver's address): named as that link, not as a node.
Prints the counts side by side. Not a test.

    .venv/bin/python bench/matrix_confirm.py [--runs 20] [--rate 200mbit]
        [--lock /tmp/commscope-bench.lock] [--cases healthy,"slow node","slow link"]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

from bench_lock import locked

from commscope.measure import vcluster

SLOW_NODE = "csnode3"
SLOW_LINK = ("csnode2", "csnode4")


def matrix(store: Path) -> list[dict]:
    env = dict(os.environ, COMMSCOPE_STORE=str(store))
    out = subprocess.run(
        [sys.executable, "-m", "commscope", "run", "matrix", "--vcluster", "--sizes", "256KiB",
         "--samples", "5", "--json", "--quiet"],
        capture_output=True, text=True, env=env,
    )  # fmt: skip
    if out.returncode != 0:
        print(out.stderr.strip(), file=sys.stderr)
        return []
    run = json.loads(out.stdout)["run"]
    shown = subprocess.run([sys.executable, "-m", "commscope", "show", str(run), "--json"],
                           capture_output=True, text=True, env=env, check=True)  # fmt: skip
    return list(json.loads(shown.stdout)["confirmation"])


def slow_one_link(state: vcluster.ClusterState, rate: str, slow: str) -> None:
    """Shape csnode2 -> csnode4 alone at ``slow``: an htb class for csnode4's address."""
    src = next(n for n in state.nodes if n.name == SLOW_LINK[0])
    dst = next(n for n in state.nodes if n.name == SLOW_LINK[1])
    tc = ["ip", "netns", "exec", src.name, "tc"]
    subprocess.run([*tc, "qdisc", "replace", "dev", "eth0", "root", "handle", "1:", "htb",
                    "default", "1"], check=True)  # fmt: skip
    for cls, r in (("1:1", rate), ("1:2", slow)):
        subprocess.run([*tc, "class", "add", "dev", "eth0", "parent", "1:", "classid", cls,
                        "htb", "rate", r, "ceil", r], check=True)  # fmt: skip
    subprocess.run([*tc, "filter", "add", "dev", "eth0", "parent", "1:", "protocol", "ip",
                    "u32", "match", "ip", "dst", f"{dst.address}/32", "flowid", "1:2"],
                   check=True)  # fmt: skip


def tally(verdicts: list[list[dict]]) -> Counter[str]:
    return Counter(f"{v['verdict']} {v['where']} {v['name']}" for run in verdicts for v in run)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--rate", default="200mbit")
    parser.add_argument("--lock")
    parser.add_argument("--cases", default="healthy,slow node,slow link",
                        help="which of the three, comma-separated")  # fmt: skip
    args = parser.parse_args()
    store = Path(tempfile.mkdtemp(prefix="matrix-confirm-")) / "store.sqlite"
    half = f"{vcluster.parse_rate(args.rate) // 2_000_000}mbit"
    results = {}
    with locked(args.lock):
        for case in args.cases.split(","):
            state = vcluster.up(4, args.rate)
            try:
                if case == "slow node":
                    vcluster.set_rate(SLOW_NODE, half)
                elif case == "slow link":
                    slow_one_link(state, args.rate, half)
                results[case] = [matrix(store) for _ in range(args.runs)]
            finally:
                vcluster.down()
            print(f"{case}: {dict(tally(results[case]))}")
    print()
    node = f"bad node {SLOW_NODE}"
    link = f"bad link {SLOW_LINK[0]}->{SLOW_LINK[1]}"
    for case, runs in results.items():
        bad = sum(1 for run in runs if any(v["verdict"] == "bad" for v in run))
        said = [{f"{v['verdict']} {v['where']} {v['name']}" for v in run} for run in runs]
        named_node = sum(1 for run in said if node in run)  # bad, as a node: not transient
        named_link = sum(1 for run in said if link in run)
        print(f"{case:10} runs {len(runs):3}  any bad {bad:3}  {node} {named_node:3}"
              f"  {link} {named_link:3}")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
