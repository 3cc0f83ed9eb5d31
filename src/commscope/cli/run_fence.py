"""`commscope run matrix --drain`: drain in Slurm the nodes a matrix names bad.

After a matrix run the bandwidth matrices' node outliers are the suspects, or, when the run
measured them again, the nodes its confirmation round judges bad
(:mod:`commscope.analysis.fence`). Without ``--drain`` the ``scontrol`` commands that would
drain them are printed; with it they are run (:mod:`commscope.measure.fence`), each with the
reason ``commscope: <figure, value against typical, run id>``. A node already drained for
another reason is left as it is.

Exit codes as ``commscope check``: 0 nothing named, 1 a warning (a slow link, which fences no
node, a suspect the confirmation found transient, or a named node an admin had drained
already), 2 nodes drained, 3 unknown (outside
Slurm, no right to run ``scontrol update``, a named node Slurm does not know, scontrol
refused).
"""

from __future__ import annotations

import argparse
import os
import shlex
from dataclasses import dataclass, field
from typing import Any

from commscope.cli import common
from commscope.errors import CommscopeError, UsageError

OK, WARNING, CRITICAL, UNKNOWN = 0, 1, 2, 3


@dataclass
class Fenced:
    """What the fence did (or would do) after one run.

    Attributes:
        run_id: the matrix run.
        drain: True when the commands were run, False when only printed.
        nodes: one entry per suspect: node, reason, command, action.
        links: slow links named alone (no node drained for them).
        spared: suspects the confirmation round did not judge bad (not drained).
        problems: what kept a node from being drained (UNKNOWN).
    """

    run_id: int
    drain: bool
    nodes: list[dict[str, Any]] = field(default_factory=list)
    links: list[str] = field(default_factory=list)
    spared: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    @property
    def status(self) -> int:
        """0 OK, 1 WARNING, 2 CRITICAL (a node drained), 3 UNKNOWN."""
        if self.problems:
            return UNKNOWN
        actions = {n["action"] for n in self.nodes}
        if actions & {"drained", "already drained by commscope"}:
            return CRITICAL
        if self.links or self.spared or actions:
            return WARNING
        return OK

    def to_json(self) -> dict[str, Any]:
        """The fence's outcome for ``run --json``."""
        return {
            "run": self.run_id,
            "drain": self.drain,
            "status": self.status,
            "nodes": self.nodes,
            "links": self.links,
            "spared": self.spared,
            "problems": self.problems,
        }


def add_options(group: Any) -> None:
    """Declare ``--drain`` in the matrix options."""
    group.add_argument(
        "--drain",
        action="store_true",
        help="drain in Slurm each node named slow ('commscope undrain' returns them);"
        " without it the commands are printed; exit 0 none, 1 warning, 2 drained, 3 unknown",
    )


def check(args: argparse.Namespace) -> None:
    """Refuse ``--drain`` where it cannot work, before anything is measured.

    Raises:
        UsageError: --drain with another benchmark than matrix, or on one machine.
        LaunchError: (exit 3) outside Slurm, slurmctld unreachable, or no right to drain.
    """
    from commscope import kinds  # every kind's module, with numpy and rich: not at start

    if not getattr(args, "drain", False):
        return
    if not args.resume and not kinds.benchmark(args.benchmark).drains:
        raise UsageError(
            f"--drain with {args.benchmark}: only the all-pairs matrix names nodes to drain;"
            " run 'commscope run matrix --drain'"
        )
    from commscope.cli import run_where

    across = args.vcluster or run_where.chosen(args) or os.environ.get("SLURM_JOB_ID")
    if not args.resume and not across:
        raise UsageError(
            "--drain on one machine: its ranks are not nodes to drain; run the matrix across"
            " nodes (--slurm, --hostfile, --hosts or --vcluster, or inside an allocation)"
        )
    _unknown(_require)


def _require() -> None:
    from commscope.measure import fence

    fence.require("--drain")


def _unknown(action: Any) -> Any:
    """Run ``action``; a failure of the fence is UNKNOWN (3), as in `commscope check`."""
    try:
        return action()
    except CommscopeError as err:
        err.exit_code = UNKNOWN
        raise


def after(args: argparse.Namespace, store: Any, run_id: int, request: Any) -> Fenced | None:
    """Decide what run ``run_id`` says to fence and, with ``--drain``, drain it.

    None when the run is not a matrix run on real nodes (a simulated one names none) or
    holds no bandwidth matrix.
    """
    from commscope import kinds  # every kind's module, with numpy and rich: not at start

    if not kinds.benchmark(request.benchmark).drains or request.simulate:
        return None
    from commscope.analysis import confirm
    from commscope.analysis import fence as fence_analysis
    from commscope.data.run_data import read_run
    from commscope.kinds import View
    from commscope.kinds import matrix as matrix_kind

    run = read_run(store, run_id)
    summary = matrix_kind.summarize(run, View())
    if summary is None or not any(m.op == "matrix_bw" for m in summary.matrices):
        return None
    found = summary.matrices
    measured_again = any(confirm.round_of(p.pair) for p in run.family("paired"))
    decision = fence_analysis.decide(found, run_id, summary.confirmed if measured_again else None)
    drain = bool(getattr(args, "drain", False))
    fenced = Fenced(run_id, drain, links=list(decision.links), spared=list(decision.spared))
    if drain and len(fence_analysis.hosts(found)) < 2:
        fenced.problems.append(
            f"run {run_id} measured one node (ranks on one machine): nothing to drain; run the"
            " matrix across nodes"
        )
        return fenced
    if not decision.suspects:
        return fenced
    if not drain:
        from commscope.measure import fence

        for s in decision.suspects:
            try:
                argv = fence.drain_argv(s.node, s.reason)
            except CommscopeError as err:
                fenced.problems.append(err.one_line())
                argv = []
            fenced.nodes.append(_entry(s, argv, "printed"))
        return fenced
    _drain(decision, fenced)
    return fenced


def _entry(suspect: Any, argv: list[str], action: str) -> dict[str, Any]:
    return {
        "node": suspect.node,
        "reason": suspect.reason,
        "figures": list(suspect.figures),
        "command": argv,
        "action": action,
    }


def _drain(decision: Any, fenced: Fenced) -> None:
    """Drain each suspect Slurm knows and no one else drained; note what stopped the rest."""
    from commscope.analysis import fence as fence_analysis
    from commscope.measure import fence

    try:
        known = fence.nodes()
    except CommscopeError as err:
        fenced.problems.append(err.one_line())
        return
    for s in decision.suspects:
        node = fence.find(s.node, known)
        if node is None:
            fenced.problems.append(
                f"{s.node} is not a node of this Slurm (sinfo -N lists {len(known)}): drain it"
                " by the name Slurm gives it"
            )
            fenced.nodes.append(_entry(s, [], "not a Slurm node"))
            continue
        try:
            argv = fence.drain_argv(node.name, s.reason)
        except CommscopeError as err:
            fenced.problems.append(err.one_line())
            fenced.nodes.append(_entry(s, [], "failed"))
            continue
        if node.drained:
            action = (
                "already drained by commscope"
                if fence_analysis.ours(node.reason)
                else f"left alone: drained for {node.reason!r}"
            )
            fenced.nodes.append(_entry(s, argv, action))
            continue
        try:
            fence.drain(node.name, s.reason)
        except CommscopeError as err:
            fenced.problems.append(err.one_line())
            fenced.nodes.append(_entry(s, argv, "failed"))
            continue
        fenced.nodes.append(_entry(s, argv, "drained"))


def print_fenced(fenced: Fenced) -> None:
    """The fence's lines after a run's figures."""
    out = common.console()

    def say(text: str) -> None:
        out.print(common.terminal_text(text), markup=False, soft_wrap=True)

    for line in fenced.links:
        say(f"fence: a slow link, no node drained for it: {line}")
    for line in fenced.spared:
        say(f"fence: not drained: {line}")
    for n in fenced.nodes:
        command = shlex.join(n["command"]) if n["command"] else ""
        if n["action"] == "printed":
            say(f"to drain {n['node']} (run with --drain): {command}")
        elif n["action"] == "drained":
            say(f"drained {n['node']}: {command}")
        else:
            say(f"{n['node']}: {n['action']}")
    for problem in fenced.problems:
        say(f"fence: {problem}")
    if fenced.drain and fenced.status == CRITICAL:
        say("return them to service with 'commscope undrain' once they are fixed")
