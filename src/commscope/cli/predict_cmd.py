"""`commscope predict`: rank the placements of a collective by predicted time.

Module 2 of Peryshkova and Kurnosov 2018 (contention-aware placement).
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from commscope import limits
from commscope.cli import common, predict_costs
from commscope.errors import ClusterError, PredictError, UsageError
from commscope.measure import vcluster
from commscope.units import parse_size, time_text

if TYPE_CHECKING:
    from commscope import predict
    from commscope.predict.cost import CostModel
    from commscope.predict.model import ClusterModel
    from commscope.predict.rank import Prediction

NAME = "predict"
HELP = "predict a collective's time on every n x c placement and hand off the best"
EXAMPLES = """examples:
  commscope predict alltoall --np 8 --sizes 1MiB --tables 3 --cluster cluster.yaml
  commscope predict alltoall --np 8 --sizes 1MiB --tables latest --vcluster --block 8
  commscope predict allreduce --np 64 --sizes 64K --p2p 2 --hwloc --hwloc-nodes 8 --json
  commscope predict bcast --np 16 --sizes 4MiB --cluster c.yaml --choose 4x4/2s \\
      --write-rankfile rankfile --write-hostfile hosts
  commscope predict alltoall --np 64 --sizes 1MiB --cluster slurm --tables 3 \\
      --submit job.sh                  Slurm's nodes; sbatch the best placement

Costs come from the run given with --tables (its t(m, cf) tables, as in Peryshkova and
Kurnosov 2018; the run's point-to-point results fill levels it lacks), then --p2p (Hockney
fits), then the cluster model's nominal rates. Placements using a level none of them covers
are listed last. With tables, the output also gives the share of 100 resampled tables under
which each leading placement is fastest (their noise may leave a tie), and a note when the
messages are above the inter-node eager limit recorded with the tables (a rendezvous). When
the tables run also measured contention level queue, the prices include the answers that wait
behind their receiver's node's outgoing stream (column "of it, answers waiting")."""
# The choices and default --help shows, written out: importing commscope.predict (numpy, SciPy,
# PyYAML) would slow every command's start. tests/unit/test_cli_startup.py checks them against
# predict.ALGORITHMS and predict.placement.ORDERS.
OPERATIONS = ("alltoall", "bcast", "reduce", "allreduce", "allgather", "gather")
ORDERS = ("block", "cyclic")


def setup_parser(p: argparse.ArgumentParser) -> None:
    """Declare the options of `commscope predict`."""
    p.add_argument("op", choices=OPERATIONS, help="collective operation")
    p.add_argument(
        "--np",
        dest="procs",
        metavar="N",
        type=common.whole(1, limits.MAX_PREDICT_PROCS),
        required=True,
        help="ranks (the paper's p)",
    )
    p.add_argument(
        "--sizes",
        dest="size",
        metavar="SIZE",
        default="1MiB",
        help="message size, one: per pair (alltoall), the buffer"
        " (bcast, reduce, allreduce) or per rank (allgather, gather)"
        " [default: %(default)s]",
    )
    p.add_argument("--tables", metavar="RUN", help="run with contention measurements")
    p.add_argument("--p2p", metavar="RUN", help="run with point-to-point ping-pong results")
    where = p.add_mutually_exclusive_group()
    common.option(
        where,
        "--cluster",
        env="COMMSCOPE_CLUSTER",
        metavar="FILE",
        help="cluster model YAML file (see docs/predict.md), or 'slurm': Slurm's nodes, "
        "sockets and cores (scontrol show nodes) and switches (show topology)",
    )
    where.add_argument("--vcluster", action="store_true", help="model the virtual cluster")
    where.add_argument(
        "--hwloc",
        nargs="?",
        const="",
        metavar="XML",
        help="model nodes like this one (or like a saved hwloc XML file);"
        " the default without --cluster",
    )
    p.add_argument(
        "--hwloc-nodes",
        dest="nodes",
        metavar="N",
        type=common.whole(1, limits.MAX_MODEL_NODES),
        default=1,
        help="with --hwloc: how many such nodes the model has [default: 1]",
    )
    p.add_argument(
        "--nic-rate",
        metavar="RATE",
        help="with --cluster slurm: each node's NIC rate (e.g. 100gbit); needed to"
        " model Slurm's switches",
    )
    p.add_argument(
        "--uplink-rate",
        metavar="RATE",
        help="with --cluster slurm: each switch's uplink rate [default: --nic-rate]",
    )
    p.add_argument(
        "--algorithm",
        help="algorithm of the operation (alltoall: block, pairwise;"
        " bcast: binomial, binomial-halving (MPICH's order, farthest first);"
        " allreduce: recursive-doubling, ring) [default: the first]",
    )
    p.add_argument(
        "--block",
        metavar="N",
        type=common.whole(0, limits.MAX_PREDICT_PROCS),
        default=0,
        help="block All-to-all batch size (0: all ranks at once) [default: 0]",
    )
    p.add_argument(
        "--root",
        type=common.whole(0, limits.MAX_PREDICT_PROCS - 1),
        default=0,
        help="root of bcast, reduce, gather",
    )
    p.add_argument("--order", choices=ORDERS, help="rank order across nodes [default: both]")
    p.add_argument("--hostfile", metavar="FILE", help="also predict this hostfile's placement")
    p.add_argument("--rankfile", metavar="FILE", help="also predict this rankfile's placement")
    p.add_argument("--choose", metavar="LABEL", help="hand off this placement, not the best")
    p.add_argument("--write-rankfile", metavar="FILE", help="write an Open MPI rankfile")
    p.add_argument("--write-hostfile", metavar="FILE", help="write a hostfile")
    p.add_argument(
        "--submit",
        metavar="JOBSCRIPT",
        help="submit JOBSCRIPT with sbatch asking for the chosen placement; print the job id",
    )
    p.add_argument("--top", type=common.whole(1, 10**6), help="show only the fastest N")
    p.add_argument("--json", action="store_true", help="machine-readable output (seconds)")


def _rate(flag: str, text: str | None) -> float | None:
    if text is None:
        return None
    try:
        return vcluster.parse_rate(text) / 8.0
    except ClusterError as err:
        raise UsageError(f"{flag} {text}: {err}") from None


def _slurm_model(args: argparse.Namespace) -> tuple[ClusterModel, str | None]:
    from commscope.measure import slurm
    from commscope.predict.model_slurm import model_from_scontrol

    return model_from_scontrol(
        slurm.show_nodes(),
        slurm.show_topology(),
        slurm.hostnames,
        _rate("--nic-rate", args.nic_rate),
        _rate("--uplink-rate", args.uplink_rate),
    )


def _model(args: argparse.Namespace) -> ClusterModel:
    if (args.nic_rate or args.uplink_rate) and args.cluster != "slurm":
        raise UsageError(
            "--nic-rate/--uplink-rate: only with --cluster slurm (a YAML model "
            "gives its rates itself)"
        )
    from commscope import predict

    if args.vcluster:
        state = vcluster.status()
        common.require(
            state is not None,
            "--vcluster: there is no virtual cluster; build one"
            " with 'commscope vcluster up --nodes N'",
        )
        assert state is not None
        return predict.model_from_vcluster([n.name for n in state.nodes], state.rate)
    if args.cluster == "slurm" and args.hwloc is None:
        model, note = _slurm_model(args)
        if note and not args.json:
            common.console(stderr=True).print(f"note: {note}")
        return model
    if args.cluster and args.hwloc is None:
        return predict.load_model(args.cluster)
    if args.hwloc:
        return predict.model_from_hwloc_file(args.hwloc, args.nodes)
    return predict.model_from_hwloc(nodes=args.nodes)


def _placements(args: argparse.Namespace, model: ClusterModel) -> list[predict.Placement]:
    from commscope import predict

    explicit = []
    if args.hostfile:
        explicit.append(
            predict.from_hostfile(model, args.hostfile, args.procs, args.order or "block")
        )
    if args.rankfile:
        explicit.append(predict.from_rankfile(model, args.rankfile, args.procs))
    orders = (args.order,) if args.order else predict.placement.ORDERS
    try:
        return predict.enumerate_placements(model, args.procs, orders) + explicit
    except PredictError:
        if explicit:  # p may fit no n x c and still fit the given files
            return explicit
        raise


def _chosen(args: argparse.Namespace, ranked: list[Prediction]) -> Prediction:
    if args.choose is None:
        return ranked[0]
    for pr in ranked:
        if pr.placement.label == args.choose:
            return pr
    labels = ", ".join(pr.placement.label for pr in ranked[:8])
    raise UsageError(f"--choose {args.choose}: no such placement; choose one of {labels}")


def run(args: argparse.Namespace) -> int:
    """Rank placements, print them, and hand off the best or chosen one."""
    from commscope import predict, safe_write
    from commscope.predict import cost_tables, handoff

    outputs = [
        (path, flag)
        for path, flag in (
            (args.write_rankfile, "--write-rankfile"),
            (args.write_hostfile, "--write-hostfile"),
        )
        if path
    ]
    safe_write.check_targets(outputs)  # before the model is read
    common.require(
        "," not in args.size,
        f"--sizes {args.size}: predict prices one size at a time; give one, e.g. 1MiB",
    )
    size = parse_size(args.size, "--sizes")
    common.require(
        args.root < args.procs, f"--root {args.root}: give a rank below --np {args.procs}"
    )
    model = _model(args)
    # Placements first: they check that --np fits the model before any pattern is built.
    placements = _placements(args, model)
    costs = predict_costs.costs(args, model)
    cost = costs.cost
    block = args.block or args.procs  # 0: every rank at once, as `run coll --block 0`
    pattern = predict.build(args.op, args.procs, size, args.algorithm, block, args.root)
    ranked = predict.rank_placements(model, pattern, cost, placements, costs.answers)
    fastest = cost_tables.fastest_shares(model, pattern, costs, ranked)
    rendezvous = cost_tables.above_eager(pattern, costs.eager, costs.queue)
    chosen = _chosen(args, ranked)
    slurm = handoff.slurm_args(model, chosen.placement)
    make = {"--write-rankfile": handoff.rankfile, "--write-hostfile": handoff.hostfile}
    # Both texts before either file: one that cannot be made leaves neither written.
    texts = {flag: make[flag](model, chosen.placement) for _, flag in outputs}
    safe_write.write_texts([(path, texts[flag], flag) for path, flag in outputs])
    job = _submit(args, model, chosen, slurm) if args.submit else None
    if args.json:
        common.print_json(
            {
                **_json(model, pattern, cost, ranked, chosen, slurm),
                "fastest_under_resampled_tables": fastest,
                "rendezvous": rendezvous,
                "submitted": job,
            }
        )
        return 0
    _print(args, model, pattern, cost, ranked, chosen, slurm, fastest, rendezvous)
    if job:
        common.console().print(f"submitted batch job {job} ({chosen.placement.label})")
    return 0


def _submit(
    args: argparse.Namespace, model: ClusterModel, chosen: Prediction, slurm_args: list[str]
) -> str:
    """Sbatch the job script with the chosen placement's options; the job id."""
    from commscope.measure import slurm

    options = list(slurm_args)
    names = [model.node_names[n] for n in chosen.placement.node_ids()]
    if not any(opt.startswith("--nodelist") for opt in options) and set(names) <= set(
        slurm.node_names()
    ):
        options.append("--nodelist=" + ",".join(names))  # the model names Slurm's nodes
    return slurm.submit(options, args.submit)


def _json(
    model: ClusterModel,
    pattern: predict.Pattern,
    cost: CostModel,
    ranked: list[Prediction],
    chosen: Prediction,
    slurm: list[str],
) -> dict[str, Any]:
    from commscope.predict import handoff

    return {
        "pattern": pattern.to_json(),
        "cluster": model.to_json(),
        "cost": cost.sources(),
        "predictions": [pr.to_json() for pr in ranked],
        "chosen": chosen.placement.label,
        "handoff": {
            "slurm": slurm,
            "nodes": [model.node_names[n] for n in chosen.placement.node_ids()],
            "rankfile": handoff.rankfile(model, chosen.placement),
            "hostfile": handoff.hostfile(model, chosen.placement),
        },
    }


def _print(
    args: argparse.Namespace,
    model: ClusterModel,
    pattern: predict.Pattern,
    cost: CostModel,
    ranked: list[Prediction],
    chosen: Prediction,
    slurm: list[str],
    fastest: dict[str, float],
    rendezvous: dict[str, Any] | None,
) -> None:
    from rich.table import Table

    from commscope.predict import handoff
    from commscope.predict.model import LEVELS

    out = common.console()
    out.print(pattern.describe())
    out.print(f"cluster: {model.describe()}")
    sources = cost.sources()
    for level in LEVELS:
        out.print(f"cost of {level}: {sources.get(level, 'none (placements using it: n/a)')}")
    if "fabric" in sources:  # a bound on inter-node transfers, not a level of its own
        out.print(f"inter-node transfers bounded by the fabric: {sources['fabric']}")
    best = ranked[0].time_s
    shown = ranked[: args.top] if args.top else ranked
    answers = any(pr.answer_wait_s > 0 for pr in shown)  # a column only where priced
    table = Table(title="placements, fastest first")
    for col in (
        "#",
        "placement",
        "nodes",
        "ranks/node",
        "sockets/node",
        "order",
        "predicted",
        *(["of it, answers waiting"] if answers else []),
        "vs best",
        "max cf (memory/socket/nic)",
    ):
        table.add_column(col, justify="left" if col in ("placement", "order") else "right")
    for i, pr in enumerate(shown, 1):
        pl = pr.placement
        cfs = "/".join(f"{pr.max_cf[lv]:g}" if lv in pr.max_cf else "-" for lv in LEVELS)
        if pr.priced:
            when, ratio = time_text(pr.time_s), f"{pr.time_s / best:.2f}x" if best else ""
        else:
            when, ratio = f"n/a (no cost for {', '.join(pr.missing)})", ""
        table.add_row(
            str(i),
            pl.label,
            str(pl.nodes),
            str(pl.per_node),
            str(pl.sockets_used),
            pl.order,
            when,
            *([time_text(pr.answer_wait_s) if pr.priced else ""] if answers else []),
            ratio,
            cfs,
        )
    out.print(table)
    predict_costs.print_fastest(fastest)
    predict_costs.print_above_eager(rendezvous)
    pl = chosen.placement
    out.print(f"hand-off for {pl.label}" + (" (fastest)" if chosen is ranked[0] else ""))
    out.print(f"  slurm: {' '.join(slurm)}")
    for flag, what in ((args.write_rankfile, "rankfile"), (args.write_hostfile, "hostfile")):
        if flag:
            out.print(f"  wrote {what} {flag}")
    out.print(f"  launch: {handoff.launch_hint(pl, args.write_rankfile, args.write_hostfile)}")
