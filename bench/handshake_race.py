"""How a ring's rendezvous answers, waiting behind measured queues, depend on who posts first.

Above its eager limit an MPI sends a message between nodes only after the receiver answers.
The answer leaves the receiver's node at once, unless that node is already sending bulk data
between nodes: then it waits in the node's queue, as long as contention level "queue"
measured (`commscope run contention --levels queue`, [contention](../docs/reference/contention.md)).
Whether the receiver's bulk already flows is a race: it does when the receiver posted its own
send earlier than the sender's request arrived, by more than its own handshake. This plays
the ring Allreduce rank by rank (a transfer starts once both ranks are done with their earlier
steps, as the model counts) with every rank's posts scattered by a uniform jitter, each
transfer between nodes lasting the model's step time, its answer waiting a wait drawn from
the measured ones when the race is lost, beyond the time its eager part takes anyway. Races
need something to decide them: either the posts are scattered (--jitter-ms) or each transfer's
time varies by a relative standard deviation (--noise), answers due at the same moment going
in random order. It prints the mean time per placement beside the model's: how much of a
placement's excess the race explains, and how much that depends on a scatter nothing
measures. Not a test: it prints figures.

    .venv/bin/python bench/handshake_race.py --store S --queue-run RUN [--procs 4]
        [--step-ms 45,180] [--sizes 256K,1MiB] [--eager 64K] [--rate 50mbit]
        [--jitter-ms 0.1,1,5] [--noise 0.005,0.02] [--draws 400]

--step-ms and --sizes go in pairs: the model's ring step between nodes and the stream size
whose measured waits apply (45 ms with the waits of 256 KiB for a 1 MiB Allreduce on 4 ranks
at 50 mbit, 180 ms with those of 1 MiB for 4 MiB).
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from commscope.analysis import queue as queue_analysis
from commscope.data.store import Store
from commscope.measure.vcluster.model import parse_rate
from commscope.units import parse_size


def ring_time(
    nodes: Sequence[int],
    step_s: float,
    eager_s: float,
    waits: np.ndarray,
    latency_s: float,
    jitter_s: float,
    noise: float,
    draws: int,
    seed: int = 1,
) -> float:
    """Mean time of the ring Allreduce on ``nodes`` (rank -> node) over ``draws`` plays."""
    p = len(nodes)
    rnd = random.Random(seed)
    times = []
    for _ in range(draws):
        done = [rnd.uniform(0, jitter_s) for _ in range(p)]
        flows: list[tuple[int, float, float]] = []  # bulk between nodes: (node, start, end)
        for _step in range(2 * (p - 1)):
            posts = []
            for s in range(p):
                d = (s + 1) % p
                sent, posted = (
                    done[s] + rnd.uniform(0, jitter_s),
                    done[d] + rnd.uniform(0, jitter_s),
                )
                posts.append((max(sent + latency_s, posted), rnd.random(), s, d, sent))
            ends = list(done)
            for answer, _tie, s, d, sent in sorted(posts):  # answers in the order they are due
                took = step_s * max(0.5, rnd.gauss(1.0, noise)) if noise else step_s
                if nodes[s] == nodes[d]:
                    end = answer
                else:
                    busy = any(n == nodes[d] and b <= answer < e for n, b, e in flows)
                    wait = float(waits[rnd.randrange(waits.size)]) if busy else 0.0
                    bulk = answer + wait + latency_s
                    end = max(sent + eager_s, bulk) + took - eager_s
                    flows.append((nodes[s], bulk, end))
                ends[s] = max(ends[s], end)
                ends[d] = max(ends[d], end)
            done = ends
        times.append(max(done))
    return statistics.fmean(times)


def main() -> int:
    """Print, per step time and jitter, the mean ring time of each placement and the model's."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--store", type=Path, required=True)
    ap.add_argument("--queue-run", required=True, help="a run with contention level queue")
    ap.add_argument("--procs", type=int, default=4)
    ap.add_argument("--step-ms", default="45,180")
    ap.add_argument("--sizes", default="256K,1MiB", help="stream size of each step's waits")
    ap.add_argument("--eager", default="64K", help="the MPI's eager limit between nodes")
    ap.add_argument("--rate", default="50mbit", help="link rate: the eager part's time")
    ap.add_argument("--jitter-ms", default="0.1,1,5", help="scatter of the posts (no noise)")
    ap.add_argument("--noise", default="0.005,0.02", help="transfer times' relative sd (no jitter)")
    ap.add_argument("--draws", type=int, default=400)
    args = ap.parse_args()
    if args.procs < 4 or args.procs % 2:
        ap.error(f"--procs {args.procs}: give an even count of at least 4 (p x 1 against p/2 x 2)")
    steps = [float(x) / 1e3 for x in args.step_ms.split(",")]
    sizes = [parse_size(x) for x in args.sizes.split(",")]
    if len(steps) != len(sizes):
        ap.error("--step-ms and --sizes: give as many of each")
    with Store.open(args.store) as store:
        run_id = store.resolve_run(args.queue_run)
        found = {w.bytes: w for w in queue_analysis.waits(store.queues(run_id))}
    missing = [s for s in sizes if s not in found]
    if missing:
        ap.error(
            f"--sizes: run {run_id} measured no queue waits at {missing}; it has {sorted(found)}"
        )
    eager_s = parse_size(args.eager) / (parse_rate(args.rate) / 8)
    p = args.procs
    placements = {f"{p}x1": list(range(p)), f"{p // 2}x2": [r // 2 for r in range(p)]}
    print(f"ring Allreduce, {p} ranks; eager part {eager_s * 1e3:.1f} ms; {args.draws} draws")
    for step_s, size in zip(steps, sizes, strict=True):
        w = found[size]
        waits = np.maximum(w.waits_s, 0.0)
        latency_s = w.idle_s / 2  # one way: half the measured idle round trip
        model = 2 * (p - 1) * step_s * 1e3
        print(
            f"step {step_s * 1e3:g} ms, waits of the {size} B stream (p50"
            f" {w.quantile(0.5) * 1e3:.1f} ms, {w.waiting_share:.0%} waited); model {model:.0f} ms"
        )
        cases = [(f"jitter {x} ms", float(x) / 1e3, 0.0) for x in args.jitter_ms.split(",")]
        cases += [(f"noise {float(x):.1%}", 0.0, float(x)) for x in args.noise.split(",")]
        for name, jitter, noise in cases:
            found_ms = {
                label: ring_time(
                    nodes, step_s, eager_s, waits, latency_s, jitter, noise, args.draws
                )
                * 1e3
                for label, nodes in placements.items()
            }
            text = ", ".join(f"{k} {t:.0f} ms (+{t / model - 1:.0%})" for k, t in found_ms.items())
            print(f"  {name}: {text}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
