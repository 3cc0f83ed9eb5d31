"""How well a SimGrid model calibrated on the virtual cluster reproduces its ping-pong.

The model gives every rank a core of its own, so each level is measured that way, in its own
launch (Open MPI, NetPIPE sizes 0 B to 4 MiB): inter-node on a 2-node virtual cluster at
1 gbit with one rank per node, intra-node on a 1-node one with two ranks. (A 2 x 2 launch
puts four ranks on this host's two cores: while one pair measures, the others wake on the
same cores, which the model does not have.) Round 1 is calibrated (`commscope simulate
calibrate INTER INTRA`); the model is then validated (`simulate validate`) on round 1's runs
and on every later round's, measured afresh: a model that fits only its own round's noise
shows there. Printed per round and level: median and 90th percentile of |relative error|
over every size, the sizes worst off, and the measured curve's own spread within size
triples. Goals, each level: median <= 15 %, 90th percentile <= 30 %. `--launches N` measures
each level N times per round, each in its own launch, and calibrates from all of round 1's;
every later round is then also compared with round 1's measurements themselves (per size, the
median of round 1's launches): how far the machine moved between rounds, which no model of
round 1 can be closer than. `--oversubscribed` also measures a 2 x 2 launch and compares its
pairs with the same model. Needs root; each step that runs MPI or SimGrid holds `--lock FILE`
(flock) and removes its cluster before letting go. Not a test: it prints figures.

    .venv/bin/python bench/simulate_calibration.py --rounds 2 --launches 3 \
        --lock /tmp/commscope-bench.lock
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
from bench_lock import locked

from commscope.measure import vcluster

LEVELS = ("inter-node", "intra-node")
GOALS = (0.15, 0.30)  # median, 90th percentile of |relative error|, each level
RATE = "1gbit"


def cli(store: Path, *args: str | Path) -> dict:
    done = subprocess.run(
        [sys.executable, "-m", "commscope", "--store", str(store), *map(str, args), "--json"],
        capture_output=True,
        text=True,
        timeout=1800,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"commscope {' '.join(map(str, args))}: {done.stderr.strip()}")
    return json.loads(done.stdout)


def measure(store: Path, lock: str | None, nodes: int, per_node: int) -> int:
    """One ping-pong run on a fresh virtual cluster of ``nodes`` nodes; its id."""
    with locked(lock):
        vcluster.up(nodes, RATE)
        try:
            return int(
                cli(
                    store,
                    "run",
                    "p2p",
                    "--vcluster",
                    "--ranks-per-node",
                    str(per_node),
                    "--ops",
                    "pingpong",
                    "--max-size",
                    "4MiB",
                    "--quiet",
                )["run"]
            )
        finally:
            vcluster.down()


def triple_spread(points: list[dict]) -> float:
    """Median of (max - min) / median of the measured times of each size triple of a launch."""
    groups: list[list[float]] = []
    last = None
    for p in sorted(points, key=lambda p: (p["run"], p["bytes"])):
        if last is not None and last[0] == p["run"] and p["bytes"] - last[1] <= 3:
            groups[-1].append(p["measured_s"])
        else:
            groups.append([p["measured_s"]])
        last = (p["run"], p["bytes"])
    spread = [(max(g) - min(g)) / float(np.median(g)) for g in groups if len(g) > 1]
    return float(np.median(spread)) if spread else float("nan")


def validate(store: Path, lock: str | None, run: int, model: Path) -> list[dict]:
    """`simulate validate` of one run on the model: its points (bytes, where, measured, error)."""
    with locked(lock):
        val = cli(store, "simulate", "validate", str(run), "--cluster", str(model), "--quiet")
    return [{**p, "run": run} for p in val["points"]]


def errors(points: list[dict]) -> dict[str, tuple]:
    """Per level: median, p90 of |relative error|, worst sizes, the curve's spread in triples."""
    out = {}
    for level in LEVELS:
        mine = [p for p in points if p["where"] == level]
        if not mine:
            continue
        errs = np.abs([p["error"] for p in mine])
        worst = sorted(mine, key=lambda p: -abs(p["error"]))[:3]
        out[level] = (
            float(np.median(errs)),
            float(np.percentile(errs, 90)),
            [f"{p['bytes']} B {p['error']:+.0%}" for p in worst],
            triple_spread(mine),
        )
    return out


def moved(first: list[dict], later: list[dict]) -> dict[str, tuple]:
    """Per level: how far ``later``'s measured times lie from ``first``'s, as ``errors`` reads.

    Each later point is compared with the median of the first round's times at its size, as
    if that median were a model: the floor of what any model fitted to the first round can
    reach on the later one.
    """
    reference: dict[tuple[str, int], list[float]] = {}
    for p in first:
        reference.setdefault((p["where"], p["bytes"]), []).append(p["measured_s"])
    as_model = [
        {**p, "error": (float(np.median(ref)) - p["measured_s"]) / p["measured_s"]}
        for p in later
        if (ref := reference.get((p["where"], p["bytes"])))
    ]
    return errors(as_model)


def show(title: str, result: dict[str, tuple], judged: bool = True) -> None:
    print(title, flush=True)
    for level, (median, p90, worst, spread) in result.items():
        met = "met" if median <= GOALS[0] and p90 <= GOALS[1] else "not met"
        print(
            f"  {level}: median {median:6.1%}, p90 {p90:6.1%}"
            + (f" ({met})" if judged else "")
            + f"; worst {', '.join(worst)}; the curve's own spread within triples: median"
            f" {spread:.1%}",
            flush=True,
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--launches", type=int, default=1, help="per level and round")
    parser.add_argument("--lock", help="hold this file (flock) during each MPI/SimGrid step")
    parser.add_argument("--keep", help="keep the runs in this directory's store")
    parser.add_argument(
        "--oversubscribed", action="store_true", help="also compare a 2 x 2 launch's pairs"
    )
    args = parser.parse_args()
    if args.rounds < 1 or args.launches < 1:
        parser.error("--rounds and --launches: give 1 or more")
    with tempfile.TemporaryDirectory() as temporary:
        tmp = args.keep or temporary
        store = Path(tmp) / "s.sqlite"
        model = Path(tmp) / "model.yaml"
        first: list[dict] = []
        for i in range(args.rounds):
            runs = []
            for _ in range(args.launches):  # alternated, so a slow spell hits both levels
                runs += [measure(store, args.lock, 2, 1), measure(store, args.lock, 1, 2)]
            runs_text = ", ".join(map(str, runs))
            if i == 0:
                with locked(args.lock):
                    cal = cli(store, "simulate", "calibrate", *map(str, runs), "-o", str(model))
                lat = [seg["lat_factor"] for seg in cal["segments"]]
                bw = [seg["bw_factor"] for seg in cal["segments"]]
                mem = cal["params"]["memory"]
                print(
                    f"calibrated on round 1 (runs {runs_text}): lat_factor"
                    f" {min(lat):.2f}-{max(lat):.2f}, bw_factor {min(bw):.3g}-{max(bw):.3g},"
                    f" memory link {mem['latency_s'] * 1e6:.2f} us,"
                    f" {mem['bandwidth_Bps'] / 1e9:.2f} GB/s",
                    flush=True,
                )
            points = [p for run in runs for p in validate(store, args.lock, run, model)]
            what = "its own round" if i == 0 else "a new measurement"
            show(f"round {i + 1} (runs {runs_text}), round 1's model on {what}:", errors(points))
            if i == 0:
                first = points
            else:
                show(
                    f"round {i + 1}'s measurements against round 1's (per size, the median of"
                    " round 1's launches): how far the machine moved",
                    moved(first, points),
                    judged=False,
                )
            if args.oversubscribed:
                both = measure(store, args.lock, 2, 2)
                show(
                    f"round {i + 1}, 2 nodes x 2 ranks on 2 cores (run {both}), same model:",
                    errors(validate(store, args.lock, both, model)),
                )
    return 0


if __name__ == "__main__":
    sys.exit(main())
