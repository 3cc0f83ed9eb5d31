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

from commscope import status
from commscope.cli import common
from commscope.jobs import drain

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
        outcome = drain.undrain(args.nodes, args.dry_run)
    if args.json:
        common.print_json(outcome.to_json())
        return outcome.status
    _print(outcome)
    return outcome.status


def _print(outcome: drain.Undrained) -> None:
    out = common.console()

    def say(text: str) -> None:
        out.print(common.terminal_text(text), markup=False, soft_wrap=True)

    for r in outcome.returned:
        verb = "would run" if outcome.dry_run else "returned to service"
        say(f"{verb}: {shlex.join(r['command'])}   (was: {r['reason']})")
    for entry in outcome.left:
        say(f"left alone: {entry['node']}, {entry['why']}")
    if not outcome.returned:
        say("undrain: no node is drained by commscope; nothing to do")
