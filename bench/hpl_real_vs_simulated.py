"""HPL measured on the virtual cluster beside HPL simulated on a model of it.

After Rechistov et al. 2012, "Simulation of a cluster: the Simics-based approach", who held
their model to HPL on the real cluster. One rank per virtual node (Open MPI by default): the
same HPL (HPC Challenge 1.5.0, reference BLAS) is built with mpicc and solved `--repeat`
times per grid across the vcluster (`commscope run hpl --vcluster`), then built with smpicc and
solved once per grid on a SimGrid model of that vcluster (`commscope simulate hpl`): its node
count, its link rate, network factors calibrated from a ping-pong measured on it
(`commscope simulate calibrate`, skipped with --no-calibrate), and a core speed of this
host's measured dgemm rate, scaled by cores / ranks when the ranks outnumber this machine's
cores (the virtual nodes share them, so each rank gets that share of a core). Printed per
grid: measured and simulated GFLOPS, their ratio, the spread of the measured solves (the
run-to-run noise), and whether the simulated order of the grids agrees with the measured one
(over every pair of grids, and over the pairs the noise resolves).

Needs root. With --lock FILE the measuring phase (vcluster up, ping-pong, HPL solves, vcluster
down) holds the lock once, and each simulation takes it again. Not a test: it prints figures.

    .venv/bin/python bench/hpl_real_vs_simulated.py --source hpcc_1.5.0.orig.tar.gz \\
        [--nodes 4] [--rate 1gbit] [--n 2000] [--nb 64] [--grid 1x2,2x1,1x4,2x2,4x1] \\
        [--repeat 2] [--lock FILE]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

import yaml
from bench_lock import locked
from simulate_calibration import cli  # this folder's: commscope ARGS --json, or exit

from commscope.measure import hpl, vcluster
from commscope.measure import mpi as mpi_mod
from commscope.simulate import app, hpl_agreement


def measure(args: argparse.Namespace, store: Path, model: Path) -> dict[str, list[dict]]:
    """The vcluster's ping-pong and calibration, then every grid's solves; cluster removed."""
    vcluster.up(args.nodes, args.rate)
    try:
        if args.calibrate:
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
                "1MiB",
                "--mpi",
                args.mpi,
            )
            cli(store, "simulate", "calibrate", str(run["run"]), "-o", str(model))
        solves: dict[str, list[dict]] = {}
        for grid in args.grid.split(","):
            out = cli(
                store,
                "run",
                "hpl",
                "--vcluster",
                "--ranks-per-node",
                "1",
                "--mpi",
                args.mpi,
                "--grid",
                grid,
                "--matrix-order",
                str(args.n),
                "--nb",
                str(args.nb),
                "--repeats",
                str(args.repeat),
                "--source",
                args.source,
            )
            solves[grid] = out["runs"]
            print(f"measured {grid}: " + ", ".join(f"{r['gflops']:.3f}" for r in out["runs"]))
    finally:
        vcluster.down()
    return solves


def model_for(
    args: argparse.Namespace, calibrated: Path, ranks: int, host: float, tmp: Path
) -> Path:
    """The vcluster's model for ``ranks`` ranks: one core per node, this host's share of a core."""
    doc = yaml.safe_load(calibrated.read_text()) if args.calibrate else {}
    doc["name"] = f"vcluster{ranks}"
    doc["nodes"] = [f"{vcluster.NODE_PREFIX}{i + 1}" for i in range(args.nodes)]
    doc["sockets"], doc["cores"] = 1, 1
    channels = doc.setdefault("channels", {})
    channels.setdefault("nic", {})["bandwidth"] = f"{vcluster.parse_rate(args.rate) / 8:.6g}B/s"
    share = min(1.0, (os.cpu_count() or 1) / ranks)
    doc.setdefault("simulation", {})["core_speed"] = f"{host * share:.6g}f"
    path = tmp / f"vcluster{ranks}.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--source", default=os.environ.get("COMMSCOPE_HPL_SOURCE"))
    parser.add_argument("--nodes", type=int, default=4)
    parser.add_argument("--rate", default="1gbit")
    parser.add_argument("--n", type=int, default=2000)
    parser.add_argument("--nb", type=int, default=64)
    parser.add_argument("--grid", default="1x2,2x1,1x4,2x2,4x1")
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--mpi", default="openmpi")
    parser.add_argument("--no-calibrate", dest="calibrate", action="store_false")
    parser.add_argument("--lock", help="hold flock FILE while measuring and simulating")
    args = parser.parse_args()
    if not args.source:
        raise SystemExit("--source: give the HPC Challenge 1.5.0 tarball (apt-get source hpcc)")
    if os.geteuid() != 0:
        raise SystemExit("bench/hpl_real_vs_simulated.py: the virtual cluster needs root")
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        store, calibrated = tmp / "store.sqlite", tmp / "calibrated.yaml"
        # Both builds (cached by digest) before the lock: compiling is no measurement.
        mpi = mpi_mod.resolve(args.mpi)
        hpl.build(Path(args.source), mpi.mpicc, mpi.tag)
        app.build_hpl(Path(args.source))
        start = time.monotonic()
        with locked(args.lock):
            solves = measure(args, store, calibrated)
        measured_s = time.monotonic() - start
        host = app.host_flops()
        simulated: dict[str, dict] = {}
        for grid, runs in solves.items():
            ranks = runs[0]["p"] * runs[0]["q"]
            model = model_for(args, calibrated, ranks, host, tmp)
            with locked(args.lock):
                (r,) = cli(
                    store,
                    "simulate",
                    "hpl",
                    "--cluster",
                    str(model),
                    "--grid",
                    grid,
                    "--matrix-order",
                    str(args.n),
                    "--nb",
                    str(args.nb),
                    "--source",
                    args.source,
                )["runs"]
            simulated[grid] = r
        report(args, solves, simulated, host, measured_s)


def report(
    args: argparse.Namespace,
    solves: dict[str, list[dict]],
    simulated: dict[str, dict],
    host: float,
    measured_s: float,
) -> None:
    agreement = hpl_agreement.compare(
        {g: [r["gflops"] for r in runs] for g, runs in solves.items()},
        {g: r["gflops"] for g, r in simulated.items()},
    )
    cores = os.cpu_count() or 1
    print(
        f"\nHPL N={args.n} NB={args.nb}, {args.mpi}, one rank per node of a {args.nodes}-node"
        f" vcluster at {args.rate}; this machine has {cores} cores, so grids of more than"
        f" {cores} ranks share them (the model gives each rank {cores}/ranks of a core)."
        f" Host dgemm {host / 1e9:.2f} GFLOPS; measuring took {measured_s:.0f} s."
    )
    print(
        "| grid | measured GFLOPS (each solve) | spread | simulated GFLOPS | sim / real |"
        " residuals | measured wall s | simulation wall s |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for g in agreement.grids:
        runs, sim = solves[g.grid], simulated[g.grid]
        passed = all(r["passed"] for r in runs) and sim["passed"]
        print(
            f"| {g.grid} | {g.measured_gflops:.3f} ("
            + ", ".join(f"{x:.3f}" for x in g.measured)
            + f") | {100 * g.spread:.1f} % | {g.simulated:.3f} | {g.ratio:.2f} |"
            f" {'PASSED' if passed else 'FAILED'} |"
            f" {max(r['wall_s'] for r in runs):.1f} | {sim['wall_s']:.1f} |"
        )
    data = agreement.to_json()
    print(
        f"\nmeasured order {' > '.join(data['measured_order'])};"
        f" simulated {' > '.join(data['simulated_order'])}"
    )
    resolved = len(data["resolved_pairs"])
    print(
        f"verdict: the grid ranking {'agrees' if data['same_order'] else 'does not agree'};"
        f" run-to-run noise {100 * agreement.noise:.1f} %; of {resolved} pairs of grids the noise"
        f" resolves, {resolved - len(data['disagreeing_pairs'])} are ordered alike"
        + (f" (not: {data['disagreeing_pairs']})" if data["disagreeing_pairs"] else "")
    )


if __name__ == "__main__":
    main()
