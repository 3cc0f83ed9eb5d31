"""The stored request of `commscope run` from its options: operations, sizes, engine options."""

from __future__ import annotations

import argparse
import os
from typing import Any

from commscope.cli import common, run_matrix, run_mbw, run_options
from commscope.data.request import EngineOptions, RunRequest
from commscope.errors import InputError, UsageError
from commscope.kinds.run_commands import COLL_OPS, COLL_SIZES, CONTENTION_SIZES, P2P_OPS, RMA_OPS
from commscope.measure import cvars, engine_options, launch, runner
from commscope.units import netpipe_schedule, parse_size, parse_size_list

RMA_SIZES = "8,64,512,4K,32K,256K,1MiB"
DEFAULT_TIMEOUT_S = 3600.0  # the longest a run waits for its job unless --timeout says more
START_S = 300.0  # a job's start (mpirun, ssh, the engine) and its end, at most
POINT_S = 20.0  # a point, at most (a busy machine's 4 MiB bibw takes a few seconds)
REDUCTIONS = ("reduce", "allreduce", "reduce_scatter", "reduce_scatter_block", "scan", "exscan")


def _alone(args: argparse.Namespace, name: str) -> bool:
    """Whether the run measures benchmark ``name`` alone: --ops and --sizes are then its own."""
    return bool(args.benchmark == name)


def _p2p_sizes(args: argparse.Namespace) -> list[int]:
    if args.sizes is not None and _alone(args, "p2p"):
        return parse_size_list(args.sizes, "--sizes")
    return netpipe_schedule(parse_size(args.max_size, "--max-size"), args.perturbation)


def _loggp_sizes(args: argparse.Namespace) -> list[int]:
    """LogGP sizes: --sizes for 'run loggp', else the NetPIPE bases without perturbation."""
    if args.sizes is not None and _alone(args, "loggp"):
        return parse_size_list(args.sizes, "--sizes")
    return netpipe_schedule(parse_size(args.max_size, "--max-size"), 0)


def _coll_sizes(args: argparse.Namespace, ops: list[str]) -> list[int]:
    given = args.sizes is not None and _alone(args, "coll")
    sizes = parse_size_list(args.sizes if given else COLL_SIZES, "--sizes")
    odd = [s for s in sizes if s % 8]
    if odd and any(op.removeprefix("i").removesuffix("_init") in REDUCTIONS for op in ops):
        raise UsageError(
            f"--sizes {args.sizes}: reductions sum doubles, so sizes must be "
            f"multiples of 8 ({odd[0]} is not)"
        )
    return sizes


def _levels(args: argparse.Namespace) -> str:
    """Requested contention levels; 'auto' keeps those the allocation can express."""
    requested: str = args.levels
    if requested != "auto":
        engine_options.check_value(engine_options.spec("levels"), requested)
        return requested
    several_nodes = (
        args.vcluster or args.hostfile or args.hosts or args.slurm or os.environ.get("SLURM_JOB_ID")
    )
    return "memory,nic" if several_nodes else "memory"


def _rma_options(args: argparse.Namespace) -> dict[str, Any]:
    """One-sided: --ops picks put/get/acc, the p2p pairs and sampling options apply."""
    rma_ops = ",".join(op.strip() for op in (args.ops or RMA_OPS).split(","))
    items = rma_ops.split(",")
    if not set(items) <= set(RMA_OPS.split(",")) or len(set(items)) < len(items):
        raise UsageError(f"--ops {args.ops}: rma measures {RMA_OPS}; give a list of those")
    sizes = parse_size_list(args.sizes or RMA_SIZES, "--sizes")
    odd = [s for s in sizes if s % 8]
    if odd and "acc" in rma_ops.split(","):
        raise UsageError(
            f"--sizes {args.sizes}: acc sums doubles, so sizes must be multiples of 8"
            f" ({odd[0]} is not); drop acc from --ops or round the sizes"
        )
    out = {k: v for k, v in run_options.values(args, "p2p").items() if k != "recv_buffers"}
    out.update(run_options.values(args, "rma"), rma_ops=rma_ops, sizes=tuple(sizes))
    if args.check:  # the option verifies results once per point, as for collectives
        out["check"] = 1
    return out


# The pairs p2p and loggp measure (engine/src/topo.c, cs_pairs_choose): "auto" or a list.
P2P_PAIRS = ("intra-socket", "inter-socket", "intra-node", "inter-node")


def check_p2p_pairs(text: str) -> None:
    """Refuse a p2p --pairs the engine would find no pair in, before a run is stored.

    Raises:
        InputError: neither ``auto`` nor a comma list of :data:`P2P_PAIRS`, each once.
    """
    items = text.split(",")
    if text == "auto" or (set(items) <= set(P2P_PAIRS) and len(set(items)) == len(items)):
        return
    raise InputError(
        f"--pairs {common.terminal_text(repr(text[:60]))}: give auto or a comma list of"
        f" {', '.join(P2P_PAIRS)} (each once, no spaces)"
    )


def paired_ranks_per_node(args: argparse.Namespace) -> int:
    """Matrix and bisection ranks per node: one, or one per socket of this machine.

    Hosts with other socket counts take --ranks-per-node; the engine refuses more ranks on a
    node than it has sockets.
    """
    return runner.sockets_here() if getattr(args, "matrix_per", None) == "socket" else 1


def build_request(args: argparse.Namespace) -> RunRequest:
    """The stored request of an MPI run from its options; bad input fails here."""
    from commscope import kinds  # every kind's module, with numpy and rich: not at start

    run_options.check_given(args)
    if args.sizes is not None:  # checked even where the benchmark does not use them
        parse_size_list(args.sizes, "--sizes")
    engine: dict[str, Any] = {}
    ops: list[str] = []
    if kinds.measures(args.benchmark, "p2p"):
        ops += (args.ops if _alone(args, "p2p") and args.ops else P2P_OPS).split(",")
        engine["sizes"] = tuple(_p2p_sizes(args))
        engine.update(run_options.values(args, "p2p"))
    if kinds.measures(args.benchmark, "loggp"):
        # Netgauge's PRTT(n, d, s) and overheads; a few seconds, so part of 'all'.
        ops.append("loggp")
        engine["loggp_sizes"] = tuple(_loggp_sizes(args))
        engine.update(run_options.values(args, "loggp"))
    if kinds.measures(args.benchmark, "coll"):
        coll_ops = (args.ops if _alone(args, "coll") and args.ops else COLL_OPS).split(",")
        ops += coll_ops
        engine["coll_sizes"] = tuple(_coll_sizes(args, coll_ops))
        engine.setdefault("sizes", engine["coll_sizes"])
        engine.update(run_options.values(args, "coll"))
    if kinds.measures(args.benchmark, "rma"):
        ops.append("rma")
        engine.update(_rma_options(args))
    if kinds.measures(args.benchmark, "contention"):
        ops.append("contention")
        sizes = parse_size_list(CONTENTION_SIZES if args.sizes is None else args.sizes, "--sizes")
        engine.update(sizes=tuple(sizes), coll_sizes=tuple(sizes), levels=_levels(args), pin=1)
        engine.update(run_options.values(args, "contention"))
    if kinds.benchmark(args.benchmark).paired:
        ops.append(args.benchmark)
        if args.sizes is not None:
            engine["matrix_sizes"] = tuple(parse_size_list(args.sizes, "--sizes"))
        engine.update(run_options.values(args, args.benchmark))
        plan = run_matrix.engine_plan(args) if kinds.measures(args.benchmark, "matrix") else None
        if plan:
            engine["matrix_plan"] = plan
    if kinds.measures(args.benchmark, "mbw"):
        ops.append("mbw")
        engine.update(run_mbw.engine_part(args))
    if "pairs" in engine:  # p2p's and loggp's: a list of levels, unlike a matrix's --pairs
        check_p2p_pairs(str(engine["pairs"]))
    engine["ops"] = ",".join(ops) or None  # none for tcp and node: simulate refuses them next
    request = RunRequest(
        benchmark=args.benchmark,
        mpi=args.mpi,
        np=args.np
        or (
            paired_ranks_per_node(args)
            if kinds.benchmark(args.benchmark).paired
            else runner.default_ranks()
        ),
        launcher=args.launcher,
        timeout_s=args.timeout if args.timeout is not None else DEFAULT_TIMEOUT_S,
        confidence=args.confidence,
        mca=launch.parse_mca(args.mca) if args.mca else None,
        cvar=cvars.parse(args.cvar) if args.cvar else None,
    )
    if args.vcluster:
        from commscope.measure import vcluster

        state = vcluster.status()
        if state is None or not state.healthy:
            raise UsageError(
                "--vcluster: no virtual cluster is up; run 'commscope vcluster up "
                "--nodes 2' as root first"
            )
        one_per_node = kinds.benchmark(args.benchmark).paired
        ranks_per_node = args.ranks_per_node or (paired_ranks_per_node(args) if one_per_node else 2)
        nranks = len(state.nodes) * ranks_per_node
        if args.np is not None and args.np != nranks:
            # A run takes every node: a different --np would be dropped without a word.
            raise UsageError(
                f"--np {args.np}: a vcluster run takes every node, {len(state.nodes)} nodes x"
                f" {ranks_per_node} ranks per node = {nranks} ranks; drop --np, or set"
                " --ranks-per-node or the vcluster's node count to match"
            )
        # The nodes share this machine's cores: pin each rank to its own core within its node
        # (rotated by node index), or two measuring ranks may share one core.
        engine["pin"] = 1
        shape: dict[str, Any] = {}  # recorded only where the cluster is not one flat switch
        if state.switches > 1:
            shape.update(switches=state.switches, uplink_rate=state.uplink_rate)
        if any(n.rate for n in state.nodes):
            shape["node_rates"] = {n.name: n.rate for n in state.nodes if n.rate}
        request = request.replace(
            np=nranks,
            vcluster={
                "nodes": len(state.nodes),
                "ranks_per_node": ranks_per_node,
                "rate": state.rate,
                "subnet": state.subnet,
                **shape,
            },
        )
    elif getattr(args, "slurm", False) and args.np is None:
        # The allocation's ranks: --nodes x --ranks-per-node, 2 nodes unless said; a node
        # list without --nodes is counted when Slurm expands it.
        nodes = args.nodes or (0 if args.nodelist else 2)
        request = request.replace(np=nodes * (args.ranks_per_node or 1) or max(request.np, 2))
    if kinds.benchmark(args.benchmark).paired and request.np < 2:
        raise UsageError(
            f"--np {request.np}: {args.benchmark} pairs ranks, so it needs at least 2; "
            "give --np 2 or more, or run on 2 or more nodes"
        )
    if kinds.measures(args.benchmark, "mbw"):
        run_mbw.pair_steps(engine.get("mbw_pairs", "auto"), request.np)
    options = EngineOptions(**engine)
    engine_options.check(options)
    common.require(args.root < request.np, f"--root {args.root}: not a rank")
    if options.procs:  # each collective on the first P ranks, for every P
        found = engine_options.procs(options.procs, request.np)
        options = options.replace(procs=",".join(map(str, found)))
    if args.timeout is None:
        request = request.replace(timeout_s=fitted_timeout(options, request.np))
    return request.replace(engine=options)


def fitted_timeout(options: EngineOptions, nranks: int, pairs: int = 3) -> float:
    """The default --timeout of a request: its start, then each expected point, at most 1 h.

    ``pairs``: the p2p pairs the engine may measure (intra-socket, inter-socket and
    inter-node at most). Points are counted as the progress bar counts them; a request whose
    count is not known ahead gets :data:`DEFAULT_TIMEOUT_S`.
    """
    points = engine_options.expected_points(options, pairs, nranks)
    if points is None:
        return DEFAULT_TIMEOUT_S
    return min(DEFAULT_TIMEOUT_S, START_S + POINT_S * points)
