"""HPL on a simulated 16-node x 12-core cluster: the whole-cluster study of Rechistov et al.
2012, "Simulation of a cluster: the Simics-based approach".

The model: 16 nodes of 2 sockets x 6 cores, a GigE NIC each (125 MB/s, 50 us) behind one
switch, a core as fast as one of the paper's Xeon 5580 cores (P_peak 10.6 GF: 8.91 GF in
HPL at 83.7 %), SMPI's default factors. HPL (HPC Challenge 1.5.0, reference BLAS) solves
N = 4000 on the grids 1x192, 6x32 and 16x12 with the network traced: GFLOPS, the load and
mean message size at the switch (the paper's table 4). Then the switch latency is swept
from 80 to 400 us on one grid; the verdict is how much GFLOPS changes over the sweep (the
paper found performance insensitive below 400 us). Each simulation is one `commscope
simulate hpl`; `--lock FILE` runs each under `flock FILE` (a machine shared with others).
Not a test: it prints figures.

    .venv/bin/python bench/simulate_hpl.py --source hpcc_1.5.0.orig.tar.gz [--lock FILE]
        [--sweep-only] [--latencies 80us,160us,240us,320us,400us]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

MODEL = """name: rechistov16
nodes: 16
sockets: 2
cores: 6
channels: {nic: {bandwidth: 125MB/s, latency: 50us}}
simulation:
  core_speed: 10.6Gf
  switch_latency: 80us
"""
GRIDS = ("1x192", "6x32", "16x12")
LATENCIES = ("80us", "160us", "240us", "320us", "400us")


def hpl(store: Path, model: Path, args: argparse.Namespace, *extra: str) -> list[dict]:
    argv = [sys.executable, "-m", "commscope", "--store", str(store), "simulate", "hpl"]
    argv += [
        "--matrix-order",
        str(args.n),
        "--cluster",
        str(model),
        "--source",
        args.source,
        "--json",
    ]
    argv += list(extra)
    if args.lock:
        argv = ["flock", args.lock, *argv]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=3600, check=False)
    if done.returncode != 0:
        raise SystemExit(f"simulate hpl {' '.join(extra)}: {done.stderr.strip()}")
    runs: list[dict] = json.loads(done.stdout)["runs"]
    return runs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--source", default=os.environ.get("COMMSCOPE_HPL_SOURCE"))
    parser.add_argument("--n", type=int, default=4000)
    parser.add_argument("--sweep-grid", default="16x12")
    parser.add_argument("--lock", help="run each simulation under flock FILE")
    parser.add_argument("--sweep-only", action="store_true", help="skip the table of grids")
    parser.add_argument("--latencies", default=",".join(LATENCIES), help="the sweep's values")
    args = parser.parse_args()
    if not args.source:
        raise SystemExit("--source: give the HPC Challenge 1.5.0 tarball (apt-get source hpcc)")
    with tempfile.TemporaryDirectory() as tmp:
        store, model = Path(tmp) / "store.sqlite", Path(tmp) / "rechistov16.yaml"
        model.write_text(MODEL)
        print(f"HPL N={args.n} on 16 nodes x 12 cores (GigE, switch latency 80 us)")
        print(
            "| grid | GFLOPS | residual | simulated s | wall s | switch Mbit/s | mean message B |"
        )
        print("|---|---|---|---|---|---|---|")
        for grid in () if args.sweep_only else GRIDS:
            (r,) = hpl(store, model, args, "--grid", grid, "--netload")
            sw = r["netload"]["switch"]
            print(
                f"| {grid} | {r['gflops']:.3f} | {'PASSED' if r['passed'] else 'FAILED'} |"
                f" {r['simulated_s']:.3f} | {r['wall_s']:.0f} | {sw['mbit_per_s']:.1f} |"
                f" {sw['mean_message_bytes']:.0f} |",
                flush=True,
            )
        print(f"\nswitch latency sweep on {args.sweep_grid}")
        print("| switch latency | GFLOPS | simulated s | wall s |")
        print("|---|---|---|---|")
        rates = []
        latencies = args.latencies.split(",")
        for latency in latencies:
            (r,) = hpl(
                store,
                model,
                args,
                "--grid",
                args.sweep_grid,
                "--sweep",
                f"switch-latency={latency}",
            )
            rates.append(r["gflops"])
            print(
                f"| {latency} | {r['gflops']:.3f} | {r['simulated_s']:.3f} | {r['wall_s']:.0f} |",
                flush=True,
            )
        change = (rates[-1] - rates[0]) / rates[0]
        steps = [(b - a) / a for a, b in zip(rates, rates[1:], strict=False)]
        step = max((abs(x) for x in steps), default=0.0)
        falling = all(x < 0 for x in steps)
        print(
            f"\nverdict: GFLOPS changes by {100 * change:+.1f} % from {latencies[0]} to"
            f" {latencies[-1]} of switch latency (largest step {100 * step:.1f} %;"
            f" {'falling at every step' if falling else 'not monotonic'}): performance is"
            f" {'insensitive' if abs(change) < 0.05 else 'sensitive'} to switch latency here"
        )


if __name__ == "__main__":
    main()
