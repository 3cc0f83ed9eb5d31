"""Commands on a store the size of history next to the same commands on a fresh small store.

Nightly checks for a year, or one all-pairs matrix of 1,000 nodes, put 10^5-10^6 points in
one store; what a command costs should follow what it reads, not the store's size. The big
store holds ``--runs`` runs of ``--points / --runs`` points each, written through the
store's own API (``add_complete_run``, one transaction per run, then the header and the end
record): each run is 24 p2p points (pingpong, bw, bibw at 8 sizes) and all-pairs matrix
latencies for the rest, 8 samples a point, a 32-rank header. The small store holds one such
run, so ``show latest`` reads the same run from both. Both are cached under ``--cache`` and
reused while their size and this layout match; runs a crashed bench imported are dropped.

Each round times, as subprocesses, one after the other on the big and then the small store:
``commscope runs``, ``commscope show latest``, ``commscope import netpipe`` (the unit
fixture; each imported run is dropped again once timed, so "latest" stays the same run).
Then the same store calls in this process (modules already imported: the store's share of
each command). An untimed round first pages the files in. Prints median and min per command
and store, and the big store's median over the small one's (and min over min).

    flock /tmp/commscope-bench.lock .venv/bin/python bench/store_scale.py \
        [--runs 1000] [--points 1000000] [--repeats 5]

The commscope measured is the one this Python imports (and its ``commscope`` script runs):
``PYTHONPATH=/path/to/other/src`` times another tree on the same stores, before and after.
"""

from __future__ import annotations

import argparse
import random
import sqlite3
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import commscope
from commscope import importers
from commscope.data.record_parse import parse_record, record_from_dict
from commscope.data.records import Header, Point
from commscope.data.run_data import read_run
from commscope.data.store import Store

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "unit" / "fixtures"
NETPIPE = FIXTURES / "netpipe.out"
LAYOUT = 1  # bump when the stores built here change, so cached ones are rebuilt
RANKS = 32
SAMPLES = 8
P2P_OPS = ("pingpong", "bw", "bibw")
P2P_SIZES = (0, 8, 64, 512, 4096, 32768, 262144, 1048576)
REQUEST = {"benchmark": "matrix", "np": RANKS, "ops": ["pingpong", "bw", "bibw", "matrix_lat"]}


def commscope_argv() -> list[str]:
    """The installed ``commscope`` script next to this Python, else ``python -m commscope``."""
    script = Path(sys.executable).with_name("commscope")
    return [str(script)] if script.exists() else [sys.executable, "-m", "commscope"]


def fixture_header_and_end() -> tuple[dict[str, Any], dict[str, Any]]:
    """The p2p fixture's header widened to RANKS ranks, and its end record."""
    lines = (FIXTURES / "p2p_openmpi.jsonl").read_text().splitlines()
    header, end = parse_record(lines[0], "fixture"), parse_record(lines[-1], "fixture")
    raw = dict(header.raw, nranks=RANKS)
    raw["ranks"] = [
        {
            "rank": r,
            "node": f"node{r:04d}",
            "node_index": r,
            "socket": 0,
            "cpu": 0,
            "pid": 4100 + r,
            "affinity": [0],
        }
        for r in range(RANKS)
    ]
    return raw, end.raw


def run_points(n: int, rng: random.Random) -> list[Point]:
    """One run's ``n`` points: the p2p series first, then all-pairs matrix latencies."""
    raws: list[dict[str, Any]] = []
    for op in P2P_OPS:
        for size in P2P_SIZES:
            raws.append(_raw(op, "inter-node", (0, 1), size, rng))
    pairs = ((a, b) for a in range(RANKS) for b in range(RANKS) if a != b)
    while len(raws) < n:
        a, b = next(pairs)  # StopIteration past RANKS * (RANKS - 1) + 24 points a run
        raws.append(_raw("matrix_lat", f"{a}->{b}", (a, b), 8, rng))
    out = []
    for raw in raws[:n]:
        point = record_from_dict(raw, "bench", validate=False)
        assert isinstance(point, Point)
        out.append(point)
    return out


def _raw(op: str, pair: str, ranks: tuple[int, int], size: int, rng: random.Random) -> dict:
    base = 2e-6 + size / 10e9
    window = 1 if op == "pingpong" else 64
    raw: dict[str, Any] = {"type": "point", "op": op, "pair": pair, "ranks": list(ranks)}
    raw.update(bytes=size, bytes_per_sample=size * window, iters_per_sample=100, warmup=10)
    if op != "pingpong" and not op.startswith("matrix"):
        raw["window"] = window
    raw["samples_s"] = [round(base * window * rng.uniform(1.0, 1.2), 12) for _ in range(SAMPLES)]
    raw["stop"] = "rse"
    return raw


def build(path: Path, runs: int, points: int) -> None:
    """Write ``runs`` runs of ``points // runs`` points each into a new store at ``path``."""
    header, end = fixture_header_and_end()
    header_record = record_from_dict(header, "bench")
    assert isinstance(header_record, Header)
    rng = random.Random(49)
    per_run = points // runs
    part = path.with_name(path.name + ".part")
    part.unlink(missing_ok=True)
    t0 = time.perf_counter()
    with Store.open(part) as store:
        for n in range(runs):
            label = f"nightly {n + 1}"
            argv = ["mpirun", "-n", str(RANKS), "commscope-engine"]
            pts = run_points(per_run, rng)
            run = store.add_complete_run("matrix", label, RANKS, REQUEST, argv, list(pts))
            segment = store.segments(run)[0].id
            store.set_header(run, segment, header_record)
            store.finish_segment(segment, "complete", None, end)
            if (n + 1) % 100 == 0 or n + 1 == runs:
                print(f"  {n + 1} runs written, {time.perf_counter() - t0:.0f} s", flush=True)
    part.rename(path)


def cached(folder: Path, runs: int, points: int) -> Path:
    """The store of that size under ``folder``, built when missing; extra runs dropped."""
    path = folder / f"store-v{LAYOUT}-{runs}runs-{points}points.sqlite"
    if not path.exists():
        folder.mkdir(parents=True, exist_ok=True)
        print(f"building {path} ({runs} runs, {points} points)", flush=True)
        build(path, runs, points)
    drop_runs_after(path, runs)
    return path


def drop_runs_after(path: Path, last: int) -> None:
    """Delete every run with an id above ``last`` (imported by an earlier round), whole rows."""
    conn = sqlite3.connect(path)
    with conn:
        for table in ("run_data", "points", "segments"):
            conn.execute(f"DELETE FROM {table} WHERE run_id > ?", (last,))
        conn.execute("DELETE FROM runs WHERE id > ?", (last,))
    conn.close()


def wall(argv: list[str]) -> float:
    """Run ``argv`` to completion (it must succeed); its wall time in seconds."""
    t0 = time.perf_counter()
    done = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    seconds = time.perf_counter() - t0
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed: {done.stderr.strip()}")
    return seconds


def clock(fn: Callable[[], object]) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def commands(store: Path, last: int) -> dict[str, Callable[[], float]]:
    """Each command as a subprocess, and the store's share of it in this process.

    An import's run is dropped again after it is timed, so "latest" stays run ``last``.
    """
    cs = [*commscope_argv(), "--store", str(store)]
    imp = ["import", "netpipe", str(NETPIPE), "--label", "bench", "--pair", "inter-node"]

    def listing() -> None:
        with Store.open(store, write=False) as s:
            s.list_runs()

    def show() -> None:
        with Store.open(store, write=False) as s:
            read_run(s, s.resolve_run("latest"))

    def import_() -> None:
        imported = importers.load("netpipe", str(NETPIPE), "inter-node", None)
        with Store.open(store) as s:
            importers.store_imported(s, imported, "bench")

    def dropping(seconds: float) -> float:
        drop_runs_after(store, last)
        return seconds

    return {
        "runs": lambda: wall([*cs, "runs"]),
        "show latest": lambda: wall([*cs, "show", "latest"]),
        "import netpipe": lambda: dropping(wall([*cs, *imp])),
        "store: list_runs": lambda: clock(listing),
        "store: read_run latest": lambda: clock(show),
        "store: import": lambda: dropping(clock(import_)),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--points", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--cache", type=Path, default=Path("/tmp/commscope-store-scale"))
    args = parser.parse_args()
    per_run = args.points // args.runs
    big = cached(args.cache, args.runs, args.points)
    small = cached(args.cache, 1, per_run)
    stores = {"big": big, "small": small}
    size = {name: p.stat().st_size / 1e6 for name, p in stores.items()}
    print(f"commscope: {Path(commscope.__file__).parent} (PYTHONPATH=SRC times another tree)")
    print(f"big:   {big} ({args.runs} runs, {args.points} points, {size['big']:.0f} MB)")
    print(f"small: {small} (1 run, {per_run} points, {size['small']:.1f} MB)")
    last = {"big": args.runs, "small": 1}
    steps = {name: commands(path, last[name]) for name, path in stores.items()}
    times: dict[tuple[str, str], list[float]] = {}
    for name in stores:  # untimed: pages the files and the modules in
        for step in steps[name].values():
            step()
    for _ in range(args.repeats):
        for command in steps["big"]:
            for name in stores:
                times.setdefault((command, name), []).append(steps[name][command]())
    print(f"\n{args.repeats} rounds, seconds   big median    min   small median    min   ratio")
    for command in steps["big"]:
        b, s = times[(command, "big")], times[(command, "small")]
        ratio = statistics.median(b) / statistics.median(s)
        print(
            f"{command:<24}{statistics.median(b):>12.3f}{min(b):>7.3f}"
            f"{statistics.median(s):>15.3f}{min(s):>7.3f}{ratio:>8.2f}"
            f"  (min {min(b) / min(s):.2f})"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
