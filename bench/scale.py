"""What the pipeline costs as the simulated cluster grows, stage by stage (SimGrid/SMPI).

For each rank count (``--ranks``, default 64, 256, 1024, 4096; ``--ranks-per-node`` of them
on each node of a flat homogeneous model) and each workload:
  * alltoall: Alltoall at 8 bytes (collective timing, its clock sync included);
  * allreduce: Allreduce at 8 bytes;
  * matrix: the all-pairs matrix in its quick mode (n log2 n pairs), no confirmation, one
    rank a node (the model then has as many nodes as the largest rank count);
it measures, one stage after the other:
  * simulate: `commscope simulate run` as a user runs it: wall time and the peak resident
    memory of its largest process (smpirun's simulation), and the simulated time of what it
    timed (the median of the collective; the matrix: its slowest link's latency);
  * output: the engine's records (header and points, as `commscope export --format json`
    writes them), in bytes and in points;
  * ingest: those lines parsed and stored one at a time into a fresh store, as the runner
    stores what the engine writes (record parsing, checksums, one commit a record);
  * store: the fresh store's size;
  * show, show --json, report: the commands on the fresh store, as subprocesses.
Then each stage's growth exponent over the rank counts (least squares of log cost on log N)
beside that of the points it handles: a stage that grows faster than its points is to fix.
Not a test.

    flock /tmp/commscope-bench.lock .venv/bin/python bench/scale.py \
        [--ranks 64,256,1024,4096] [--ranks-per-node 16] [--workloads alltoall,allreduce,matrix]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from bench_lock import locked

from commscope.data.record_parse import parse_record
from commscope.data.records import Header, Measured
from commscope.data.session import Measuring
from commscope.data.store import Store

WORKLOADS = {
    "alltoall": ["coll", "--ops", "alltoall", "--sizes", "8"],
    "allreduce": ["coll", "--ops", "allreduce", "--sizes", "8"],
    "matrix": ["matrix", "--pairs", "quick", "--no-confirm", "--sizes", "8K", "--samples", "2"],
}
STAGES = ("simulate", "output", "ingest", "store", "show", "show --json", "report")


def commscope(store: Path, *argv: str, timeout: float = 7200) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "commscope", "--store", str(store), *argv],
        capture_output=True, text=True, timeout=timeout,
    )  # fmt: skip


def timed(store: Path, *argv: str) -> float:
    start = time.perf_counter()
    out = commscope(store, *argv)
    if out.returncode != 0:
        raise SystemExit(f"commscope {' '.join(argv)}: {out.stderr.strip()}")
    return time.perf_counter() - start


def simulate(store: Path, model: Path, ranks: int, per_node: int, bench: list[str]) -> dict:
    """Run the workload under SMPI through /usr/bin/time: wall seconds, peak kB, run id.

    The matrix pairs nodes: it runs one rank a node, on ``ranks`` nodes.
    """
    if bench[0] == "matrix":
        per_node = 1
    argv = [
        "/usr/bin/time", "-f", "%e %M", sys.executable, "-m", "commscope", "--store", str(store),
        "simulate", "run", "--cluster", str(model), "--nodes", str(ranks // per_node),
        "--ranks-per-node", str(per_node), "--neutral", "--json", "--quiet", "--", *bench,
        "--np", str(ranks),
    ]  # fmt: skip
    out = subprocess.run(argv, capture_output=True, text=True, timeout=7200)
    wall, peak_kb = out.stderr.strip().splitlines()[-1].split()
    if out.returncode != 0:
        raise SystemExit(f"simulate {ranks} ranks {bench[0]}: {out.stderr.strip()[-400:]}")
    run = json.loads(out.stdout)["run"]
    return {"run": run, "wall": float(wall), "peak_mb": int(peak_kb) / 1e3}


def simulated_time(store: Path, run: int) -> float:
    """The median time of the collective, or the matrix's slowest latency, in seconds."""
    with Store.open(store) as s:
        found = s.measurements(run)
    times = [p.median_s for p in found if getattr(p, "op", "") != "matrix_bw"]
    return max(times) if times else math.nan


def ingest(lines: list[str], fresh: Path, kind: str, ranks: int) -> float:
    """Parse and store the engine's lines one record at a time, as the runner does."""
    start = time.perf_counter()
    with Store.open(fresh) as store:
        run = store.create_run(kind, "scale", "simulated", "smpirun", ranks, {})
        session = Measuring(store, run)
        with session.segment(["scale"]) as segment:
            for n, line in enumerate(lines, 1):
                record = parse_record(line, where=f"line {n}")
                if isinstance(record, Header):
                    session.header(segment, record)
                elif isinstance(record, Measured):
                    session.add(segment, record)
            session.end_segment(segment)
        session.complete()
    return time.perf_counter() - start


def measure(model: Path, ranks: int, per_node: int, name: str, folder: Path) -> dict:
    store = folder / f"{name}-{ranks}.sqlite"
    sim = simulate(store, model, ranks, per_node, WORKLOADS[name])
    exported = commscope(store, "export", str(sim["run"]), "--format", "json")
    lines = [line for line in exported.stdout.splitlines() if line.strip()]
    fresh = folder / f"{name}-{ranks}-fresh.sqlite"
    kind = WORKLOADS[name][0]
    row = {
        "simulated_s": simulated_time(store, sim["run"]),
        "points": len(lines) - 1,
        "simulate": sim["wall"],
        "peak_mb": sim["peak_mb"],
        "output": len(exported.stdout.encode()),
        "ingest": ingest(lines, fresh, kind, ranks),
        "store": fresh.stat().st_size,
    }
    row["show"] = timed(fresh, "show", "latest")
    row["show --json"] = timed(fresh, "show", "latest", "--json")
    row["report"] = timed(fresh, "report", "latest", "-o", str(folder / f"{name}-{ranks}.html"))
    return row


def exponent(ns: list[int], values: list[float]) -> float:
    """Slope of log(value) on log(n): the power of n the value grows with."""
    keep = [(n, v) for n, v in zip(ns, values, strict=True) if v > 0 and math.isfinite(v)]
    if len(keep) < 2:
        return math.nan
    x, y = np.log([n for n, _ in keep]), np.log([v for _, v in keep])
    return float(np.polyfit(x, y, 1)[0])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", default="64,256,1024,4096")
    parser.add_argument("--ranks-per-node", type=int, default=16)
    parser.add_argument("--workloads", default=",".join(WORKLOADS))
    parser.add_argument("--lock", help="flock this file around the measurements")
    parser.add_argument("--folder", type=Path, help="keep stores and reports here")
    args = parser.parse_args()
    counts = [int(x) for x in args.ranks.split(",")]
    names = args.workloads.split(",")
    folder = args.folder or Path(tempfile.mkdtemp(prefix="commscope-scale-"))
    folder.mkdir(parents=True, exist_ok=True)
    nodes = max(counts) if "matrix" in names else max(counts) // args.ranks_per_node
    model = folder / "flat.yaml"
    model.write_text(
        f"nodes: {nodes}\nsockets: 1\ncores: {args.ranks_per_node}\n"
        "channels: {nic: {bandwidth: 12.5GB/s, latency: 1us}}\n"
    )
    os.environ.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
    results: dict[str, dict[int, dict]] = {}
    with locked(args.lock):
        for name in names:
            for n in counts:
                row = measure(model, n, args.ranks_per_node, name, folder)
                results.setdefault(name, {})[n] = row
                print(f"{name:9} {n:5} ranks: " + ", ".join(
                    f"{k} {v:.3g}" for k, v in row.items()), flush=True)  # fmt: skip
    print(f"\nstores and reports in {folder}\n")
    head = f"{'workload':9} {'ranks':>5} {'points':>7} {'sim. s':>9} {'peak MB':>8}"
    print(head + "".join(f" {s:>11}" for s in STAGES))
    for name, rows in results.items():
        for n, row in rows.items():
            cells = [f"{row['output'] / 1e6:.2f} MB" if s == "output" else
                     f"{row['store'] / 1e6:.2f} MB" if s == "store" else f"{row[s]:.2f} s"
                     for s in STAGES]  # fmt: skip
            print(f"{name:9} {n:5} {row['points']:7} {row['simulated_s']:9.3g}"
                  f" {row['peak_mb']:8.0f}" + "".join(f" {c:>11}" for c in cells))  # fmt: skip
        ns = list(rows)
        points = exponent(ns, [max(rows[n]["points"], 1) for n in ns])
        handled = max(points, exponent(ns, [rows[n]["output"] for n in ns]))
        grows = {s: exponent(ns, [rows[n][s] for n in ns]) for s in STAGES}
        print(f"{name:9} growth with ranks: points N^{points:.2f}, output bytes"
              f" N^{grows['output']:.2f}; " + ", ".join(
            f"{s} N^{g:.2f}{' (faster than what it handles)' if g > handled + 0.2 else ''}"
            for s, g in grows.items() if s != "output"))  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
