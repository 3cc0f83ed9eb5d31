"""``commscope undrain``: return to service the nodes commscope drained, once they measure well.

A node is a candidate (``scontrol update NodeName=X State=RESUME``) only when it is drained
and its reason starts with ``commscope:``, the prefix ``run matrix --drain`` writes. A node an
admin drained for anything else is never touched, named or not. Each candidate is measured
again first, in a maintenance reservation with healthy partners (:mod:`commscope.jobs.recheck`),
and returned only when it is no longer slow; ``--no-recheck`` returns it unmeasured.

Exit codes as ``commscope check``: 0 done or nothing to do, 1 a node named on the command
line was left alone (drained for another reason), 2 a node still slow (drained again), 3
unknown (outside Slurm, slurmctld unreachable, no right to change node states, a node Slurm
does not know, scontrol refused, a node that could not be rechecked, a usage error, an
interrupt).
"""

from __future__ import annotations

import argparse
import shlex
import sys

from commscope import status
from commscope.cli import common
from commscope.jobs import undrain
from commscope.jobs.where import SLURM_WAIT_S

NAME = "undrain"
HELP = (
    "measure again the nodes 'run matrix --drain' drained (reason 'commscope: ...') and"
    " return those no longer slow; never a node drained for another reason"
)
EXAMPLES = """examples:
  commscope undrain --dry-run         the nodes commscope drained and how each would be rechecked
  commscope undrain                   recheck each in a maintenance reservation; return the repaired
  commscope undrain csnode3           only csnode3 (left alone if drained for another reason)
  commscope undrain --recheck-wait 120   give up on a node Slurm cannot place in 2 minutes
  commscope undrain --no-recheck csnode3   return it unmeasured (known to be fixed)
  commscope undrain --json            per node: rechecked, its figure against partners, outcome
exit codes: 0 done or nothing to do, 1 a named node drained for another reason (left alone),
            2 a node still slow (drained again, with what was measured), 3 unknown (outside
            Slurm, no right to run scontrol, an unknown node, a node not rechecked)
who may: root, the SlurmUser, or a user of Slurm's Administrator level (sacctmgr modify user
         NAME set adminlevel=administrator); not Operator. Under sudo give --store."""


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
        help="say how each node would be rechecked (partners, scontrol commands); change nothing",
    )
    p.add_argument(
        "--no-recheck",
        action="store_true",
        help="return the nodes without measuring them again (for a node known to be fixed)",
    )
    p.add_argument(
        "--recheck-wait",
        type=common.whole(1, 7 * 24 * 3600),
        default=SLURM_WAIT_S,
        metavar="SECONDS",
        help="the longest Slurm may take to grant a recheck's allocation; a node it does not"
        " place in time stays drained (exit 3) [default: %(default)s]",
    )
    p.add_argument("--json", action="store_true", help="print the outcome as JSON")


def run(args: argparse.Namespace) -> int:
    """Recheck and return commscope's drained nodes; every failure is UNKNOWN (3)."""
    from commscope.jobs import recheck  # numpy, with the analysis: not at start

    job = None if args.no_recheck else recheck.RecheckJob(args.store, args.recheck_wait)
    note = None if args.json else _note
    with status.unknown_on_error():
        outcome = undrain.undrain(args.nodes, args.dry_run, job, note)
    if args.json:
        common.print_json(outcome.to_json())
        return outcome.status
    _print(outcome)
    return outcome.status


def _note(text: str) -> None:
    print(common.terminal_text(f"commscope undrain: {text}"), file=sys.stderr, flush=True)


def _print(outcome: undrain.Undrained) -> None:
    out = common.console()

    def say(text: str) -> None:
        out.print(common.terminal_text(text), markup=False, soft_wrap=True)

    for n in outcome.nodes:
        node, done = n["node"], n["outcome"]
        if done == "would recheck":
            say(f"would recheck {node} (was: {n['reason']}):")
            for step, argv in zip(n["steps"], n["command"], strict=True):
                say(f"  {step}: {shlex.join(argv)}")
        elif done in ("would return without a recheck", "returned without a recheck"):
            verb = "would run" if outcome.dry_run else "returned to service without a recheck"
            say(f"{verb}: {shlex.join(n['command'][0])}   (was: {n['reason']})")
        elif done == "returned":
            say(
                f"returned to service: {node}, rechecked in run {n['run']}: {n['measured']['text']}"
            )
        elif done == "drained again":
            say(f"still slow, drained again: {node}: {n['new_reason']}")
        else:
            say(f"left drained: {node}, not rechecked (was: {n['reason']})")
    for problem in outcome.problems:
        say(f"problem: {problem}")
    for entry in outcome.left:
        say(f"left alone: {entry['node']}, {entry['why']}")
    if not outcome.nodes:
        say("undrain: no node is drained by commscope; nothing to do")
