"""`commscope validate predict`: placement predictions against the same collective run for real."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from commscope import limits
from commscope.cli import common, predict_costs
from commscope.measure import cvars, launch
from commscope.measure import mpi as mpi_mod

if TYPE_CHECKING:
    from collections.abc import Sequence

    from commscope.analysis.queue import QueueWait

OPS = ("alltoall", "bcast", "reduce", "allreduce", "allgather", "gather")
REDUCTIONS = ("reduce", "allreduce")  # the engine sums doubles: sizes are multiples of 8


def add_options(pred: Any) -> None:
    """Declare the options of the predict check in the argument group ``pred``."""
    common.option(
        pred,
        "--np",
        dest="procs",
        metavar="N",
        type=common.whole(1, limits.MAX_PREDICT_PROCS),
        default=4,
        help="ranks",
    )
    common.option(
        pred,
        "--sizes",
        default="256K,1MiB,4MiB",
        help="sizes: per peer (alltoall), the buffer (bcast, reduce, allreduce) or per rank"
        " (allgather, gather)",
    )
    common.option(
        pred,
        "--tables",
        metavar="RUN",
        help="run holding t(m, cf) contention tables (and p2p points) for the cost",
    )
    common.option(
        pred,
        "--op",
        default="alltoall",
        help=f"the collective to predict and run: {', '.join(OPS)}",
    )
    common.option(
        pred,
        "--algorithm",
        help="its modelled algorithm (default: the first of 'commscope predict --help'); the"
        " real runs are forced to use it",
    )
    common.option(
        pred,
        "--block",
        type=common.whole(0, limits.MAX_PREDICT_PROCS),
        default=0,
        help="block All-to-all batch size (0: all ranks at once)",
    )
    common.option(
        pred,
        "--max-launches",
        type=common.whole(2, 100000),
        default=40,
        help="launches per measured point at most",
    )
    common.option(
        pred,
        "--repeats",
        dest="runs",
        metavar="N",
        type=common.whole(1, 100),
        default=1,
        help="separate runs of each placement, taken in turn; judged on their mean, with"
        " the spread between runs in its error (what one run's launches cannot show)",
    )
    pred.add_argument(
        "--mca",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="Open MPI parameter for the real runs, repeatable (default: those "
        "stored with the --tables run, so both see the same protocol)",
    )
    pred.add_argument(
        "--cvar",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="MPICH control variable for the real runs, repeatable (default: those stored"
        " with the --tables run)",
    )


def _site(args: argparse.Namespace, mpi: mpi_mod.MPIInstall) -> tuple[Any, dict[str, Any]]:
    """The model of where the placements run, and how to reach it."""
    import os

    from commscope import predict
    from commscope.measure import hosts, slurm, vcluster
    from commscope.predict.model_slurm import model_from_scontrol

    if args.vcluster:
        state = vcluster.status()
        common.require(
            state is not None and state.healthy,
            "validate predict: no virtual cluster is up; run 'commscope vcluster up'",
        )
        assert state is not None
        return (
            predict.model_from_vcluster([n.name for n in state.nodes], state.rate),
            {"vcluster": {"rate": state.rate, "subnet": state.subnet}},
        )
    if args.hostfile or args.hosts:
        named, where = hosts.named_hosts(args.hostfile, args.hosts)
        cores = hosts.probe_cores(mpi, named)
        per_node = min(h.slots or cores[h.name] for h in named)
        model = predict.ClusterModel(
            name="hosts",
            node_names=tuple(h.name for h in named),
            sockets=1,
            cores=per_node,
            source=where,
        )
        return model, {"hosts": True}
    common.require(
        bool(os.environ.get("SLURM_JOB_ID")),
        "validate predict: give --vcluster, --hostfile or --hosts, or run it inside a"
        " Slurm allocation (salloc -N 4 commscope validate predict ...)",
    )
    allocation = slurm.current()
    assert allocation is not None
    model, _ = model_from_scontrol(slurm.show_nodes(allocation.nodes), None, slurm.hostnames)
    return model, {"slurm": {**allocation.to_json(), "plugin": slurm.mpi_plugin(mpi)}}


def _settings(
    args: argparse.Namespace, mpi: mpi_mod.MPIInstall, stored: dict[str, Any], forced: Any
) -> tuple[dict[str, str], dict[str, str]]:
    """The runs' --mca and --cvar: given, else the tables run's; then the forced ones."""
    from commscope.validate.forcing import merged

    mca: dict[str, str] = {}
    cvar: dict[str, str] = {}
    if mpi.family == "openmpi":
        mca = launch.parse_mca(args.mca) if args.mca else dict(stored.get("mca") or {})
    else:
        cvar = cvars.parse(args.cvar) if args.cvar else dict(stored.get("cvar") or {})
    # Settings for the other MPI are refused, not dropped.
    launch.check_mca(mpi, launch.parse_mca(args.mca) if args.mca else None)
    cvars.check(mpi, cvars.parse(args.cvar) if args.cvar else None)
    return merged(mca, forced.mca, "--mca"), merged(cvar, forced.cvar, "--cvar")


def run(args: argparse.Namespace) -> int:
    """Predict and measure every placement of --procs ranks; print the verdict per size."""
    from commscope import predict
    from commscope.analysis import contention
    from commscope.predict import cost_tables, resolution
    from commscope.predict.answers import AnswerWaits
    from commscope.units import parse_size_list
    from commscope.validate import forcing
    from commscope.validate.predict import check, unpriced_levels

    common.require(bool(args.tables), "validate predict: give --tables RUN with t(m, cf) tables")
    common.require(args.op in OPS, f"--op {args.op}: choose one of {', '.join(OPS)}")
    sizes = parse_size_list(args.sizes, "--sizes")
    odd = [s for s in sizes if s % 8]
    common.require(
        not (odd and args.op in REDUCTIONS),
        f"--sizes {args.sizes}: {args.op} sums doubles, so sizes must be multiples of 8"
        f" ({odd[0] if odd else 0} is not)",
    )
    mpi = mpi_mod.resolve(args.mpi)
    algorithm = forcing.algorithm_of(args.op, args.algorithm, mpi.family)
    forced = forcing.forced(args.op, algorithm, mpi.family, args.procs)
    model, site = _site(args, mpi)
    with common.open_store(args) as store:
        run_id, found = cost_tables.table_cells(
            store, args.tables, "run 'commscope run contention' on these nodes first"
        )
        cost = predict.TableCost.from_tables(contention.tables(found), f"run {run_id}", model)
        missing = unpriced_levels(model, cost, args.procs, forced, args.block)
        common.require(
            not missing,
            f"--tables {args.tables}: run {run_id} has no t(m, cf) table"
            f" for the {' and '.join(missing)} level, which placements of"
            f" {args.procs} ranks use; measure it ('commscope run contention"
            " --levels memory,nic' on these nodes)",
        )
        mca, cvar = _settings(args, mpi, store.get_run(run_id).request, forced)
        # The same tables resampled: which pairs of placements their noise leaves unordered.
        resampled = resolution.resampled_costs(
            found, lambda t: predict.TableCost.from_tables(t, f"run {run_id}", model)
        )
        # Rendezvous answers are priced with the tables run's limit: the runs take its settings.
        eager, waits = cost_tables.rendezvous_of(store, run_id)
        checks, verdicts = check(
            store,
            mpi,
            model,
            cost,
            args.procs,
            sizes,
            args.block,
            site,
            mca,
            forced,
            cvar,
            args.max_launches,
            resampled,
            AnswerWaits.of(eager, waits),
            args.runs,
        )
        rendezvous = _above_eager(store, checks, forced, args.procs, sizes, args.block, waits)
        tcp_differs = _tcp_differences(store, run_id, checks)
    if args.json:
        common.print_json(
            {
                "tables_run": run_id,
                "procs": args.procs,
                "runs": args.runs,
                "forced": forced.to_json(),
                "mca": mca,
                "cvar": cvar,
                "placements": [c.to_json() for c in checks],
                "sizes": [v.to_json() for v in verdicts],
                "rendezvous": rendezvous,
                "tcp_settings_differ": tcp_differs,
            }
        )
        return 0
    print_checks(args, run_id, forced, mca, cvar, checks, verdicts)
    predict_costs.print_above_eager(rendezvous, "the measured runs")
    if tcp_differs:
        from rich.text import Text

        common.console().print(
            Text(
                f"! the tables run and the measured runs ran under different TCP settings"
                f" ({'; '.join(tcp_differs)}): each moves what a transfer takes"
                " (docs/validation/predict.md), so the prices describe another network",
                "yellow",
            )
        )
    return 0


def _tcp_differences(store: Any, tables_run: int, checks: list[Any]) -> list[str]:
    """TCP settings the tables run recorded otherwise than the measured runs, in words."""
    from commscope.analysis import tcp_loss

    ends = [seg.end for run in {c.run_id for c in checks} for seg in store.segments(run)]
    tables = [seg.end for seg in store.segments(tables_run)]
    return tcp_loss.setting_differences(tables, ends)


def _above_eager(
    store: Any,
    checks: list[Any],
    forced: Any,
    procs: int,
    sizes: list[int],
    block: int | None,
    waits: Sequence[QueueWait],
) -> dict[str, Any] | None:
    """The largest size's messages against the measured runs' inter-node eager limit.

    With the tables run's answer waits (contention level queue) where it measured them.
    """
    from commscope.data.mpi_config import RUN_DATA_KIND, ProtocolLimits
    from commscope.predict import cost_tables
    from commscope.validate.predict import pattern_of

    if not checks or not sizes:
        return None
    limits = ProtocolLimits.from_json(store.run_data(checks[0].run_id, RUN_DATA_KIND))
    pattern = pattern_of(forced, procs, max(sizes), block or 0)
    return cost_tables.above_eager(pattern, limits.inter_node() if limits else None, waits)


def print_checks(
    args: argparse.Namespace,
    run_id: int,
    forced: Any,
    mca: dict[str, str],
    cvar: dict[str, str],
    checks: list[Any],
    verdicts: list[Any],
) -> None:
    """Predicted against measured per placement, the settings forced, and the verdict per size."""
    from rich.table import Table
    from rich.text import Text

    from commscope.validate.predict import BUDGET_LAUNCHES, POINT_BUDGET_S

    settings = [f"--mca {k}={v}" for k, v in mca.items()]
    settings += [f"--cvar {k}={v}" for k, v in cvar.items()]
    table = Table(
        title=f"{forced.op} ({forced.algorithm}), {args.procs} ranks: predicted vs measured"
        f" (tables: run {run_id})"
    )
    columns = ["placement", "bytes", "predicted (ms)", "measured (ms)", "error"]
    runs = max((len(c.run_times_s) for c in checks), default=1)  # --runs, each run's time
    if runs > 1:
        columns.append("each run (ms)")
    for col in columns:
        table.add_column(col, justify="left" if col == "placement" else "right")
    for c in checks:
        measured = c.measured_s == c.measured_s  # NaN: no valid launch
        row = [
            c.placement,
            str(c.bytes),
            f"{c.predicted_s * 1e3:.3f}",
            f"{c.measured_s * 1e3:.3f}" if measured else "no valid launch",
            f"{c.relative_error:+.0%}" if measured else "",
        ]
        if runs > 1:
            row.append(" ".join(f"{t * 1e3:.1f}" for t in c.run_times_s))
        table.add_row(*row)
    out = common.console()
    out.print(f"forced: {forced.describe()}")
    out.print(f"run with: {' '.join(settings) or 'the MPI defaults'}")
    out.print(table)
    if runs > 1:
        out.print(
            f"measured: the mean of {runs} runs of each placement, taken in turn; each"
            " pair judged with the spread between the runs"
        )
    for v in verdicts:
        # NaN: the predictions tie (the ring Allgather on 2x2 and 4x1) or < 2 were measured.
        tau = f"{v.kendall_tau:.2f}" if v.kendall_tau == v.kendall_tau else "n/a"
        out.print(f"{v.bytes} B: Kendall tau {tau}, median |error| {v.median_relative_error:.0%}")
        for pair in v.pairs:
            out.print(Text(f"  {pair.text()}", "" if pair.hit else "yellow"))
        if v.unmeasured:
            reasons = [
                f"{c.placement} ({c.unmeasured_reason()})"
                for c in checks
                if c.bytes == v.bytes and c.placement in v.unmeasured
            ]
            out.print(
                f"{v.bytes} B: {', '.join(reasons)}: no valid launch within the"
                f" point's budget ({args.max_launches} launches, {POINT_BUDGET_S:g} s or"
                f" {BUDGET_LAUNCHES} predicted launches if longer); left out"
                " of tau and the errors"
            )
    bbr = list(dict.fromkeys(n for c in checks for n in c.bbr_nodes))
    if bbr:
        out.print(
            Text(
                f"! TCP ran BBR on {', '.join(bbr)}: a connection that idles while its rank"
                " exchanges with other peers restarts below the link rate, which the pair"
                " tables never see (recursive doubling on 4 nodes: 1.2-1.7x its CUBIC time at"
                " 1-4 MiB, docs/validation/predict.md); on the vcluster compare with"
                " 'vcluster up --tcp-cc cubic'",
                "yellow",
            )
        )
    for c in checks:
        if c.start_skew:
            out.print(Text(f"! {c.placement} {c.bytes} B: {c.start_skew}", "yellow"))
    lossy = {c.placement: c.tcp_loss_warnings for c in checks if c.tcp_loss_warnings}
    for placement, warnings in lossy.items():
        for text in warnings:
            out.print(Text(f"! {placement}: {text}: its measured times carry the losses", "yellow"))
