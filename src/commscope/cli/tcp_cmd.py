"""``commscope tcp serve``: the server end of the TCP benchmarks (``commscope run tcp``)."""

from __future__ import annotations

import argparse
import sys

from commscope.cli import common
from commscope.errors import UsageError
from commscope.measure import launch
from commscope.measure.tcp import program as prog

NAME = "tcp"
HELP = "serve the TCP-level benchmarks: run this on the peer of 'commscope run tcp'"
EXAMPLES = f"""examples:
  commscope tcp serve                          all addresses, port {prog.DEFAULT_PORT}
  commscope tcp serve --bind 10.0.0.2 --port 6000
  (then on another host: commscope run tcp --peer 10.0.0.2:6000 --sockbuf default,64K,256K)"""
_FOREVER_S = 365 * 24 * 3600.0


def setup_parser(parser: argparse.ArgumentParser) -> None:
    """Add the ``serve`` action."""
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    serve = actions.add_parser(
        "serve",
        help="answer clients one session at a time until Ctrl-C",
        description="Listen for 'commscope run tcp --peer' clients and answer one session"
        " at a time until Ctrl-C.",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    common.option(serve, "--bind", help="address to listen on (default: all)")
    common.option(
        serve,
        "--port",
        type=common.whole(0, 65535),
        default=prog.DEFAULT_PORT,
        help="TCP port (0: any free port, printed)",
    )
    common.option(serve, "--node", help="name this end reports for itself (default: hostname)")


def run(args: argparse.Namespace) -> int:
    """Run the server in the foreground, printing what it does, until interrupted."""
    common.require(0 <= args.port <= 65535, f"--port {args.port}: give 0 .. 65535")
    argv = prog.server_argv(prog.find(), args.bind, args.port, args.node)

    def on_line(line: str) -> None:
        words = line.split()
        if words[:1] == ["listening"] and len(words) == 3:
            where = "all addresses" if words[1] == "*" else words[1]
            print(f"commscope tcp: listening on {where} port {words[2]} (Ctrl-C stops)", flush=True)
        else:
            print(common.terminal_text(f"commscope tcp: {line.strip()}"), flush=True)

    # SIGTERM and SIGHUP stop it as Ctrl-C does: cli.main turns them into interrupts.
    result = launch.run_streaming(launch.Job(argv), on_line, _FOREVER_S)
    lines = [ln for ln in result.stderr.splitlines() if ln.strip()]
    if result.returncode != 0:
        why = (
            lines[-1].removeprefix("commscope-tcp: ")
            if lines
            else f"killed by signal {-result.returncode}"
            if result.returncode < 0
            else f"exit status {result.returncode}"
        )
        raise UsageError(f"the tcp server stopped: {why}")
    for line in lines:  # sessions that ended early are worth knowing, not fatal
        print(common.terminal_text(line), file=sys.stderr)
    return 0
