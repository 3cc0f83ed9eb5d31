"""The placement predictor beside SimGrid SMPI, 64 to 4,096 ranks, on a two-level network, a fat
tree, a dragonfly or a torus.

--cluster two-level (64 and 192 ranks): 64 nodes of 12 cores (one socket) under 4 leaf
switches of 16 nodes, whose uplinks to the spine carry 4 NICs' rate (4:1 oversubscribed).
--cluster fat-tree (1,024 and 4,096 ranks): 1,024 nodes of 8 cores in a two-level fat tree,
32 nodes under each of 32 leaves, each leaf with 16 links up (2:1 tapered), written as
SimGrid's FAT_TREE zone. --cluster dragonfly (the same ranks): 1,024 nodes of 8 cores in 8
groups of 4 chassis of 8 routers of 4 nodes, SimGrid's DRAGONFLY zone. --cluster torus (the
same ranks): 1,024 nodes of 8 cores on an 8 x 8 x 16 torus, SimGrid's TORUS zone.

The predictor sees the fat tree's leaf switches and their uplinks, the dragonfly's and the
torus' links one by one as SimGrid routes them, and each route's latency; SMPI routes each
message over the topology's own links. Every model: NIC links 10 Gbit/s and 1.5 us each way
(--link-latency), a node's memory link 10 GB/s and 0.2 us, and SimGrid's own SMPI factors
(the calibration on TACC's Stampede that SMPI uses by default), written out explicitly.

SimGrid gives a message a share of a link in inverse proportion to its route's penalty (its
latency plus SMPI's weight-S over each link's rate, here in proportion to the links it
crosses). Links of no latency make every penalty equal: --link-latency 0 sets the predictor,
which shares a link evenly, beside SMPI where only their counting differs.

SMPI runs ``simulate.probe`` (one collective after a barrier, the slowest rank's time) on the
platform commscope writes from that model (``simulate.platform``) with the options
``simulate run`` uses (``simulate.smpi.config``); the predictor prices the same algorithm
with the same figures (``simulate.predict_cost``):

- alltoall: the block algorithm with block = p (one batch of Isend/Irecv), SMPI's
  ``smpi/alltoall:basic_linear``;
- bcast: the binomial tree sending farthest first, ``smpi/bcast:binomial_tree``;
- allreduce: recursive doubling with MPICH's fold, ``smpi/allreduce:rdb``;
- alltoall-pairwise: the pairwise All-to-all (step k: rank r sends to r + k), SMPI's
  ``smpi/alltoall:ring``, which at thousands of ranks SMPI runs far faster than one batch.

Per op and size it prints each placement's predicted and simulated time and their ratio,
Kendall's tau between the two orders, and the predictor's wall time per ranking beside SMPI's
for the same placements (one smpirun each); the speed-up is their ratio, the same as per
placement. Goals (PASS/MISS): tau = 1, every time within 10 %, predictor >= 100x
faster; the order is also compared with times within 1 % counted as ties (SMPI has no
noise, but the predictor ties placements SMPI tells apart by 0.04 %). The smpiruns hold
--lock (flock), released after --hold seconds and between ops; --results keeps SMPI's
times so a re-run simulates only what is new. Not a test: it prints figures.

    .venv/bin/python bench/predict_vs_smpi.py --lock /tmp/commscope-bench.lock \\
        [--cluster two-level|fat-tree|dragonfly|torus] [--procs 64,192] [--sizes 65536,1048576]
        [--ops alltoall,bcast,allreduce,alltoall-pairwise] [--link-latency 1.5e-6]
"""

from __future__ import annotations

import argparse
import dataclasses
import fcntl
import hashlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import TextIO

from scipy.stats import kendalltau

from commscope.predict import Placement, build, rank_placements, regular
from commscope.predict.model import ClusterModel, Link, Switch
from commscope.predict.model_yaml import model_from_dict
from commscope.simulate import platform, probe, smpi
from commscope.simulate.params import SimParams
from commscope.simulate.predict_cost import STAMPEDE_BW_FACTOR, STAMPEDE_LAT_FACTOR, smpi_cost

NODES, CORES, LEAVES = 64, 12, 4
NIC_BPS = 10e9 / 8
PARAMS = SimParams(
    nic_bw_Bps=NIC_BPS,
    nic_lat_s=1.5e-6,
    memory_bw_Bps=10e9,
    memory_lat_s=0.2e-6,
    lat_factor=STAMPEDE_LAT_FACTOR,
    bw_factor=STAMPEDE_BW_FACTOR,
    calibrated_from="SimGrid's SMPI defaults (TACC Stampede)",
)
# op -> (predictor operation and algorithm, SimGrid algorithm)
ALGOS = {
    "alltoall": ("alltoall", "block", "basic_linear"),
    "bcast": ("bcast", "binomial-halving", "binomial_tree"),
    "allreduce": ("allreduce", "recursive-doubling", "rdb"),
    "alltoall-pairwise": ("alltoall", "pairwise", "ring"),
}
# p -> placements (nodes, ranks per node, order)
PLACEMENTS = {
    1024: [
        (1024, 1, "block"),
        (512, 2, "block"),
        (256, 4, "block"),
        (128, 8, "block"),
        (128, 8, "cyclic"),
    ],
    4096: [(1024, 4, "block"), (512, 8, "block"), (1024, 4, "cyclic"), (512, 8, "cyclic")],
    64: [(64, 1, "block"), (32, 2, "block"), (16, 4, "block"), (8, 8, "block"), (16, 4, "cyclic")],
    192: [
        (16, 12, "block"),
        (32, 6, "block"),
        (48, 4, "block"),
        (64, 3, "block"),
        (16, 12, "cyclic"),
    ],
}
GOAL_ERROR, GOAL_SPEEDUP = 0.10, 100.0
TIE = 0.01


TOPOLOGIES = {
    "fat-tree": {"kind": "fat_tree", "down": [32, 32], "up": [1, 16]},
    "dragonfly": {"kind": "dragonfly", "groups": 8, "chassis": 4, "routers": 8,
                  "nodes_per_router": 4},
    "torus": {"kind": "torus", "dims": [8, 8, 16]},
}  # fmt: skip
TOPOLOGY_CORES = 8


def cluster(name: str, params: SimParams = PARAMS) -> ClusterModel:
    """The model named by --cluster (see the module docstring)."""
    if name in TOPOLOGIES:
        channels = {  # every link of a topology has the NIC's latency
            "nic": {"bandwidth": f"{NIC_BPS:.0f} B/s", "latency": f"{params.nic_lat_s} s"},
            "memory": {
                "bandwidth": f"{PARAMS.memory_bw_Bps:.0f} B/s",
                "latency": f"{PARAMS.memory_lat_s} s",
            },
        }
        data = {"name": name, "sockets": 1, "cores": TOPOLOGY_CORES, "channels": channels}
        return model_from_dict({**data, "topology": TOPOLOGIES[name]}, f"--cluster {name}")
    per_leaf = NODES // LEAVES
    leaves = tuple(
        Switch(f"leaf{k}", tuple(range(k * per_leaf, (k + 1) * per_leaf)), Link(4 * NIC_BPS))
        for k in range(LEAVES)
    )
    return ClusterModel(
        "two-level",
        tuple(f"node{i}" for i in range(NODES)),
        1,
        CORES,
        memory=Link(PARAMS.memory_bw_Bps, PARAMS.memory_lat_s),
        nic=Link(NIC_BPS, 2 * params.nic_lat_s),  # a transfer crosses two NIC links
        switches=leaves,
    )


class Lock:
    """flock on a file, kept over consecutive runs until it has been held ``budget_s``."""

    def __init__(self, path: str | None, budget_s: float) -> None:
        self.path, self.budget_s = path, budget_s
        self.held: TextIO | None = None
        self.since = 0.0

    def take(self) -> None:
        if self.held and time.perf_counter() - self.since > self.budget_s:
            self.release()  # let the others in
        if self.path and not self.held:
            self.held = open(self.path, "a")  # noqa: SIM115 (kept open across runs)
            fcntl.flock(self.held, fcntl.LOCK_EX)
            self.since = time.perf_counter()

    def release(self) -> None:
        if self.held:
            self.held.close()
            self.held = None


def simulate(
    program: Path,
    model: ClusterModel,
    params: SimParams,
    pl: Placement,
    op: str,
    size: int,
    lock: Lock,
    limit: float,
) -> tuple[float, float] | None:
    """SMPI's simulated time of one launch and the wall time of its smpirun; None past limit."""
    with tempfile.TemporaryDirectory(prefix="smpi-") as tmp:
        workdir = Path(tmp)
        name, _, algorithm = ALGOS[op]
        job = probe.model_job(
            program, model, params, pl, name, size, workdir, [f"smpi/{name}:{algorithm}"]
        )
        lock.take()
        t0 = time.perf_counter()
        # Its own process group: smpirun is a shell script, and killing it alone would leave
        # the simulation running.
        run = subprocess.Popen(
            job.argv,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=workdir,
            env={**os.environ, **job.env},
            start_new_session=True,
        )
        try:
            stdout, stderr = run.communicate(timeout=limit)
        except subprocess.TimeoutExpired:
            os.killpg(run.pid, signal.SIGKILL)
            run.communicate()
            print(f"{pl.label:<16} SMPI took over {limit:.0f} s of wall time; left out")
            return None
        wall = time.perf_counter() - t0
    if run.returncode != 0:
        raise SystemExit(f"smpirun {op} {size} on {pl.label}: {stderr.strip()[-500:]}")
    return probe.simulated_s(stdout), wall


def key(model: ClusterModel, params: SimParams, pl: Placement, op: str, size: int) -> str:
    # The platform and options fix the simulation; hash them so a changed writer re-runs.
    text = platform.platform_xml(model, params) + platform.hostfile(model, pl)
    name, _, algorithm = ALGOS[op]
    text += " ".join(smpi.config(params, [f"smpi/{name}:{algorithm}"]))
    digest = hashlib.sha256(text.encode()).hexdigest()[:16]
    return f"{op} {size} {pl.label} {digest}"


def tau_within(a: list[float], b: list[float], rel: float = TIE) -> float:
    """Kendall's tau-b with pairs whose times differ by less than ``rel`` counted as ties."""

    def sign(x: float, y: float) -> int:
        return 0 if abs(x - y) <= rel * max(abs(x), abs(y)) else (1 if x > y else -1)

    n = len(a)
    pairs = [(i, j) for i in range(n) for j in range(i + 1, n)]
    da = [sign(a[i], a[j]) for i, j in pairs]
    db = [sign(b[i], b[j]) for i, j in pairs]
    agree = sum(x * y for x, y in zip(da, db, strict=True))
    norm = (sum(x != 0 for x in da) * sum(y != 0 for y in db)) ** 0.5
    return agree / norm if norm else (1.0 if da == db else 0.0)


def verdict(ok: bool) -> str:
    return "PASS" if ok else "MISS"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cluster", choices=("two-level", *TOPOLOGIES), default="two-level")
    parser.add_argument("--procs", default="64,192")
    parser.add_argument("--sizes", default="65536,1048576", help="bytes, comma-separated")
    parser.add_argument("--ops", default="alltoall,bcast,allreduce")
    parser.add_argument("--lock", help="flock this file around the smpiruns")
    parser.add_argument(
        "--hold", type=float, default=120.0, help="seconds to keep the lock over several runs"
    )
    parser.add_argument("--results", type=Path, help="JSON file keeping SMPI's times")
    parser.add_argument("--repeat", type=int, default=5, help="best of, for the predictor")
    parser.add_argument(
        "--limit", type=float, default=240.0, help="wall seconds one smpirun may take"
    )
    parser.add_argument(
        "--cached", action="store_true", help="only SMPI times kept in --results; run none"
    )
    parser.add_argument(
        "--link-latency",
        type=float,
        default=PARAMS.nic_lat_s,
        help="seconds, every NIC and topology link (0: SimGrid shares links evenly)",
    )
    args = parser.parse_args()
    params = dataclasses.replace(PARAMS, nic_lat_s=args.link_latency)
    model, cost = cluster(args.cluster, params), smpi_cost(params)
    lock = Lock(args.lock, args.hold)
    kept = json.loads(args.results.read_text()) if args.results and args.results.exists() else {}
    summary = []
    with tempfile.TemporaryDirectory(prefix="predict-vs-smpi-") as tmp:
        program = probe.build(Path(tmp))
        for p in (int(x) for x in args.procs.split(",")):
            placements = [regular(model, n, c, order) for n, c, order in PLACEMENTS[p]]
            for op in args.ops.split(","):
                for size in (int(x) for x in args.sizes.split(",")):
                    pred_wall = float("inf")
                    for _ in range(args.repeat):
                        t0 = time.perf_counter()
                        name, algorithm, _ = ALGOS[op]
                        pattern = build(name, p, size, algorithm, block=p)
                        ranked = rank_placements(model, pattern, cost, placements)
                        pred_wall = min(pred_wall, time.perf_counter() - t0)
                    predicted = {pr.placement.label: pr.time_s for pr in ranked}
                    print(f"\n{pattern.describe()}; SMPI smpi/{name}:{ALGOS[op][2]}")
                    print(f"{'placement':<16} {'predicted s':>12} {'SMPI s':>12} {'ratio':>7}")
                    smpi_s, walls, pred = [], [], []
                    for pl in placements:
                        k = key(model, params, pl, op, size)
                        if k not in kept and args.cached:
                            continue
                        if k not in kept:
                            done = simulate(program, model, params, pl, op, size, lock, args.limit)
                            if done is None:
                                continue
                            kept[k] = done
                            if args.results:
                                args.results.write_text(json.dumps(kept, indent=1))
                        sim, wall = kept[k]
                        got = predicted[pl.label]
                        smpi_s.append(sim)
                        walls.append(wall)
                        pred.append(got)
                        print(f"{pl.label:<16} {got:>12.6g} {sim:>12.6g} {got / sim:>7.3f}")
                        sys.stdout.flush()
                    lock.release()  # the analysis needs no lock
                    if len(pred) < 2:
                        continue
                    tau = float(kendalltau(pred, smpi_s).statistic)
                    near = tau_within(pred, smpi_s)
                    worst = max(abs(a / b - 1) for a, b in zip(pred, smpi_s, strict=True))
                    # Like for like: SMPI ranks the placements it simulated, one run each.
                    smpi_wall = sum(walls) * len(placements) / len(walls)
                    speedup = smpi_wall / pred_wall
                    print(
                        f"tau {tau:.3f} {verdict(tau > 0.999)} (1 % ties: {near:.3f}"
                        f" {verdict(near > 0.999)}); worst |error| {100 * worst:.1f} %"
                        f" {verdict(worst <= GOAL_ERROR)}; per ranking of {len(placements)}"
                        f" placements: predictor {1e3 * pred_wall:.2f} ms, SMPI"
                        f" {smpi_wall:.2f} s: {speedup:.0f}x {verdict(speedup >= GOAL_SPEEDUP)}"
                    )
                    summary.append((p, op, size, tau, near, worst, pred_wall, smpi_wall))
    print(
        f"\n{'p':>4} {'op':<10} {'bytes':>8} {'tau':>6} {'tau 1%':>6} {'worst err':>9}"
        f" {'speedup':>8}  order/time/speed"
    )
    for p, op, size, tau, near, worst, pw, sw in summary:
        print(
            f"{p:>4} {op:<10} {size:>8} {tau:>6.3f} {near:>6.3f} {100 * worst:>8.1f}%"
            f" {sw / pw:>7.0f}x  {verdict(tau > 0.999)}/{verdict(worst <= GOAL_ERROR)}"
            f"/{verdict(sw / pw >= GOAL_SPEEDUP)}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
