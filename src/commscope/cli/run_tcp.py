"""``commscope run tcp``: ping-pong and stream over plain TCP, one run per socket buffer size.

León Carri et al. 2005 (Beowulf network performance) measure the network below MPI (NetPIPE's
TCP ping-pong, socket buffers swept) to tell the network's limits from the MPI library's;
Rechistov et al. 2012 (cluster simulation) validate a link with both directions streaming
exponentially sized messages. Each socket buffer size is a run of its own (kind "tcp",
labelled with the size), so `commscope compare` and `commscope report` put sizes, TCP and MPI
runs side by side.
"""

from __future__ import annotations

import argparse
import os
from typing import TYPE_CHECKING, Any

from commscope import limits
from commscope.cli import common, run_outcome
from commscope.data.store import Store
from commscope.errors import UsageError
from commscope.jobs import programs
from commscope.kinds import run_commands
from commscope.measure.tcp import program as prog
from commscope.units import netpipe_schedule, parse_size, parse_size_list, sockbuf_text

KIND = "tcp"  # the kind these runs are stored as (kinds/tcp.py shows them)

if TYPE_CHECKING:
    from commscope.kinds import tcp as tcp_render

MODES = ("pingpong", "stream", "both")


def add_options(p: argparse.ArgumentParser) -> None:
    """Declare the options only `commscope run tcp` uses.

    It also reads --sizes, --max-size, --perturbation, --warmup, --min/max-samples,
    --target-rse, --point-budget, --vcluster, --timeout, --label, --json and --quiet.
    """
    tcp = p.add_argument_group(
        "the TCP peer and stream (as in León Carri et al. 2005 and Rechistov et al. 2012)"
    )
    common.option(
        tcp,
        "--peer",
        env="COMMSCOPE_TCP_PEER",
        help=f"HOST[:PORT] running 'commscope tcp serve' (port {prog.DEFAULT_PORT})",
    )
    tcp.add_argument(
        "--loopback",
        action="store_true",
        help="start a server on 127.0.0.1 and measure the loopback path",
    )
    common.option(
        tcp,
        "--tcp-mode",
        default="pingpong",
        choices=MODES,
        help="ping-pong over the size schedule, the bidirectional stream, or both",
    )
    common.option(
        tcp,
        "--sockbuf",
        default="default",
        help="socket buffer sizes to sweep, one run each, e.g. default,16K,64K,256K",
    )
    common.option(
        tcp,
        "--duration",
        type=common.number(0, limits.MAX_COMMAND_S, above=True),
        default=10.0,
        help="stream: seconds both directions send",
    )
    common.option(
        tcp,
        "--mean-size",
        default="2000",
        help="stream: mean of the exponential message size distribution",
    )
    common.option(
        tcp,
        "--max-message",
        default="16000",
        help="stream: largest message (larger draws are drawn again)",
    )
    common.option(
        tcp, "--seed", type=common.whole(0, 2**32 - 1), default=1, help="stream: random seed"
    )


def wanted(args: argparse.Namespace) -> bool:
    """Whether `commscope run` should hand this invocation to the TCP benchmarks."""
    if run_commands.measured_by(getattr(args, "benchmark", None)) == run_commands.TCP_PROGRAM:
        return True
    if not getattr(args, "resume", None):
        return False
    with common.open_store(args) as store:
        kind = store.get_run(store.resolve_run(args.resume)).kind
        return run_commands.measured_by(kind) == run_commands.TCP_PROGRAM


def _sizes(args: argparse.Namespace) -> list[int]:
    if args.sizes is not None:
        sizes = parse_size_list(args.sizes, "--sizes")
    else:
        sizes = netpipe_schedule(parse_size(args.max_size, "--max-size"), args.perturbation)
    sizes = [s for s in sizes if s > 0]  # a TCP stream cannot carry an empty message
    common.require(bool(sizes), "--sizes: a TCP ping-pong needs sizes of 1 byte or more")
    common.require(sizes[-1] <= 1 << 30, "--sizes: messages of at most 1 GiB")
    return sizes


def _where(args: argparse.Namespace) -> dict[str, Any]:
    given = [
        flag
        for flag, on in (
            ("--peer", args.peer),
            ("--loopback", args.loopback),
            ("--vcluster", args.vcluster),
        )
        if on
    ]
    common.require(
        len(given) == 1,
        "run tcp: give exactly one of --peer HOST[:PORT], "
        f"--loopback or --vcluster (got {', '.join(given) or 'none'})",
    )
    if args.peer:
        host, port = prog.parse_peer(args.peer)
        return {"kind": "peer", "host": host, "port": port}
    if args.loopback:
        return {"kind": "loopback"}
    from commscope.measure import vcluster

    state = vcluster.status()
    if state is None or not state.healthy or len(state.nodes) < 2:
        raise UsageError(
            "--vcluster: no healthy virtual cluster of 2 or more nodes; run "
            "'commscope vcluster up --nodes 2' as root first"
        )
    return {
        "kind": "vcluster",
        "nodes": len(state.nodes),
        "rate": state.rate,
        "subnet": state.subnet,
    }


def requests(args: argparse.Namespace) -> list[tuple[str, dict[str, Any]]]:
    """(label, request) per socket buffer size; bad input fails here, before the store."""
    common.require(args.max_samples >= args.min_samples, "--max-samples must be >= --min-samples")
    mean = parse_size(args.mean_size, "--mean-size")
    top = parse_size(args.max_message, "--max-message")
    common.require(
        1 <= mean <= top <= 1 << 30,
        f"--mean-size {args.mean_size} --max-message {args.max_message}: need "
        "1 <= mean <= max <= 1 GiB",
    )
    options: dict[str, Any] = {
        "mode": args.tcp_mode,
        "warmup": args.warmup,
        "min_samples": args.min_samples,
        "max_samples": args.max_samples,
        "target_rse": args.target_rse,
        "point_budget_s": args.point_budget_s,
        "duration_s": args.duration,
        "mean_bytes": mean,
        "max_bytes": top,
        "seed": args.seed,
    }
    if args.tcp_mode != "stream":
        options["sizes"] = _sizes(args)
    where = _where(args)
    out = []
    for sockbuf in prog.parse_sockbufs(args.sockbuf):
        label = f"{args.label or 'tcp'} sockbuf={sockbuf_text(sockbuf)}"
        request = {
            "benchmark": KIND,
            "timeout_s": args.timeout,
            "where": where,
            "tcp": dict(options, sockbuf=sockbuf),
        }
        out.append((label, request))
    return out


def _load(store: Store, run_id: int) -> tcp_render.TcpRun:
    from commscope.kinds import tcp as tcp_render

    return tcp_render.TcpRun(store.get_run(run_id), store.points(run_id), store.streams(run_id))


def run(args: argparse.Namespace) -> int:
    """Measure every requested socket buffer size (or resume one run) and print the figures."""
    # numpy and SciPy come with the rendering: imported when the command runs, not at start.
    from commscope.kinds import tcp as tcp_render

    planned = [] if args.resume else requests(args)
    quiet = args.quiet or args.json
    with run_outcome.progress_bar(quiet) as (progress, _):
        ids = programs.tcp_runs(args.store, KIND, planned, args.resume, progress)
    with common.open_store(args, write=False) as store:
        done = [_load(store, run_id) for run_id in ids]
    if args.json:
        common.print_json(
            {"runs": [tcp_render.run_json(r) for r in done], "store": os.path.abspath(args.store)}
        )
        return 0
    out = common.console()
    for role in ("client", "server"):
        if role in done[0].ends:
            out.print(f"{role} {tcp_render.end_text(done[0].ends[role])}")
    for item in tcp_render.summary_view(done):
        out.print(item)
    shown = " ".join(str(r.info.id) for r in done)
    out.print(
        f"stored in {args.store} as run {shown}; compare them with 'commscope compare {shown}'"
        if len(done) > 1
        else f"stored in {args.store} as run {shown}; details: commscope show {shown}"
    )
    return 0
