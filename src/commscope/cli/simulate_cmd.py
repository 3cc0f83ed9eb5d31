"""`commscope simulate`: benchmarks on a SimGrid/SMPI model of a cluster.

Run them (and sweep the model's parameters), calibrate the model from a measured run,
validate it against one.
"""

from __future__ import annotations

import argparse

from commscope import limits
from commscope.cli import common, simulate_options

HELP = "simulate clusters with SimGrid/SMPI: run, calibrate, validate, sweep"
EXAMPLES = """examples:
  commscope simulate run --cluster c.yaml --nodes 2 -- p2p --max-size 4MiB
  commscope simulate run --cluster c.yaml --nodes 16 --ranks-per-node 12 -- coll
  commscope simulate run --cluster c.yaml --nodes 16 --ranks-per-node 12 \\
      --sweep switch-latency=80us,160us,240us,320us,400us -- coll --ops alltoall --sizes 1MiB
  commscope simulate calibrate 12 -o vcluster.yaml     model + factors from ping-pong run 12
  commscope simulate calibrate 12 13 -o vcluster.yaml  inter-node from 12, a node's pair from 13
  commscope simulate validate 14 --cluster vcluster.yaml --min-size 1KiB
  commscope simulate app ring.c --cluster c.yaml --np 8 --netload -- 1048576
  commscope simulate hpl --matrix-order 4000 --grid 1x192,6x32,16x12 --cluster c.yaml \\
      --source hpcc_1.5.0.orig.tar.gz --sweep switch-latency=80us,400us
"""
NAME = "simulate"
RUN_EXAMPLES = """examples:
  commscope simulate run --cluster c.yaml --nodes 2 -- p2p --max-size 4MiB
  commscope simulate run --cluster c.yaml --nodes 16 --ranks-per-node 12 -- coll
  commscope simulate run --cluster c.yaml --nodes 16 --ranks-per-node 12 \\
      --sweep switch-latency=80us,400us -- coll --ops alltoall --sizes 1MiB
  commscope simulate run --cluster c.yaml --neutral --netload -- contention
"""
CALIBRATE_EXAMPLES = """examples:
  commscope simulate calibrate 12 -o vcluster.yaml     model + factors from ping-pong run 12
  commscope simulate calibrate 12 13 -o vcluster.yaml  inter-node from 12, a node's pair from 13
  commscope simulate calibrate 12 --cluster c.yaml --refinements 4
"""
VALIDATE_EXAMPLES = """examples:
  commscope simulate validate 14 --cluster vcluster.yaml
  commscope simulate validate 14 --cluster vcluster.yaml --min-size 1KiB --max-size 1MiB
"""


def setup_parser(parser: argparse.ArgumentParser) -> None:
    """Declare `simulate run`, `simulate calibrate` and `simulate validate`."""
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    run = actions.add_parser(
        "run",
        help="run a benchmark on the model",
        description="Run a commscope benchmark under smpirun on a platform"
        " written from the cluster model. Benchmark options follow '--'.",
        epilog=RUN_EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    simulate_options.add_model_option(run)
    common.option(
        run,
        "--nodes",
        type=common.whole(1, limits.MAX_SIMULATED_NODES),
        help="nodes used [default: 2, or all of the model's if fewer]",
    )
    common.option(
        run,
        "--ranks-per-node",
        type=common.whole(1, limits.MAX_SOCKETS * limits.MAX_CORES_PER_SOCKET),
        default=1,
        help="ranks on each node",
    )
    common.option(
        run, "--order", default="block", choices=("block", "cyclic"), help="rank order across nodes"
    )
    run.add_argument(
        "--sweep",
        action="append",
        default=[],
        metavar="NAME=V1,V2,...",
        help=f"one run per value of a parameter ({', '.join(simulate_options.sweep_names())});"
        " repeat for several parameters, each swept from the model's values",
    )
    run.add_argument(
        "--smpi-cfg",
        action="append",
        default=[],
        metavar="NAME:VALUE",
        help="extra SimGrid option, e.g. smpi/bcast:binomial_tree (repeatable)",
    )
    run.add_argument(
        "--neutral",
        action="store_true",
        help="no SMPI factors: time = latency + size / bandwidth exactly",
    )
    common.option(
        run,
        "--samples",
        metavar="N",
        type=common.whole(0, 10**4),
        default=2,
        help="collectives: timed launches per point after one warm-up launch (simulated"
        " time has no noise); 0 keeps the benchmark's own stop rule",
    )
    run.add_argument(
        "--netload",
        action="store_true",
        help="trace the run and keep bytes, messages and Mbit/s per link",
    )
    common.option(
        run, "--label", type=common.label, help="a name for the run (sweeps add NAME=VALUE)"
    )
    run.add_argument("--json", action="store_true", help="print the outcome as JSON")
    run.add_argument("--quiet", action="store_true", help="no progress bar")
    run.add_argument(
        "bench",
        nargs=argparse.REMAINDER,
        help="-- then a benchmark and its options, as for 'commscope run'",
    )

    cal = actions.add_parser(
        "calibrate",
        help="fit SMPI factors and links to measured runs",
        description="Fit the model's links and SMPI's factors to measured ping-pong runs,"
        " then correct them by simulating the same ping-pong; write the model file.",
        epilog=CALIBRATE_EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    cal.add_argument(
        "run",
        metavar="RUN",
        nargs="+",
        help="stored p2p runs, one with inter-node ping-pong; each level may come from its"
        " own run (e.g. a node's pair measured alone)",
    )
    simulate_options.add_model_option(cal)
    cal.add_argument(
        "-o",
        "--output",
        help="model file to write [default: the --cluster file, else commscope-cluster.yaml]",
    )
    common.option(
        cal,
        "--refinements",
        metavar="N",
        type=common.whole(0, 100),
        default=2,
        help="simulations of the runs' ping-pong that correct the factors",
    )
    cal.add_argument("--json", action="store_true", help="print the calibration as JSON")

    val = actions.add_parser(
        "validate",
        help="re-run a measured run on the model, compare",
        description="Simulate a stored measured run on the model with the same request and"
        " compare the two point by point.",
        epilog=VALIDATE_EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    val.add_argument("run", metavar="RUN", help="a stored measured run")
    simulate_options.add_model_option(val)
    common.option(val, "--min-size", default="0", help="smallest size compared")
    common.option(val, "--max-size", help="largest size compared")
    val.add_argument(
        "--smpi-cfg",
        action="append",
        default=[],
        metavar="NAME:VALUE",
        help="extra SimGrid option (repeatable)",
    )
    common.option(val, "--label", type=common.label, help="a name for the simulated run")
    val.add_argument("--json", action="store_true", help="print the comparison as JSON")
    val.add_argument("--quiet", action="store_true", help="no progress bar")

    from commscope.cli import simulate_app

    simulate_app.add_parsers(actions)


def run(args: argparse.Namespace) -> int:
    """Dispatch to the action (each in its own module: they import numpy, SciPy, PyYAML)."""
    from commscope.cli import simulate_app, simulate_calibrate, simulate_run

    actions = {
        "app": simulate_app.run_app,
        "hpl": simulate_app.run_hpl,
        "run": simulate_run.run,
        "calibrate": simulate_calibrate.calibrate,
        "validate": simulate_calibrate.validate,
    }
    return actions[args.action](args)
