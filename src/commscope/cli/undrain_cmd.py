"""``commscope undrain``: return to service the nodes commscope drained, and no others.

A node is returned (``scontrol update NodeName=X State=RESUME``) only when it is drained and
its reason starts with ``commscope:``, the prefix ``run matrix --drain`` writes. A node an
admin drained for anything else is never touched, named or not.

Exit codes as ``commscope check``: 0 done or nothing to do, 1 a node named on the command
line was left alone (drained for another reason), 3 unknown (outside Slurm,
slurmctld unreachable, no right to change node states, a node Slurm does not know, scontrol
refused).
"""

from __future__ import annotations

import argparse
import shlex
from typing import Any

from commscope import status
from commscope.cli import common

NAME = "undrain"
HELP = (
    "return to service the nodes 'run matrix --drain' drained (reason 'commscope: ...');"
    " never a node drained for another reason"
)
EXAMPLES = """examples:
  commscope undrain --dry-run       list the nodes commscope drained and the commands to return them
  sudo commscope undrain            return every node drained with a 'commscope:' reason
  sudo commscope undrain csnode3    only csnode3 (left alone if drained for another reason)
  commscope undrain --json          what was returned and what was left alone, as JSON
exit codes: 0 done or nothing to do, 1 a named node drained for another reason (left alone),
            3 unknown (outside Slurm, no right to run scontrol update, an unknown node,
            scontrol refused)"""


def setup_parser(p: argparse.ArgumentParser) -> None:
    """Declare the options of `commscope undrain`."""
    setattr(p, "usage_exit", status.UNKNOWN)  # noqa: B010 - read by cli.OneLineParser.error
    p.add_argument(
        "nodes",
        nargs="*",
        metavar="NODE",
        help="only these nodes (Slurm's names) [default: every node commscope drained]",
    )
    p.add_argument(
        "--dry-run",
        action="store_true",
        help="print the scontrol commands, change nothing",
    )
    p.add_argument("--json", action="store_true", help="print the outcome as JSON")


def run(args: argparse.Namespace) -> int:
    """Return commscope's drained nodes to service; every failure is UNKNOWN (3)."""
    with status.unknown_on_error():
        return _undrain(args)


def _undrain(args: argparse.Namespace) -> int:
    from commscope.analysis import fence as fence_analysis
    from commscope.errors import UsageError
    from commscope.measure import fence

    for node in args.nodes:
        if not fence.NODE_NAME.fullmatch(node):
            raise UsageError(
                f"node {common.terminal_text(node[:40])!r} is not a node name (letters, digits,"
                " '.', '-', '_'): give nodes as 'sinfo -N' lists them"
            )
    if args.dry_run:
        fence.require_reachable("undrain")
    else:
        fence.require("undrain")
    known = fence.nodes()
    unknown = [n for n in args.nodes if fence.find(n, known) is None]
    if unknown:
        raise UsageError(
            f"{unknown[0]} is not a node of this Slurm (sinfo -N lists {len(known)}): give"
            " nodes by the names Slurm gives them"
        )
    named = [fence.find(n, known) for n in args.nodes]
    targets = [s for s in named if s is not None] if args.nodes else list(known.values())
    returned: list[dict[str, Any]] = []
    left: list[dict[str, Any]] = []
    outcome = status.OK
    for node in targets:
        if node.drained and fence_analysis.ours(node.reason):
            argv = fence.resume_argv(node.name)
            if not args.dry_run:
                fence.resume(node.name)
            returned.append({"node": node.name, "reason": node.reason, "command": argv})
        elif args.nodes or node.drained:
            why = (
                f"drained for {node.reason!r}, not by commscope"
                if node.drained
                else f"not drained ({node.state}): nothing to do"
            )
            left.append({"node": node.name, "state": node.state, "reason": node.reason, "why": why})
            if args.nodes and node.drained:
                outcome = status.WARNING
    if args.json:
        common.print_json(
            {"dry_run": args.dry_run, "status": outcome, "returned": returned, "left": left}
        )
        return outcome
    _print(returned, left, args.dry_run)
    return outcome


def _print(returned: list[dict[str, Any]], left: list[dict[str, Any]], dry_run: bool) -> None:
    out = common.console()

    def say(text: str) -> None:
        out.print(common.terminal_text(text), markup=False, soft_wrap=True)

    for r in returned:
        verb = "would run" if dry_run else "returned to service"
        say(f"{verb}: {shlex.join(r['command'])}   (was: {r['reason']})")
    for entry in left:
        say(f"left alone: {entry['node']}, {entry['why']}")
    if not returned:
        say("undrain: no node is drained by commscope; nothing to do")
