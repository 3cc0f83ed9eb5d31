"""`commscope validate`: can this machine's measurements be trusted?"""

from __future__ import annotations

import argparse
from typing import Any

from commscope import limits
from commscope.cli import common
from commscope.errors import UsageError
from commscope.measure import launch, runner
from commscope.measure import mpi as mpi_mod
from commscope.validate import timers as timers_mod

HELP = "check timers and clock synchronisation with the wait patterns of Kurnosov 2012 (MPIPerf)"
EXAMPLES = """examples:
  commscope validate timers
  commscope validate timers --timers tsc,mpi_wtime --syncs linear,drift --json
  commscope validate timers --hostfile hosts       the same across hosts (by ssh)
  commscope validate predict --procs 4 --sizes 256K,1MiB,4MiB --tables 3 --vcluster
  commscope validate predict --procs 8 --tables 3 --hostfile hosts     placements by ssh
  salloc -N 4 --ntasks-per-node 2 commscope validate predict --procs 4 --tables 3
"""


def _names(text: str, known: tuple[str, ...], flag: str) -> list[str]:
    names = [n for n in text.split(",") if n]
    for n in names:
        common.require(n in known, f"{flag} {n}: choose from {','.join(known)}")
    return names


def setup_parser(p: argparse.ArgumentParser) -> None:
    """Declare the options of `commscope validate`."""
    p.add_argument(
        "what",
        choices=("timers", "predict"),
        help="timers: wait patterns; predict: placement predictions vs real runs",
    )
    common.option(
        p,
        "--mpi",
        env="COMMSCOPE_MPI",
        help="openmpi, mpich or an MPI install prefix (default: mpiexec on PATH)",
    )
    common.option(
        p,
        "--np",
        type=common.ranks,
        help="number of ranks [default: one per core here; on hosts: their slots or "
        "cores; in an allocation: its tasks]",
    )
    common.option(p, "--timers", default=",".join(timers_mod.TIMERS), help="timers to try")
    common.option(p, "--syncs", default=",".join(timers_mod.SYNCS), help="sync methods to try")
    common.option(
        p,
        "--tolerance",
        type=common.number(0, 1e6, above=True),
        default=1.0,
        help="largest acceptable error, microseconds",
    )
    pred = p.add_argument_group("predict")
    common.option(
        pred, "--procs", type=common.whole(1, limits.MAX_PREDICT_PROCS), default=4, help="ranks"
    )
    common.option(pred, "--sizes", default="256K,1MiB,4MiB", help="block sizes per peer")
    common.option(
        pred,
        "--tables",
        metavar="RUN",
        help="run holding t(m, cf) contention tables (and p2p points) for the cost",
    )
    common.option(
        pred,
        "--block",
        type=common.whole(0, limits.MAX_PREDICT_PROCS),
        default=0,
        help="block All-to-all batch size (0: all ranks at once)",
    )
    pred.add_argument(
        "--mca",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="Open MPI parameter for the real runs, repeatable (default: those "
        "stored with the --tables run, so both see the same protocol)",
    )
    where = p.add_argument_group(
        "where (default: this machine; inside a Slurm allocation: srun over it)"
    ).add_mutually_exclusive_group()
    where.add_argument(
        "--vcluster", action="store_true", help="predict: run the placements on the virtual cluster"
    )
    common.option(
        where,
        "--hostfile",
        metavar="FILE",
        help="run on these hosts (NAME, 'NAME slots=N' or 'NAME:N'), by ssh",
    )
    common.option(where, "--hosts", metavar="NAME[:SLOTS],...", help="the hosts, as a list")
    p.add_argument("--json", action="store_true", help="machine-readable output (seconds)")


def _timer_site(args: argparse.Namespace, mpi: mpi_mod.MPIInstall) -> dict[str, Any]:
    """Request fields placing the timer checks on hosts or in this allocation (np included)."""
    import os

    from commscope.measure import hosts, slurm

    if args.vcluster:
        raise UsageError(
            "validate timers --vcluster: give the nodes with --hostfile (on a "
            "'vcluster up --ssh') or run inside a Slurm allocation"
        )
    if args.hostfile or args.hosts:
        placement = hosts.placement_for(mpi, args.hostfile, args.hosts, None, args.np)
        return {"placement": placement.to_json(), "np": placement.nranks}
    if os.environ.get("SLURM_JOB_ID"):
        allocation = slurm.current()
        assert allocation is not None
        return {
            "launcher": "srun",
            "np": args.np or allocation.ntasks,
            "slurm": {**allocation.to_json(), "plugin": slurm.mpi_plugin(mpi)},
        }
    return {}


def _site(
    args: argparse.Namespace,
    mpi: mpi_mod.MPIInstall,
) -> tuple[Any, dict[str, Any]]:
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


def _predict(args: argparse.Namespace) -> int:
    from rich.table import Table

    from commscope import predict
    from commscope.analysis import contention
    from commscope.units import parse_size_list
    from commscope.validate.predict import (
        BUDGET_LAUNCHES,
        MAX_LAUNCHES,
        POINT_BUDGET_S,
        check,
        unpriced_levels,
    )

    common.require(bool(args.tables), "validate predict: give --tables RUN with t(m, cf) tables")
    sizes = parse_size_list(args.sizes, "--sizes")
    mpi = mpi_mod.resolve(args.mpi)
    model, site = _site(args, mpi)
    with common.open_store(args) as store:
        run_id = store.resolve_run(args.tables)
        found = store.contentions(run_id)
        common.require(
            bool(found),
            f"--tables {args.tables}: run {run_id} has no contention "
            "measurements ('commscope run contention' on these nodes first)",
        )
        cost = predict.TableCost.from_tables(contention.tables(found), f"run {run_id}", model)
        missing = unpriced_levels(model, cost, args.procs)
        common.require(
            not missing,
            f"--tables {args.tables}: run {run_id} has no t(m, cf) table"
            f" for the {' and '.join(missing)} level, which placements of"
            f" {args.procs} ranks use; measure it ('commscope run contention"
            " --levels memory,nic' on these nodes)",
        )
        mca = (
            launch.parse_mca(args.mca)
            if args.mca
            else store.get_run(run_id).request.get("mca") or {}
        )
        launch.check_mca(mpi, mca)
        checks, verdicts = check(store, mpi, model, cost, args.procs, sizes, args.block, site, mca)
    if args.json:
        common.print_json(
            {
                "tables_run": run_id,
                "mca": mca,
                "placements": [c.to_json() for c in checks],
                "sizes": [v.to_json() for v in verdicts],
            }
        )
        return 0
    with_mca = "".join(f", --mca {name}={value}" for name, value in mca.items())
    table = Table(
        title=f"block All-to-all, {args.procs} ranks: predicted vs measured "
        f"(tables: run {run_id}{with_mca})"
    )
    for col in ("placement", "bytes", "predicted (ms)", "measured (ms)", "error"):
        table.add_column(col, justify="left" if col == "placement" else "right")
    for c in checks:
        measured = c.measured_s == c.measured_s  # NaN: no valid launch
        table.add_row(
            c.placement,
            str(c.bytes),
            f"{c.predicted_s * 1e3:.3f}",
            f"{c.measured_s * 1e3:.3f}" if measured else "no valid launch",
            f"{c.relative_error:+.0%}" if measured else "",
        )
    out = common.console()
    out.print(table)
    for v in verdicts:
        out.print(
            f"{v.bytes} B: Kendall tau {v.kendall_tau:.2f}, median |error| "
            f"{v.median_relative_error:.0%}"
        )
        if v.unmeasured:
            out.print(
                f"{v.bytes} B: {', '.join(v.unmeasured)}: no valid launch within the"
                f" point's budget ({MAX_LAUNCHES} launches, {POINT_BUDGET_S:g} s or"
                f" {BUDGET_LAUNCHES} predicted launches if longer); left out"
                " of tau and the errors"
            )
    return 0


def run(args: argparse.Namespace) -> int:
    """Run the checks and print a verdict per timer and sync method."""
    if args.what == "predict":
        return _predict(args)
    timers = _names(args.timers, timers_mod.TIMERS, "--timers")
    syncs = _names(args.syncs, timers_mod.SYNCS, "--syncs")
    mpi = mpi_mod.resolve(args.mpi)
    where = _timer_site(args, mpi)
    nranks = where.get("np", args.np or runner.default_ranks())
    with common.open_store(args) as store:
        verdicts = timers_mod.check_timers(
            store, mpi, nranks, timers, syncs, args.tolerance * 1e-6, where
        )
    if args.json:
        common.print_json([v.to_json() for v in verdicts])
        return 0
    from rich.table import Table

    table = Table(
        title=f"timers and clock sync on {nranks} ranks (true: Null 0 us, Up {nranks} us)"
    )
    for col in ("timer", "sync", "Null (us)", "Up (us)", "valid", "clock error (us)", "verdict"):
        table.add_column(col, justify="left" if col in ("timer", "sync", "verdict") else "right")

    def fmt(x: float) -> str:
        return "" if x != x else f"{x * 1e6:.2f}"  # NaN prints empty

    for v in verdicts:
        table.add_row(
            v.timer,
            v.sync,
            fmt(v.null_s),
            fmt(v.up_s),
            f"{v.valid_share:.0%}",
            fmt(v.clock_error_s),
            ("trustworthy: " if v.trustworthy else "NOT trustworthy: ") + v.reason,
        )
    common.console().print(table)
    return 0
