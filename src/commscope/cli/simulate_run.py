"""`commscope simulate run`: benchmarks on a SimGrid/SMPI model, one run or a sweep."""

from __future__ import annotations

import argparse
import math
from typing import TYPE_CHECKING, Any, NoReturn

from commscope.cli import common, run_kinds, run_outcome, run_request, simulate_options
from commscope.data.request import RunRequest
from commscope.errors import UsageError
from commscope.jobs import runs as run_jobs

if TYPE_CHECKING:
    from commscope.simulate import agreement


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
    run_kinds.declare(parser)
    return parser.parse_args(words)


def simulate_into(store: Any, request: RunRequest, label: str | None, quiet: bool) -> int:
    """Store a new run of ``request`` in ``store`` and measure it under SMPI; its id."""
    with run_outcome.progress_bar(quiet) as (progress, _):
        run_id, _ = run_jobs.measure_stored(store, request, label, progress)
    return run_id


def run(args: argparse.Namespace) -> int:
    """Run the benchmark after '--' on the model, once or once per swept value."""
    # The simulation's modules bring numpy, SciPy and PyYAML: imported when an action runs.
    from rich.table import Table

    from commscope.predict.placement import regular
    from commscope.simulate import agreement, setup
    from commscope.simulate.sweeps import expand_sweeps

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
    # The placement sets the ranks; the benchmark's own options (bisection's pairs, mbw's
    # steps) are checked against that count, not against one rank.
    common.require(
        bench.np in (None, placement.p),
        f"--np {bench.np} after --: the placement has {placement.p} ranks (--nodes x"
        " --ranks-per-node); leave --np out",
    )
    bench.np = placement.p
    simulate_options.require_simulable(bench.benchmark)
    base = run_request.build_request(bench)
    engine = base.engine
    if args.samples and engine.coll_sizes is not None:
        # Simulated time has no noise: the launches asked for are all the valid ones needed,
        # so the analysis does not flag the point for having fewer than a measurement needs.
        engine = engine.replace(
            k0=1, k=args.samples, max_launches=args.samples, min_valid=args.samples
        )
    if engine.sync is not None and "--resync" not in args.bench:
        # Simulated ranks read one simulated clock: synchronising again before every point
        # finds nothing and only adds its messages to the network load.
        engine = engine.replace(resync="run")
    base = base.replace(engine=engine)
    runs = []
    with common.open_store(args) as store:
        sweeps = expand_sweeps(args.sweep, model, params)
        for tag, swept_model, p, sweep in sweeps:
            request = setup.simulated_request(
                base, swept_model, p, placement, args.smpi_cfg, args.neutral, args.netload
            )
            sim = {**(request.simulate or {}), "sweep": sweep}
            request = request.replace(simulate=sim)
            label = " ".join(x for x in (args.label, tag) if x) or None
            if not (args.json or args.quiet):
                common.console(stderr=True).print(
                    f"simulating {placement.label} of {swept_model.describe()}"
                    f"{' with ' + tag if tag else ''}; {sim['factors']}"
                )
            runs.append(simulate_into(store, request, label, args.quiet or args.json))
        if len(runs) == 1:
            rid = runs[0]
            load = store.run_data(rid, "netload")
            if args.json and load is not None:
                common.print_json({"run": rid, "netload": load})
                return 0
            status = run_outcome.show_outcome(args, run_jobs.stored(store, rid, request))
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
    labels = [swept.label for swept in sweeps]
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
            key_text(key),
            *[time_text(v) for v in values],
            "" if math.isnan(change) else f"{100 * change:+.1f} %",
        )
    out = common.console()
    out.print(table)
    out.print(
        f"runs {', '.join(map(str, runs))}; overlay them with 'commscope compare "
        f"{' '.join(map(str, runs))}'"
    )
    return 0


def _netload_table(stored: dict[str, Any]) -> None:
    from rich.table import Table

    from commscope.simulate import netload

    load = netload.stored_view(stored)
    out = common.console()
    if not load["split"]:
        out.print(
            f"network load not split into benchmark and sync traffic: {load['unsplit']};"
            " all traffic together:"
        )
    blocks = [(p, load[p]) for p in netload.PHASES] if load["split"] else [("all", load["all"])]
    for phase, links in blocks:
        what = netload.PHASE_TITLES.get(phase, phase)
        table = Table(title=f"network load, {what}, over {load['duration_s']:.6g} s simulated")
        for col in ("link", "MB", "messages", "mean message (B)", "average Mbit/s"):
            table.add_column(col, justify="right")
        for x in links:
            mean = x["mean_message_bytes"]
            table.add_row(
                x["link"],
                f"{x['bytes'] / 1e6:.3f}",
                str(x["messages"]),
                "" if mean is None else f"{mean:.0f}",
                "" if x["mbit_per_s"] is None else f"{x['mbit_per_s']:.1f}",
            )
        out.print(table)


def key_text(key: agreement.Key) -> str:
    """A point as the tables name it."""
    kind, op, where, size = key
    return f"{op} {where} {size} B"


def time_text(t: float) -> str:
    """A time in us or ms."""
    return f"{t * 1e6:.2f} us" if t < 1e-2 else f"{t * 1e3:.3f} ms"
