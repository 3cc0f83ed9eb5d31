"""Return to service the nodes commscope drained, once measured again and no longer slow.

A node is a candidate only when it is drained and its reason starts with ``commscope:`` (the
prefix ``run matrix --drain`` writes, :mod:`commscope.jobs.drain`); a node drained for
anything else is never touched. Each candidate is rechecked in a maintenance reservation
(:mod:`commscope.jobs.recheck`) and returned only when not slow; asked not to recheck, it is
returned as it is.

Statuses (:mod:`commscope.status`): OK done or nothing to do; WARNING a node named by the
user was left alone (drained for another reason); CRITICAL a node still slow, drained again;
UNKNOWN outside Slurm, no right to run ``scontrol update``, a named node Slurm does not
know, scontrol refused, a node that could not be rechecked (it stays drained as it was).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from commscope import status
from commscope.errors import CommscopeError, UsageError

if TYPE_CHECKING:
    from commscope.jobs.recheck import RecheckJob

# What undrain did with a node commscope drained; the first two put it back in service.
OUTCOMES = (
    "returned",  # measured, no longer slow
    "returned without a recheck",  # --no-recheck
    "drained again",  # measured, still slow: drained with a reason naming the recheck
    "left drained: not rechecked",  # no partners, no allocation in time: as it was
    "would recheck",
    "would return without a recheck",
)


@dataclass(frozen=True)
class Undrained:
    """What an undrain did (or would do) with each node commscope drained, and what it left.

    Attributes:
        dry_run: True when nothing was changed, only said.
        nodes: each node commscope drained: node, reason (the one commscope wrote),
            rechecked, partners, run (the recheck's), measured (its figure against the
            partners'), outcome (one of :data:`OUTCOMES`), new_reason (drained again),
            command (the scontrol commands, in order).
        left: node, state, reason and why, for named nodes and nodes drained by others.
        problems: why a node could not be rechecked (UNKNOWN).
        status: OK, WARNING (a named node drained for another reason), CRITICAL (a node
            still slow, drained again), UNKNOWN (a node could not be rechecked).
    """

    dry_run: bool
    nodes: list[dict[str, Any]]
    left: list[dict[str, Any]]
    problems: list[str]
    status: int

    def to_json(self) -> dict[str, Any]:
        """The outcome for ``undrain --json``."""
        return {
            "dry_run": self.dry_run,
            "status": self.status,
            "nodes": self.nodes,
            "left": self.left,
            "problems": self.problems,
        }


def undrain(
    nodes: Sequence[str],
    dry_run: bool,
    recheck: RecheckJob | None = None,
    note: Callable[[str], None] | None = None,
) -> Undrained:
    """Return to service the nodes commscope drained (only ``nodes`` when given).

    A node is a candidate only when it is drained and its reason starts with ``commscope:``.
    With ``recheck`` each is measured again first (:mod:`commscope.jobs.recheck`) and
    returned only when not slow; without, it is returned as it is.

    Raises:
        UsageError: a name that is not a node name, or a node Slurm does not know.
        LaunchError: outside Slurm, slurmctld unreachable, no right to change node states,
            scontrol refused.
    """
    from commscope.analysis import drain as drain_analysis
    from commscope.measure import slurm_nodes

    for node in nodes:
        if not slurm_nodes.NODE_NAME.fullmatch(node):
            raise UsageError(  # repr: a control character in a name is shown escaped
                f"node {node[:40]!r} is not a node name (letters, digits,"
                " '.', '-', '_'): give nodes as 'sinfo -N' lists them"
            )
    if dry_run:
        slurm_nodes.require_reachable("undrain")
    else:
        slurm_nodes.require("undrain")
    known = slurm_nodes.nodes()
    unknown = [n for n in nodes if slurm_nodes.find(n, known) is None]
    if unknown:
        raise UsageError(
            f"{unknown[0]} is not a node of this Slurm (sinfo -N lists {len(known)}): give"
            " nodes by the names Slurm gives them"
        )
    named = [slurm_nodes.find(n, known) for n in nodes]
    targets = (
        list(dict.fromkeys(s for s in named if s is not None)) if nodes else list(known.values())
    )
    ours = [t for t in targets if t.drained and drain_analysis.ours(t.reason)]
    out = Undrained(dry_run, [], [], [], status.OK)
    if ours and recheck is not None:
        _rechecked(ours, known, recheck, out, note)
    else:
        for target in ours:
            argv = slurm_nodes.resume_argv(target.name)
            if not dry_run:
                slurm_nodes.resume(target.name)
            done = "would return without a recheck" if dry_run else "returned without a recheck"
            out.nodes.append(_undrain_entry(target, done, command=[argv]))
    outcome = status.OK
    for target in targets:
        if target in ours or not (nodes or target.drained):
            continue
        why = (
            f"drained for {target.reason!r}, not by commscope"
            if target.drained
            else f"not drained ({target.state}): nothing to do"
        )
        out.left.append(
            {"node": target.name, "state": target.state, "reason": target.reason, "why": why}
        )
        if nodes and target.drained:
            outcome = status.WARNING
    if out.problems:
        outcome = status.UNKNOWN
    elif any(n["outcome"] == "drained again" for n in out.nodes):
        outcome = status.CRITICAL
    return replace(out, status=outcome)


def _undrain_entry(target: Any, outcome: str, **more: Any) -> dict[str, Any]:
    """One node commscope drained, and what its undrain did."""
    entry: dict[str, Any] = {
        "node": target.name,
        "reason": target.reason,
        "rechecked": False,
        "partners": [],
        "run": None,
        "measured": None,
        "outcome": outcome,
        "new_reason": None,
        "command": [],
    }
    entry.update(more)
    return entry


def _rechecked(
    targets: Sequence[Any],
    known: dict[str, Any],
    job: RecheckJob,
    out: Undrained,
    note: Callable[[str], None] | None,
) -> None:
    """Recheck each target in a reservation of its own (a dry run: say how)."""
    from commscope.jobs import recheck
    from commscope.measure import slurm_nodes

    held = recheck.held_nodes()
    user = slurm_nodes.current_user()
    for target in targets:
        try:
            p = recheck.plan(target, known, held, job)
        except CommscopeError as err:
            out.problems.append(err.one_line())
            out.nodes.append(_undrain_entry(target, "left drained: not rechecked"))
            continue
        planned = {"partners": list(p.partners), "command": p.commands(user)}
        if out.dry_run:
            steps = list(recheck.describe(p))
            out.nodes.append(_undrain_entry(target, "would recheck", steps=steps, **planned))
            continue
        if note is not None:
            note(f"rechecking {target.name} with {', '.join(p.partners)} in {p.reservation}")
        try:
            done = recheck.recheck(p, job, note)
        except CommscopeError as err:
            out.problems.append(f"{target.name} stays drained, not rechecked: {err.one_line()}")
            out.nodes.append(_undrain_entry(target, "left drained: not rechecked", **planned))
            continue
        v = done.verdict
        entry = _undrain_entry(
            target,
            "drained again" if v.slow else "returned",
            rechecked=True,
            run=done.run_id,
            measured={**v.to_json(), "text": v.text()},
            new_reason=v.reason or None,
            **planned,
        )
        out.nodes.append(entry)
