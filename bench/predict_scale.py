"""How long ranking every placement takes for the block All-to-all, at 192 to 65,536 processes.

For each p, a model with p nodes of 2 sockets (so every n x c with c up to a node's cores
fits) and t(m, cf) tables shaped like those of Peryshkova and Kurnosov 2018 (contention-aware
placement: NUMA memory controller, QPI, InfiniBand QDR degradations at 128 MB on Hockney
baselines). Times ranking all placements (the pattern built beforehand), for block = 32 (the
default) and block = p (one step), best of --repeat.
Goals: <= 0.1 s at 192 processes, <= 30 s at 65,536. Also times the rank-by-rank count (no
symmetry, as for hostfile placements) up to --full-max processes. --fat-tree puts the nodes
in a two-level fat tree instead, nodes of 2 sockets x 8 cores, 32 under each leaf with 16
links up (2:1 tapered), as many leaves as the nodes fill: the predictor sees the leaves and
their uplinks (goal: <= 5 s at 4,096 processes on 1,024 nodes: --procs 4096 --nodes 1024).
Not a test: it prints figures.

    .venv/bin/python bench/predict_scale.py [--procs 192,4096,65536] [--repeat 3]
        [--fat-tree --nodes 1024]
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from collections.abc import Callable
from functools import partial
from typing import TypeVar

import numpy as np

from commscope.analysis.contention import LevelTable
from commscope.predict import build, enumerate_placements, rank_placements
from commscope.predict.cost import TableCost
from commscope.predict.model import ClusterModel
from commscope.predict.model_yaml import model_from_dict

T = TypeVar("T")
GOALS_S = {192: 0.1, 65536: 30.0}
FAT_TREE_GOAL_S = {4096: 5.0}
CORES_PER_SOCKET = {192: 6, 4096: 16, 65536: 32}
SIZES = np.array([4 << 10, 64 << 10, 1 << 20, 16 << 20, 128 << 20], dtype=np.int64)
# Peryshkova and Kurnosov 2018's degradation t(m, cf) / t(m, 1) at 128 MB, and a Hockney
# baseline for t(m, 1).
DEGRADATION = {
    "memory": [1, 1.21, 1.55, 1.96],
    "socket": [1, 1.85, 2.01, 2.20],
    "nic": [1, 2.0, 2.8, 3.8, 4.4, 5.7, 6.4, 7.6],
}
BASE = {"memory": (0.5e-6, 5e9), "socket": (0.8e-6, 4e9), "nic": (1.7e-6, 3.2e9)}


def cost() -> TableCost:
    out = {}
    for level, deg in DEGRADATION.items():
        alpha, beta = BASE[level]
        t1 = alpha + SIZES / beta
        out[level] = LevelTable(
            level,
            SIZES,
            np.arange(1, len(deg) + 1, dtype=np.int64),
            t1[:, None] * np.array(deg)[None, :],
        )
    return TableCost.from_tables(out, "Peryshkova and Kurnosov 2018 shapes")


def fat_tree(nodes: int, cores: int) -> ClusterModel:
    """``nodes`` nodes of 2 sockets x ``cores`` under leaves of 32, each with 16 links up."""
    if nodes % 32:
        raise SystemExit(f"--nodes {nodes}: a fat tree of leaves of 32 needs a multiple of 32")
    nic = {"bandwidth": f"{BASE['nic'][1]:.0f} B/s", "latency": f"{BASE['nic'][0]} s"}
    topology = {"kind": "fat_tree", "down": [32, nodes // 32], "up": [1, 16]}
    data = {"sockets": 2, "cores": cores, "channels": {"nic": nic}, "topology": topology}
    return model_from_dict(data, "fat tree")


def best_of(repeat: int, fn: Callable[[], T]) -> tuple[float, T]:
    best, result = float("inf"), None
    for _ in range(repeat):
        t0 = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - t0)
    assert result is not None
    return best, result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--procs", default="192,4096,65536")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--size", type=int, default=1 << 20, help="bytes per pair")
    parser.add_argument(
        "--full-max", type=int, default=192, help="also time the rank-by-rank count up to this p"
    )
    parser.add_argument("--fat-tree", action="store_true", help="a fat tree, not a flat network")
    parser.add_argument("--nodes", type=int, help="with --fat-tree: nodes (default: p)")
    args = parser.parse_args()
    tables = cost()
    goals = FAT_TREE_GOAL_S if args.fat_tree else GOALS_S
    print(
        f"{'p':>6} {'block':>6} {'placements':>10} {'steps':>6} {'rank s':>9} {'goal':>6}"
        f" {'full count s':>12}  best placement"
    )
    for p in (int(x) for x in args.procs.split(",")):
        cores = CORES_PER_SOCKET.get(p, 16)
        if args.fat_tree:
            nodes = args.nodes or p
            model = fat_tree(nodes, max(8, -(-p // (2 * nodes))))  # 16 cores a node
        else:
            model = ClusterModel(f"{p} nodes", tuple(f"n{i}" for i in range(p)), 2, cores)
        placements = enumerate_placements(model, p)
        for block in (32, p):
            pattern = build("alltoall", p, args.size, block=block)
            seconds, ranked = best_of(
                args.repeat if p <= 4096 else 1,
                partial(rank_placements, model, pattern, tables, placements),
            )
            goal = goals.get(p)
            verdict = "" if goal is None else ("ok" if seconds <= goal else "MISSED")
            full = ""
            if p <= args.full_max and block == 32:
                # Rank by rank, as for an explicit placement: the symmetry switched off.
                plain = [dataclasses.replace(pl, symmetric=False) for pl in placements]
                full_s, _ = best_of(1, partial(rank_placements, model, pattern, tables, plain))
                full = f"{full_s:.3f}"
            top = ranked[0]
            steps = len(pattern.steps)
            print(
                f"{p:>6} {block:>6} {len(placements):>10} {steps:>6} {seconds:>9.3f}"
                f" {verdict:>6} {full:>12}  {top.placement.label} ({top.time_s:.4g} s)"
            )
            sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
