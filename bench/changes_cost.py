"""What change points over a long history cost: the nightly update beside the full search.

Builds (once, cached in the folder given) a store of ``--runs`` complete runs of one request
on two hosts, each keeping ``--figures`` figure values (the run_figures rows a completed run
keeps: 1,000 x 10,000 by default, 10^7 rows): log-normal run-to-run noise of 3 %, one value
in 200 three times too slow (a bad night), a 20 % step at a random run in 1 % of the
figures, and a 20 % step ``--fresh`` runs before the newest in 100 more (one link slowed
lately). Then times, in this process, stage by stage:

- **nightly update**: the newest ``--window`` runs' figure values read
  (``jobs.figures.read(last=W)``), grouped into series, each series' newest part searched
  (``changes.update``), with the change points known before those runs (from the full
  search) as the state earlier nights kept;
- **full search**: every run's figure values read, grouped, every series searched
  (``changes.find``): what ``commscope history --changes`` does.

Prints both side by side, and what each found. Not a test.

    .venv/bin/python bench/changes_cost.py [--runs 1000] [--figures 10000] [--window 30]
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
from bench_store import built

from commscope import kinds
from commscope.check import changes, history
from commscope.data.store import Store
from commscope.data.store_figures import FigureValue
from commscope.jobs import figures
from commscope.kinds.figures import FIGURES_VERSION, key_of

NOISE = 0.03
STEP = np.log(1.2)
ENVIRONMENT = {"hosts": ["n0", "n1"], "mpi": "openmpi-4.1.4", "kernel": ["6.1.0"]}
T = TypeVar("T")


def labels(i: int) -> tuple[str, dict[str, str]]:
    """Figure i: a latency or a bandwidth of one of 100 links, at one of 50 sizes."""
    name = "p2p_latency_seconds" if i % 2 == 0 else "p2p_bandwidth_bytes_per_second"
    link, size = divmod(i // 2, 50)
    found = {"pair": "inter-node", "link": f"n{link}->n{link + 1}", "bytes": str(8 * (size + 1))}
    if name.endswith("per_second"):
        found["op"] = "bw"
    return name, found


def values(runs: int, count: int, fresh: int) -> tuple[np.ndarray, dict[int, int], list[int]]:
    """log values (figures x runs); figure -> the run of its old step; the fresh ones."""
    rng = np.random.default_rng(1)
    y = rng.normal(0, NOISE, (count, runs))
    y[rng.random((count, runs)) < 1 / 200] += np.log(3.0)
    old = {}
    for i in sorted(rng.choice(count, count // 100, replace=False).tolist()):
        at = int(rng.integers(runs // 20, runs - runs // 20))
        y[i, at:] += STEP
        old[i] = at + 1  # run ids are 1..runs
    new = [i for i in range(count) if i not in old][:100]
    y[new, runs - fresh :] += STEP
    return y, old, new


def build(path: Path, runs: int, count: int, fresh: int) -> None:
    y, _, _ = values(runs, count, fresh)
    names = [labels(i) for i in range(count)]
    level = (
        np.exp(y) * np.array([1e-5 if n.startswith("p2p_lat") else 1e9 for n, _ in names])[:, None]
    )
    marker = {"version": FIGURES_VERSION, "figures": count, "environment": ENVIRONMENT}
    with Store.open(path) as store:
        for r in range(runs):
            run_id = store.create_run("p2p", f"night {r}", "openmpi-4.1.4", "mpirun", 2, {"np": 2})
            store.set_run_status(run_id, "complete")
            unit = ("seconds", "bytes_per_second")
            kept = [
                FigureValue(run_id, name, lab, float(level[i, r]), unit[i % 2], 12)
                for i, (name, lab) in enumerate(names)
            ]
            store.keep_figures(run_id, kept, marker)


def timed(what: str, stages: list[tuple[str, float]], call: Callable[[], T]) -> T:
    start = time.perf_counter()
    out = call()
    stages.append((what, time.perf_counter() - start))
    print(f"  {what}: {stages[-1][1]:.2f} s", file=sys.stderr, flush=True)  # a long run's progress
    return out


def series(stored: figures.StoredFigures) -> list[changes.Series]:
    specs = kinds.figure_specs()
    groups = history.groups_of(stored.runs, stored.environments)
    return [s for g in groups for s in history.series_of(g, stored.values, specs)]


def full_search(store: str, stages: list[tuple[str, float]]) -> list[changes.SeriesChanges]:
    """What `history --changes` does, stage by stage."""
    stored = timed("read every run's figure values", stages, lambda: figures.read(store))
    start = time.perf_counter()
    everything = series(stored)
    stages.append(("group them into series", time.perf_counter() - start))
    del stored  # 10^7 values: only the series are kept
    return timed("search every series (find)", stages, lambda: changes.find(everything))


def nightly(store: str, window: int, known: dict[str, Any]) -> tuple[list[float], int, list[Any]]:
    """The nightly update's stages (seconds) and the new change points it finds."""
    stages: list[tuple[str, float]] = []
    newest = timed("read", stages, lambda: figures.read(store, last=window))
    tails = timed("group", stages, lambda: series(newest))
    found = timed("search", stages, lambda: changes.update(tails, known))
    return [t for _, t in stages], len(tails), [c for s in found for c in s.changes]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--figures", type=int, default=10_000)
    parser.add_argument("--window", type=int, default=changes.UPDATE_WINDOW)
    parser.add_argument("--fresh", type=int, default=5, help="runs since the fresh step")
    parser.add_argument("--no-full", action="store_true", help="time the nightly update only")
    parser.add_argument("--folder", default="/tmp/commscope-changes-cost")
    args = parser.parse_args()
    name = f"store-{args.runs}x{args.figures}-{args.fresh}.sqlite"
    store = built(Path(args.folder) / name, lambda p: build(p, args.runs, args.figures, args.fresh))
    _, old, new = values(args.runs, args.figures, args.fresh)
    print(f"store: {store.stat().st_size / 1e6:.0f} MB, {args.runs} runs x {args.figures} figures")
    print(f"planted: {len(old)} old steps, {len(new)} fresh ones {args.fresh} runs ago")

    # What earlier nights found: the planted steps, the fresh one known or not yet.
    key = {i: key_of(*labels(i)) for i in range(args.figures)}
    at = args.runs - args.fresh + 1
    every = {key[i]: a for i, a in old.items()} | {key[i]: at for i in new}
    before = {k: a for k, a in every.items() if a <= args.runs - args.window}
    quiet, searched, none_new = nightly(str(store), args.window, every)
    step, _, fresh = nightly(str(store), args.window, before)
    full: list[tuple[str, float]] = []
    points = [] if args.no_full else [c for s in full_search(str(store), full) for c in s.changes]
    columns = [quiet, step, [t for _, t in full] or [math.nan] * 3]

    print(
        f"\n{'seconds':24} {'night, nothing new':>19} {'night, a new step':>18} {'full search':>12}"
    )
    stages = ("read the figure values", "group them into series", "search")
    for i, stage in enumerate((*stages, "total")):
        cells = [sum(c) if stage == "total" else c[i] for c in columns]
        print(f"{stage:24} {cells[0]:>19.2f} {cells[1]:>18.2f} {cells[2]:>12.2f}")
    hit = sum(1 for c in fresh if c.run_id == at)
    print(
        f"\nseries searched a night: {searched}; nothing new: {len(none_new)} change points"
        f" found; a new step: {len(fresh)}, {hit} at run {at} (its first run; {len(new)} planted)"
    )
    if not args.no_full:
        print(f"full search: {len(points)} change points in {len({c.key for c in points})} figures")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
