"""How far handshake waits, chained from step to step, explain a ring's time between nodes.

Above its eager limit an MPI sends a message between nodes only after the receiver answers,
and on TCP that answer may wait in the receiver's shaped queue behind the node's own outgoing
data. A packet capture of the ring Allreduce on the virtual cluster
(bench/results/predict-vcluster.md, "Where a ring's handshakes go") found the answer leaving at once
for half the messages and 10-20 ms late for the other half, alike on 2x2 and 4x1. This prices
the ring the way the model's rank-by-rank count does (a transfer starts once both its ranks are
done with their earlier steps), with each transfer between nodes lasting the model's step time
plus such a wait, drawn at random, and transfers within a node taking no time. The mean over
draws shows what the waits cost each placement once they chain, beside the model's step-time
sum. Not a test: it prints figures, for the measured ones to be set beside.

    .venv/bin/python bench/rendezvous_chain.py [--procs 4] [--step-ms 45,180]
        [--wait-share 0.5] [--wait-ms 10,20] [--draws 4000]

--step-ms: the model's time of one ring step between nodes (the virtual cluster at 50 mbit:
45 ms for the 256 KiB blocks of a 1 MiB Allreduce on 4 ranks, 180 ms for 4 MiB's 1 MiB).
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
from collections.abc import Callable, Sequence

from commscope.predict import build

Wait = Callable[[random.Random], float]


def ring_time(
    p: int, nodes: Sequence[int], step_s: float, wait: Wait, draws: int, seed: int = 1
) -> float:
    """Mean time of the ring Allreduce on ``nodes`` (rank -> node), waits drawn per transfer."""
    steps = [step.transfers(p) for step in build("allreduce", p, 1 << 20, "ring").steps]
    rnd = random.Random(seed)
    times = []
    for _ in range(draws):
        done = [0.0] * p  # when each rank finished its previous step
        for src, dst, _bytes in steps:
            now = list(done)
            for s, d in zip(src.tolist(), dst.tolist(), strict=True):
                start = max(done[s], done[d])  # the receiver answers once it has posted
                cost = step_s + wait(rnd) if nodes[s] != nodes[d] else 0.0
                now[s] = max(now[s], start + cost)
                now[d] = max(now[d], start + cost)
            done = now
        times.append(max(done))
    return statistics.fmean(times)


def main() -> int:
    """Print, per step time, the mean ring time of each placement against the model's sum."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--procs", type=int, default=4)
    ap.add_argument("--step-ms", default="45,180")
    ap.add_argument("--wait-share", type=float, default=0.5, help="share of answers that wait")
    ap.add_argument("--wait-ms", default="10,20", help="a waiting answer's range (uniform)")
    ap.add_argument("--draws", type=int, default=4000)
    args = ap.parse_args()
    if args.procs < 4 or args.procs % 2:
        ap.error(f"--procs {args.procs}: give an even count of at least 4 (p x 1 against p/2 x 2)")
    lo, hi = (float(x) / 1e3 for x in args.wait_ms.split(","))

    def wait(rnd: random.Random) -> float:
        return rnd.uniform(lo, hi) if rnd.random() < args.wait_share else 0.0

    p = args.procs
    placements = {f"{p}x1": list(range(p)), f"{p // 2}x2": [r // 2 for r in range(p)]}
    n_steps = len(build("allreduce", p, 1 << 20, "ring").steps)
    print(
        f"ring Allreduce, {p} ranks, {n_steps} steps; answers wait {args.wait_ms} ms"
        f" in {args.wait_share:.0%} of transfers between nodes; {args.draws} draws"
    )
    for step_ms in (float(x) for x in args.step_ms.split(",")):
        model = n_steps * step_ms
        found = {
            label: ring_time(p, nodes, step_ms / 1e3, wait, args.draws) * 1e3
            for label, nodes in placements.items()
        }
        text = ", ".join(f"{label} {t:.0f} ms (+{t / model - 1:.0%})" for label, t in found.items())
        print(f"step {step_ms:g} ms: model {model:.0f} ms; with chained waits: {text}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
