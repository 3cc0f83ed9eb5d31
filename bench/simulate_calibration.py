"""How well a SimGrid model calibrated on the virtual cluster reproduces its ping-pong.

Each round measures an inter-node ping-pong on a fresh 2-node virtual cluster at 1 gbit
(Open MPI, 2 ranks per node, NetPIPE sizes up to 4 MiB), calibrates a model from it
(`commscope simulate calibrate`), re-runs the benchmark on the model (`simulate validate`)
and prints the median and 90th percentile of |relative error| over the inter-node sizes from
1 KiB to 4 MiB, the sizes worst off, and the same for the previous round's model against
this round's measurement (how well a calibration carries over to a new run). Goals: median
<= 10 %, 90th percentile <= 25 %. Needs root; removes the cluster at the end. Not a test: it
prints figures.

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


def errors(store: Path, run: int, model: Path) -> tuple[float, float, list[str]]:
    val = cli(
        store,
        "simulate",
        "validate",
        str(run),
        "--cluster",
        str(model),
        "--min-size",
        "1KiB",
        "--max-size",
        "4MiB",
        "--quiet",
    )
    inter = [p for p in val["points"] if p["where"] == "inter-node"]
    errs = np.abs([p["error"] for p in inter])
    worst = sorted(inter, key=lambda p: -abs(p["error"]))[:3]
    return (
        float(np.median(errs)),
        float(np.percentile(errs, 90)),
        [f"{p['bytes']} B {p['error']:+.0%}" for p in worst],
    )


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
                cli(store, "simulate", "calibrate", str(run), "-o", str(model))
                median, p90, worst = errors(store, run, model)
                carried = errors(store, run, previous) if previous else None
                rows.append((median, p90))
                print(
                    f"round {i + 1}: run {run}: median {median:6.1%}, p90 {p90:6.1%};"
                    f" worst {', '.join(worst)}"
                    + (
                        f"; previous round's model: median {carried[0]:.1%}, p90 {carried[1]:.1%}"
                        if carried
                        else ""
                    ),
                    flush=True,
                )
                previous = model
        finally:
            vcluster.down()
    med = [r[0] for r in rows]
    p90 = [r[1] for r in rows]
    print(
        f"\nover {len(rows)} rounds: median |error| {np.median(med):.1%} (range {min(med):.1%}"
        f"-{max(med):.1%}), p90 {np.median(p90):.1%} (range {min(p90):.1%}-{max(p90):.1%});"
        " goals <= 10 % and <= 25 %"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
