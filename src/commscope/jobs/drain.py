"""Drain in Slurm the nodes a matrix run names bad (:mod:`commscope.jobs.undrain` returns them).

After a matrix run the bandwidth matrices' node outliers are the suspects, or, when the run
measured them again, the nodes its confirmation round judges bad
(:mod:`commscope.analysis.drain`). Unless asked to drain, :func:`after` only gives the
``scontrol`` commands that would; asked, it runs them (:mod:`commscope.measure.slurm_nodes`),
each with the reason ``commscope: <figure, value against typical, run id>``. A node already
drained for another reason is left as it is.

Statuses (:mod:`commscope.status`). After a drain: OK nothing named; WARNING a slow link
(which drains no node), a suspect the confirmation found transient, or a named node an admin
had drained already; CRITICAL nodes drained; UNKNOWN outside Slurm, no right to run
``scontrol update``, a named node Slurm does not know, scontrol refused.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from commscope import status
from commscope.data.request import RunRequest
from commscope.data.store import Store
from commscope.errors import CommscopeError


@dataclass
class Drained:
    """What the drain did (or would do) after one run.

    Attributes:
        run_id: the matrix run.
        applied: True when the commands were run, False when only shown.
        nodes: one entry per suspect: node, reason, figures, command, action.
        links: slow links named alone (no node drained for them).
        spared: suspects the confirmation round did not judge bad (not drained).
        problems: what kept a node from being drained (UNKNOWN).
    """

    run_id: int
    applied: bool
    nodes: list[dict[str, Any]] = field(default_factory=list)
    links: list[str] = field(default_factory=list)
    spared: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    @property
    def status(self) -> int:
        """OK, WARNING, CRITICAL (a node drained) or UNKNOWN."""
        if self.problems:
            return status.UNKNOWN
        actions = {n["action"] for n in self.nodes}
        if actions & {"drained", "already drained by commscope"}:
            return status.CRITICAL
        if self.links or self.spared or actions:
            return status.WARNING
        return status.OK

    def to_json(self) -> dict[str, Any]:
        """The drain's outcome for ``run --json``."""
        return {
            "run": self.run_id,
            "applied": self.applied,
            "status": self.status,
            "nodes": self.nodes,
            "links": self.links,
            "spared": self.spared,
            "problems": self.problems,
        }


def require_rights() -> None:
    """Slurm answers and this user may drain, checked before anything is measured.

    Raises:
        LaunchError: (UNKNOWN, 3) outside Slurm, slurmctld unreachable, or no right to drain.
    """
    from commscope.measure import slurm_nodes

    with status.unknown_on_error():
        slurm_nodes.require("--drain")


def after(store: Store, run_id: int, request: RunRequest, apply: bool) -> Drained | None:
    """Decide what run ``run_id`` says to drain and, when ``apply``, drain it.

    None when the run is not a matrix run on real nodes (a simulated one names none) or
    holds no bandwidth matrix.
    """
    from commscope import kinds  # every kind's module, with numpy and rich: not at start

    if not kinds.benchmark(request.benchmark).drains or request.simulate:
        return None
    from commscope.analysis import confirm
    from commscope.analysis import drain as drain_analysis
    from commscope.data.run_data import read_run
    from commscope.kinds import View
    from commscope.kinds import matrix as matrix_kind

    run = read_run(store, run_id)
    summary = matrix_kind.summarize(run, View())
    if summary is None or not any(m.op == "matrix_bw" for m in summary.matrices):
        return None
    found = summary.matrices
    measured_again = any(confirm.round_of(p.pair) for p in run.family("paired"))
    decision = drain_analysis.decide(found, run_id, summary.confirmed if measured_again else None)
    drained = Drained(run_id, apply, links=list(decision.links), spared=list(decision.spared))
    if apply and len(drain_analysis.hosts(found)) < 2:
        drained.problems.append(
            f"run {run_id} measured one node (ranks on one machine): nothing to drain; run the"
            " matrix across nodes"
        )
        return drained
    if not decision.suspects:
        return drained
    if not apply:
        from commscope.measure import slurm_nodes

        for s in decision.suspects:
            try:
                argv = slurm_nodes.drain_argv(s.node, s.reason)
            except CommscopeError as err:
                drained.problems.append(err.one_line())
                argv = []
            drained.nodes.append(_entry(s, argv, "printed"))
        return drained
    _drain(decision, drained)
    return drained


def _entry(suspect: Any, argv: list[str], action: str) -> dict[str, Any]:
    return {
        "node": suspect.node,
        "reason": suspect.reason,
        "figures": list(suspect.figures),
        "command": argv,
        "action": action,
    }


def _drain(decision: Any, drained: Drained) -> None:
    """Drain each suspect Slurm knows and no one else drained; note what stopped the rest."""
    from commscope.analysis import drain as drain_analysis
    from commscope.measure import slurm_nodes

    try:
        known = slurm_nodes.nodes()
    except CommscopeError as err:
        drained.problems.append(err.one_line())
        return
    for s in decision.suspects:
        node = slurm_nodes.find(s.node, known)
        if node is None:
            drained.problems.append(
                f"{s.node} is not a node of this Slurm (sinfo -N lists {len(known)}): drain it"
                " by the name Slurm gives it"
            )
            drained.nodes.append(_entry(s, [], "not a Slurm node"))
            continue
        try:
            argv = slurm_nodes.drain_argv(node.name, s.reason)
        except CommscopeError as err:
            drained.problems.append(err.one_line())
            drained.nodes.append(_entry(s, [], "failed"))
            continue
        if node.drained:
            action = (
                "already drained by commscope"
                if drain_analysis.ours(node.reason)
                else f"left alone: drained for {node.reason!r}"
            )
            drained.nodes.append(_entry(s, argv, action))
            continue
        try:
            slurm_nodes.drain(node.name, s.reason)
        except CommscopeError as err:
            drained.problems.append(err.one_line())
            drained.nodes.append(_entry(s, argv, "failed"))
            continue
        drained.nodes.append(_entry(s, argv, "drained"))
