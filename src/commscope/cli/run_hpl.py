"""``commscope run hpl``: HPL measured on real hosts, the same HPL `simulate hpl` runs on a model.

HPC Challenge's HPL is built with the chosen MPI's mpicc (the recipe, sources, flags and
reference BLAS of ``measure.hpl``; cached by digest and MPI), then solves one system per
process grid (and repeat) on this machine, on named hosts or across the virtual cluster.
Each solve is stored as a run of kind ``hpl`` like a simulated one, marked ``measured``,
with its hosts and MPI, so `show` and the report read both the same way.
"""

from __future__ import annotations

import argparse
import math
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from commscope.cli import common, program_runs
from commscope.errors import CommscopeError, LaunchError, UsageError
from commscope.kinds import run_commands

DEFAULT_N = 2000
DEFAULT_NB = 128
DEFAULT_GRID = "1x2"


def add_options(p: argparse.ArgumentParser) -> None:
    """Declare the options only `commscope run hpl` uses.

    It also reads --mpi, --np, the host options, --ranks-per-node, --vcluster, --timeout,
    --label and --json.
    """
    g = p.add_argument_group("what to measure (HPC Challenge's HPL, built with the MPI's mpicc)")
    program_runs.add_matrix_order(g, DEFAULT_N)
    common.option(
        g, "--nb", type=common.whole(1, 4096), default=DEFAULT_NB, help="block size (HPL's NB)"
    )
    common.option(g, "--grid", default=DEFAULT_GRID, help="process grids PxQ[,PxQ...], a run each")
    common.option(
        g,
        "--repeats",
        dest="repeat",
        metavar="N",
        type=common.whole(1, 100),
        default=1,
        help="solves per grid, each its own run (their spread: run-to-run noise)",
    )
    common.option(
        g,
        "--source",
        env="COMMSCOPE_HPL_SOURCE",
        metavar="PATH",
        help="HPC Challenge 1.5.0 source, tarball or tree (apt-get source hpcc)",
    )


def wanted(args: argparse.Namespace) -> bool:
    """Whether `commscope run` should hand this invocation to HPL."""
    return run_commands.measured_by(getattr(args, "benchmark", None)) == run_commands.WHOLE_PROGRAM


def _refuse_others(args: argparse.Namespace) -> None:
    for flag, given in (
        ("--resume", args.resume),
        ("--mca", args.mca),
        ("--cvar", args.cvar),
        ("--report", args.report),
    ):
        if given:
            raise UsageError(
                f"{flag}: run hpl does not take it (each solve is a whole run; hosts come from"
                " --hosts, --hostfile, --slurm or --vcluster); drop it"
            )


def _where(args: argparse.Namespace, mpi: Any, nranks: int, steps: Any = None) -> Any:
    from commscope.measure import hosts as hosts_mod
    from commscope.measure import program

    if steps is not None:
        return program.Where(slurm=steps)
    if args.vcluster:
        return program.Where(vcluster_ranks_per_node=args.ranks_per_node or 1)
    if args.hostfile or args.hosts:
        placement = hosts_mod.placement_for(
            mpi, args.hostfile, args.hosts, args.ranks_per_node, nranks
        )
        return program.Where(placement=placement)
    return program.Where()


def _hosts(where: Any, nranks: int) -> tuple[list[str], dict[str, Any] | None]:
    """The hosts the ranks ran on, in order, and the virtual cluster's rate when there."""
    if where.vcluster_ranks_per_node:
        from commscope.measure import vcluster

        state = vcluster.status()
        if state is None:
            raise LaunchError("no virtual cluster is up; run 'commscope vcluster up' first")
        nodes = [n.name for n in state.nodes[: where.nodes_for(nranks)]]
        return nodes, {"nodes": len(nodes), "rate": state.rate}
    return where.hosts(nranks) or [socket.gethostname()], None


@contextmanager
def _slurm_steps(args: argparse.Namespace, mpi: Any, most_ranks: int) -> Iterator[Any]:
    """The solves' srun steps when the run uses Slurm (None when it does not).

    --slurm allocates --nodes (default: enough for the largest grid) x --ranks-per-node
    (default 1); inside an allocation its tasks are spread evenly over its nodes.
    """
    from commscope.cli import run_where
    from commscope.jobs import where as where_mod
    from commscope.measure import program

    where = run_where.where(args)
    if not where_mod.uses_slurm(where, where.launcher):
        yield None
        return
    per_node = args.ranks_per_node or 1
    nodes = args.nodes or math.ceil(most_ranks / per_node)
    with where_mod.allocation(where, mpi, nodes, most_ranks) as (held, plugin):
        if not args.slurm and not args.ranks_per_node:
            per_node = max(1, held.ntasks // max(1, len(held.nodes)))
        yield program.SlurmSteps({**held.to_json(), "plugin": plugin}, per_node)


def run(args: argparse.Namespace) -> int:
    """Build HPL with the MPI's mpicc, solve once per grid and repeat, store each as a run."""
    from commscope.cli import run_where
    from commscope.jobs import where as where_mod
    from commscope.measure import hpl, program
    from commscope.measure import mpi as mpi_mod

    _refuse_others(args)
    where_mod.check(run_where.where(args))
    grids = hpl.parse_grids(args.grid, args.np)
    common.require(bool(args.source), f"--source: missing; {hpl.SOURCE_HINT}")
    common.require(
        args.nb <= args.n, f"--nb {args.nb}: larger than --matrix-order {args.n}; give NB <= N"
    )
    mpi = mpi_mod.resolve(args.mpi)
    # Hosts are checked before the build; an allocation is made after it (idle nodes wait).
    early = {(p, q): _where(args, mpi, p * q) for p, q in grids if not args.slurm}
    binary = hpl.build(Path(args.source), mpi.mpicc, mpi.tag)
    most = max(p * q for p, q in grids)
    rows: list[dict[str, Any]] = []
    with _slurm_steps(args, mpi, most) as steps, common.open_store(args) as store:
        places = {g: _where(args, mpi, g[0] * g[1], steps) for g in grids} if steps else early
        jobs = {g: program.job(mpi, g[0] * g[1], [str(binary)], w) for g, w in places.items()}
        try:
            for (p, q), where in places.items():
                for solve in range(args.repeat):
                    rows.append(_stored_solve(args, store, mpi, jobs[(p, q)], where, p, q, solve))
        except (KeyboardInterrupt, CommscopeError) as err:
            hpl.add_what_was_lost(err, rows, grids, args.repeat)
            raise
    program_runs.show_runs(args, rows, ("gflops", "passed", "hpl_time_s", "wall_s"), "measured")
    return 0 if all(r["passed"] for r in rows) else 1


def _stored_solve(
    args: argparse.Namespace, store: Any, mpi: Any, job: Any, where: Any, p: int, q: int, solve: int
) -> dict[str, Any]:
    """Solve once on the ``p`` x ``q`` grid and store it as a complete run; its row."""
    from commscope.measure import hpl

    hosts, vc = _hosts(where, p * q)
    label = " ".join(x for x in (args.label, f"{p}x{q}") if x)
    what = {"kind": program_runs.HPL, "label": label, "grid": f"{p}x{q}", "measured": True}
    measured = {
        "n": args.n,
        "nb": args.nb,
        "hosts": hosts,
        "vcluster": vc,
        "solve": solve + 1,
        **where.to_json(p * q),
    }
    data = hpl.solve(job, args.n, args.nb, p, q, args.timeout, mpi.tag)
    rid = store.create_run(
        program_runs.HPL,
        label,
        mpi.tag,
        "srun" if where.slurm else mpi.launcher,
        p * q,
        {"benchmark": program_runs.HPL, "np": p * q, "what": what, "measured": measured},
    )
    data = {**what, **measured, "mpi": mpi.tag, **data}
    store.set_run_data(rid, program_runs.HPL, data)
    store.set_run_status(rid, "complete")
    if not data["passed"]:
        common.console(stderr=True).print(f"run {rid}: HPL's residual check FAILED on {p}x{q}")
    return {"run": rid, "sweep": "", **data}
