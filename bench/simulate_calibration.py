"""How well a SimGrid model calibrated on the virtual cluster reproduces its ping-pong.

Each round measures an inter-node ping-pong on a fresh 2-node virtual cluster at 1 gbit
(Open MPI, 2 ranks per node, NetPIPE sizes up to 4 MiB), calibrates a model from it
(`commscope simulate calibrate`), re-runs the benchmark on the model (`simulate validate`)
and prints, per level (inter-node, intra-node), the median and 90th percentile of |relative
error| over every ping-pong size from 0 B to 4 MiB, the sizes worst off, the factors' ranges,
and the same errors for the previous round's model against this round's measurement (how well
a calibration carries over to a new run). Goals, each level: median <= 15 %, 90th percentile
<= 30 %. Needs root; removes the cluster at the end. Not a test: it prints figures.

    .venv/bin/python bench/simulate_calibration.py [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

from commscope.measure import vcluster


def cli(store: Path, *args: str) -> dict:
    done = subprocess.run(
        [sys.executable, "-m", "commscope", "--store", str(store), *args, "--json"],
        capture_output=True,
        text=True,
        timeout=1800,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"commscope {' '.join(args)}: {done.stderr.strip()}")
    return json.loads(done.stdout)


LEVELS = ("inter-node", "intra-node")
GOALS = (0.15, 0.30)  # median, 90th percentile of |relative error|, each level


def errors(store: Path, run: int, model: Path) -> dict[str, tuple[float, float, list[str]]]:
    """Per level: median and p90 of |relative error|, and the three sizes worst off."""
    val = cli(store, "simulate", "validate", str(run), "--cluster", str(model), "--quiet")
    out = {}
    for level in LEVELS:
        points = [p for p in val["points"] if p["where"] == level]
        errs = np.abs([p["error"] for p in points])
        worst = sorted(points, key=lambda p: -abs(p["error"]))[:3]
        out[level] = (
            float(np.median(errs)),
            float(np.percentile(errs, 90)),
            [f"{p['bytes']} B {p['error']:+.0%}" for p in worst],
        )
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        store = Path(tmp) / "s.sqlite"
        previous: Path | None = None
        vcluster.up(2, "1gbit")
        try:
            for i in range(args.rounds):
                run = cli(
                    store,
                    "run",
                    "p2p",
                    "--vcluster",
                    "--ranks-per-node",
                    "2",
                    "--ops",
                    "pingpong",
                    "--max-size",
                    "4MiB",
                    "--quiet",
                )["run"]
                model = Path(tmp) / f"model{i}.yaml"
                cal = cli(store, "simulate", "calibrate", str(run), "-o", str(model))
                lat = [seg["lat_factor"] for seg in cal["segments"]]
                bw = [seg["bw_factor"] for seg in cal["segments"]]
                now = errors(store, run, model)
                carried = errors(store, run, previous) if previous else None
                rows.append(now)
                print(
                    f"round {i + 1}: run {run}: lat_factor {min(lat):.2f}-{max(lat):.2f},"
                    f" bw_factor {min(bw):.3g}-{max(bw):.3g}",
                    flush=True,
                )
                for level in LEVELS:
                    median, p90, worst = now[level]
                    print(
                        f"  {level}: median {median:6.1%}, p90 {p90:6.1%}; worst {', '.join(worst)}"
                        + (
                            f"; previous round's model: median {carried[level][0]:.1%},"
                            f" p90 {carried[level][1]:.1%}"
                            if carried
                            else ""
                        ),
                        flush=True,
                    )
                previous = model
        finally:
            vcluster.down()
    print(f"\nover {len(rows)} rounds (goals: median <= {GOALS[0]:.0%}, p90 <= {GOALS[1]:.0%}):")
    for level in LEVELS:
        med = [r[level][0] for r in rows]
        p90 = [r[level][1] for r in rows]
        print(
            f"  {level}: median |error| {np.median(med):.1%} (range {min(med):.1%}"
            f"-{max(med):.1%}), p90 {np.median(p90):.1%} (range {min(p90):.1%}-{max(p90):.1%})"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
