"""`commscope simulate`: benchmarks on a SimGrid/SMPI model of a cluster.

Run them (and sweep the model's parameters), calibrate the model from a measured run,
validate it against one.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from commscope import limits
from commscope.cli import common, run_cmd
from commscope.data.request import RunRequest
from commscope.data.store import Store
from commscope.errors import UsageError
from commscope.units import parse_size

if TYPE_CHECKING:
    from commscope.predict.model import ClusterModel
    from commscope.simulate import agreement
    from commscope.simulate.params import SimParams

HELP = "simulate clusters with SimGrid/SMPI: run, calibrate, validate, sweep"
EXAMPLES = """examples:
  commscope simulate run --cluster c.yaml --nodes 2 -- p2p --max-size 4MiB
  commscope simulate run --cluster c.yaml --nodes 16 --ranks-per-node 12 -- coll
  commscope simulate run --cluster c.yaml --nodes 16 --ranks-per-node 12 \\
      --sweep switch_latency=80us,160us,240us,320us,400us -- coll --ops alltoall --sizes 1MiB
  commscope simulate calibrate 12 -o vcluster.yaml     model + factors from ping-pong run 12
  commscope simulate validate 14 --cluster vcluster.yaml --min-size 1KiB
"""
NAME = "simulate"
# The parameters --help names, written out: commscope.simulate.params imports the cluster model
# (numpy, PyYAML), which would slow every command's start. tests/unit/test_cli_startup.py checks
# them against SWEEPABLE.
SWEEPABLE_NAMES = (
    "nic_latency",
    "nic_bandwidth",
    "memory_latency",
    "memory_bandwidth",
    "switch_latency",
)


def _model_options(p: argparse.ArgumentParser) -> None:
    common.option(
        p,
        "--cluster",
        env="COMMSCOPE_CLUSTER",
        metavar="FILE",
        help="cluster model YAML file (its 'simulation' section holds calibrations)",
    )


def setup_parser(parser: argparse.ArgumentParser) -> None:
    """Declare `simulate run`, `simulate calibrate` and `simulate validate`."""
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    run = actions.add_parser(
        "run",
        help="run a benchmark on the model",
        description="Run a commscope benchmark under smpirun on a platform"
        " written from the cluster model. Benchmark options follow '--'.",
    )
    _model_options(run)
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
        help=f"one run per value of a parameter ({', '.join(SWEEPABLE_NAMES)});"
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
        "--launches",
        type=common.whole(0, 10**4),
        default=2,
        help="collectives: launches per point after one warm-up launch (simulated"
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

    cal = actions.add_parser("calibrate", help="fit SMPI factors and links to a measured run")
    cal.add_argument("run", metavar="RUN", help="a stored p2p run with inter-node ping-pong")
    _model_options(cal)
    cal.add_argument(
        "-o",
        "--output",
        help="model file to write [default: the --cluster file, else commscope-cluster.yaml]",
    )
    common.option(
        cal,
        "--rounds",
        type=common.whole(0, 100),
        default=2,
        help="simulations of the run's ping-pong that correct the factors",
    )
    cal.add_argument("--json", action="store_true", help="print the calibration as JSON")

    val = actions.add_parser("validate", help="re-run a measured run on the model, compare")
    val.add_argument("run", metavar="RUN", help="a stored measured run")
    _model_options(val)
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


def run(args: argparse.Namespace) -> int:
    """Dispatch to the action."""
    return {"run": _run, "calibrate": _calibrate, "validate": _validate}[args.action](args)


class _BenchParser(argparse.ArgumentParser):
    """Parses the benchmark options after '--'; an error is a UsageError, printed once."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(
            f"benchmark options after '--': {message}; they must be valid for"
            " 'commscope run' (see 'commscope run --help')"
        )


def _bench_args(words: list[str]) -> argparse.Namespace:
    words = words[1:] if words and words[0] == "--" else words
    parser = _BenchParser(prog="commscope simulate run ... --", add_help=False)
    run_cmd.setup_parser(parser)
    return parser.parse_args(words)


def _sweeps(
    specs: list[str], params: SimParams
) -> list[tuple[str, SimParams, dict[str, Any] | None]]:
    """(label, parameters, sweep record) of every run: one per value of each swept parameter.

    The sweep record (parameter, value as given, value in seconds or bytes/s) goes into the
    run's request, so a report can line the runs of one sweep up.
    """
    from commscope.simulate.params import SWEEPABLE

    if not specs:
        return [("", params, None)]
    out: list[tuple[str, SimParams, dict[str, Any] | None]] = []
    for spec in specs:
        name, _, values = spec.partition("=")
        if not values:
            raise UsageError(f"--sweep {spec}: give NAME=V1,V2,... (e.g. nic_latency=80us,400us)")
        for value in values.split(","):
            swept = params.with_value(name, value)
            record = {
                "parameter": name,
                "value": value,
                "si_value": getattr(swept, SWEEPABLE[name][0]),
            }
            out.append((f"{name}={value}", swept, record))
    return out


def _simulate(
    args: argparse.Namespace, store: Any, request: RunRequest, label: str | None, quiet: bool
) -> int:
    from commscope.simulate import smpi

    mpi = smpi.install()
    run_id: int = store.create_run(
        request.benchmark, label, mpi.tag, mpi.launcher, request.np, request.to_json()
    )
    run_cmd.measure(store, run_id, request, mpi, quiet)
    return run_id


def _run(args: argparse.Namespace) -> int:
    # The simulation's modules bring numpy, SciPy and PyYAML: imported when an action runs.
    from rich.table import Table

    from commscope.predict.placement import regular
    from commscope.simulate import agreement, setup

    common.require(bool(args.cluster), "--cluster FILE: simulate needs a cluster model")
    bench = _bench_args(args.bench)
    common.require(
        not bench.vcluster and not bench.resume,
        "--vcluster/--resume: not for simulated runs; the model is the cluster",
    )
    model, params = setup.load(args.cluster)
    nodes = args.nodes or min(2, model.nodes)
    common.require(nodes <= model.nodes, f"--nodes {nodes}: {args.cluster} has {model.nodes}")
    placement = regular(model, nodes, args.ranks_per_node, args.order)
    base = run_cmd.build_request(bench)
    engine = base.engine
    if args.launches and engine.coll_sizes is not None:
        engine = engine.replace(k0=1, k=args.launches, max_launches=args.launches)
    if engine.sync is not None and "--resync" not in args.bench:
        # Simulated ranks read one simulated clock: synchronising again before every point
        # finds nothing and only adds its messages to the network load.
        engine = engine.replace(resync="run")
    base = base.replace(engine=engine)
    runs = []
    with common.open_store(args) as store:
        sweeps = _sweeps(args.sweep, params)
        for tag, p, sweep in sweeps:
            request = setup.simulated_request(
                base, model, p, placement, args.smpi_cfg, args.neutral, args.netload
            )
            sim = {**(request.simulate or {}), "sweep": sweep}
            request = request.replace(simulate=sim)
            label = " ".join(x for x in (args.label, tag) if x) or None
            if not (args.json or args.quiet):
                common.console(stderr=True).print(
                    f"simulating {placement.label} of {model.describe()}"
                    f"{' with ' + tag if tag else ''}; {sim['factors']}"
                )
            runs.append(_simulate(args, store, request, label, args.quiet or args.json))
        if len(runs) == 1:
            from commscope.measure import runner

            rid = runs[0]
            outcome = runner.Outcome(
                rid, len(store.measured_keys(rid)), len(store.measured_keys(rid))
            )
            load = store.run_data(rid, "netload")
            if args.json and load is not None:
                common.print_json({"run": rid, "netload": load})
                return 0
            status = run_cmd.show_outcome(args, store, rid, request, outcome, None)
            if load is not None:
                _netload_table(load)
            if not args.json:
                seg = store.segments(rid)[-1]
                wall = (seg.ended_unix or seg.started_unix) - seg.started_unix
                common.console().print(f"simulated {request.np} ranks in {wall:.1f} s of wall time")
            return status
        times = [
            agreement.point_times(store.points(r), store.colls(r), store.contentions(r))
            for r in runs
        ]
    labels = [tag for tag, _, _ in sweeps]
    rows = agreement.sensitivity(times)
    if args.json:
        common.print_json(
            {
                "runs": runs,
                "labels": labels,
                "points": [{"key": list(k), "times_s": v, "change": c} for k, v, c in rows],
            }
        )
        return 0
    table = Table(title="sensitivity: time per point for each swept value")
    table.add_column("point")
    for lab in labels:
        table.add_column(lab, justify="right")
    table.add_column("change first->last", justify="right")
    for key, values, change in rows:
        table.add_row(
            _key_text(key),
            *[_time(v) for v in values],
            "" if math.isnan(change) else f"{100 * change:+.1f} %",
        )
    out = common.console()
    out.print(table)
    out.print(
        f"runs {', '.join(map(str, runs))}; overlay them with 'commscope compare "
        f"{' '.join(map(str, runs))}'"
    )
    return 0


def _netload_table(load: dict[str, Any]) -> None:
    from rich.table import Table

    table = Table(title=f"network load over {load['duration_s']:.6g} s simulated")
    for col in ("link", "MB", "messages", "mean message (B)", "average Mbit/s"):
        table.add_column(col, justify="right")
    for x in load["links"]:
        mean = x["mean_message_bytes"]
        table.add_row(
            x["link"],
            f"{x['bytes'] / 1e6:.3f}",
            str(x["messages"]),
            "" if mean is None else f"{mean:.0f}",
            "" if x["mbit_per_s"] is None else f"{x['mbit_per_s']:.1f}",
        )
    common.console().print(table)


def _key_text(key: agreement.Key) -> str:
    kind, op, where, size = key
    return f"{op} {where} {size} B"


def _time(t: float) -> str:
    return f"{t * 1e6:.2f} us" if t < 1e-2 else f"{t * 1e3:.3f} ms"


def _calibrate(args: argparse.Namespace) -> int:
    from rich.table import Table

    from commscope import safe_write
    from commscope.simulate import calibrate, setup

    out_path = args.output or args.cluster or "commscope-cluster.yaml"
    out_flag = "-o" if args.output else "--cluster" if args.cluster else None
    safe_write.check_target(out_path, out_flag)  # before the calibration rounds
    with common.open_store(args) as store:
        run_id = store.resolve_run(args.run)
        info = store.get_run(run_id)
        points = store.points(run_id)
    common.require(
        not info.request.get("simulate"),
        f"run {run_id} is simulated; calibrate from a measured run",
    )
    if args.cluster:
        model, params = setup.load(args.cluster)
    else:
        model = setup.model_of_run(info)
        params = setup.params_for(model)
    label = f"run {run_id} ({info.kind}, {info.mpi}, {len(model.node_names)} nodes)"
    cal = calibrate.calibrate(points, params, model.nic.bandwidth_Bps, label)
    tuned = cal.params
    if args.rounds:
        placement = setup.placement_of_run(model, info)
        base = RunRequest.from_json(info.request)
        base = base.replace(engine=base.engine.replace(ops="pingpong"))
        with tempfile.TemporaryDirectory(prefix="commscope-calibrate-") as tmp:
            with Store.open(Path(tmp) / "rounds.sqlite") as scratch:
                for _ in range(args.rounds):
                    request = setup.simulated_request(base, model, tuned, placement, [])
                    rid = _simulate(args, scratch, request, None, True)
                    tuned = calibrate.refine(tuned, points, scratch.points(rid))
    cal = dataclasses.replace(cal, params=tuned)
    setup.write_model(out_path, model, cal.params, out_flag)
    if args.json:
        common.print_json(
            {
                "model": out_path,
                "params": cal.params.to_json(),
                "segments": [s.__dict__ for s in cal.inter],
            }
        )
        return 0
    out = common.console()
    p = cal.params
    out.print(f"calibrated from {label}; written to {out_path}")
    out.print(
        f"NIC: {p.nic_bw_Bps / 1e6:.2f} MB/s, {p.nic_lat_s * 1e6:.2f} us each (route"
        f" {2 * p.nic_lat_s * 1e6:.2f} us); memory link: {p.memory_bw_Bps / 1e9:.3f} GB/s,"
        f" {p.memory_lat_s * 1e6:.3f} us"
    )
    table = Table(title="SMPI factors per size segment (inter-node fit)")
    for col in ("from", "to", "sizes", "lat-factor", "bw-factor"):
        table.add_column(col, justify="right")
    for seg, (_, lf), (_, bf) in zip(cal.inter, p.lat_factor, p.bw_factor, strict=True):
        table.add_row(str(seg.start), str(seg.end - 1), str(seg.sizes), f"{lf:.3f}", f"{bf:.3f}")
    out.print(table)
    return 0


def _validate(args: argparse.Namespace) -> int:
    from rich.table import Table

    from commscope.simulate import agreement, setup

    min_b = parse_size(args.min_size, "--min-size")
    max_b = parse_size(args.max_size, "--max-size") if args.max_size is not None else None
    with common.open_store(args) as store:
        run_id = store.resolve_run(args.run)
        info = store.get_run(run_id)
        common.require(
            not info.request.get("simulate"),
            f"run {run_id} is simulated; validate against a measured run",
        )
        model: ClusterModel
        if args.cluster:
            model, params = setup.load(args.cluster)
        else:
            model = setup.model_of_run(info)
            params = setup.params_for(model)
        placement = setup.placement_of_run(model, info)
        measured_request = RunRequest.from_json(info.request)
        request = setup.simulated_request(measured_request, model, params, placement, args.smpi_cfg)
        label = args.label or f"model of run {run_id}"
        sim_id = _simulate(args, store, request, label, args.quiet or args.json)
        measured = agreement.point_times(
            store.points(run_id), store.colls(run_id), store.contentions(run_id)
        )
        simulated = agreement.point_times(
            store.points(sim_id), store.colls(sim_id), store.contentions(sim_id)
        )
    result = agreement.agreement(measured, simulated, min_b, max_b)
    if args.json:
        common.print_json(
            {
                "measured_run": run_id,
                "simulated_run": sim_id,
                "factors": (request.simulate or {})["factors"],
                **result.to_json(),
            }
        )
        return 0
    out = common.console()
    table = Table(title=f"run {run_id} measured vs simulated run {sim_id}")
    for col in ("point", "measured", "simulated", "error"):
        table.add_column(col, justify="right")
    for row in result.rows:
        table.add_row(
            _key_text(row.key),
            _time(row.measured_s),
            _time(row.simulated_s),
            f"{100 * row.error:+.1f} %",
        )
    out.print(table)
    out.print(
        f"{len(result.rows)} points; |relative error| median {100 * result.median_abs:.1f}"
        f" %, 90th percentile {100 * result.p90_abs:.1f} %; {(request.simulate or {})['factors']}"
    )
    return 0
