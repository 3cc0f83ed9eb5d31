"""Whether a drained node measured again against healthy partners is repaired or still slow.

``commscope undrain`` measures the all-pairs matrix of the node and a few healthy partners,
with the matrix's confirmation rounds, and judges it here exactly as a matrix run judges a
node before draining it (:func:`commscope.analysis.drain.decide`): the node is still slow
when the drain decision of that run names it (with a confirmation: the rounds judged it bad
against its partners, each round against reference pairs between partners measured beside
it); otherwise it is repaired. So a node returns to service by the same test that would
drain it, and the assumptions are the matrix's (:mod:`commscope.analysis.matrix`,
:mod:`commscope.analysis.confirm`): the partners are healthy, and a slow node is slow in
every round. Only bandwidth is judged (:data:`OPS`), as only bandwidth drains: on shared
cores the latency matrix names links that follow the scheduling, and their ends would no
longer count as healthy partners (measured on the virtual cluster: two latency links on 4
nodes left the slow node with no partner, and a confirmation of 0 pairs). A verdict with
nothing measured is none (:attr:`Verdict.judged`): the node stays drained.

The figure shown is the bandwidth the drain decision uses: from the confirmation when it
measured the node (its pairs with partners against the reference pairs), else from the first
pass at the largest size: the median of the node's links (both ways) against the median of
the partners' links among themselves, the medians robust to one disturbed pair.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from commscope.analysis import drain as drain_analysis
from commscope.analysis.confirm import Confirmation
from commscope.analysis.matrix import Matrix
from commscope.units import size_text

OPS = ("matrix_bw",)  # what a node is drained for, so what a recheck judges


@dataclass(frozen=True)
class Verdict:
    """A rechecked node: still slow or not, and the figure that says so.

    Attributes:
        node: the node (Slurm's name).
        slow: True when the run's drain decision names it.
        op, bytes: the figure (``matrix_bw`` at a size).
        value: the node's bandwidth with its partners (B/s; NaN when not measured).
        typical: the partners' bandwidth among themselves (B/s; NaN when not measured).
        pairs, slow_pairs: confirmation pairs with partners measured and slow (0: first pass).
        reason: the new drain reason when still slow (starts with ``commscope:``), else "".
        judged: False when the run holds no link of the node, or the first pass named it and
            the confirmation measured none of its pairs: no verdict, whatever ``slow`` says.
    """

    node: str
    slow: bool
    op: str
    bytes: int
    value: float
    typical: float
    pairs: int = 0
    slow_pairs: int = 0
    reason: str = ""
    judged: bool = True

    def text(self) -> str:
        """One line: the figure against the partners'."""
        if math.isnan(self.value):
            return "its bandwidth was not measured"
        said = (
            f"bandwidth at {size_text(self.bytes)}: {self.value / 1e6:.1f} MB/s with partners"
            f" against {self.typical / 1e6:.1f} MB/s between them"
        )
        if self.pairs:
            said += f", {self.slow_pairs} of {self.pairs} pairs slow again"
        return said

    def to_json(self) -> dict[str, Any]:
        """The verdict's fields (NaN as null)."""
        return {
            "slow": self.slow,
            "op": self.op,
            "bytes": self.bytes,
            "value": None if math.isnan(self.value) else self.value,
            "typical": None if math.isnan(self.typical) else self.typical,
            "pairs": self.pairs,
            "slow_pairs": self.slow_pairs,
            "judged": self.judged,
        }


def same_node(name: str, node: str) -> bool:
    """Whether a matrix name (``csnode3``, ``csnode3.example/s0``) is Slurm's ``node``."""
    host = drain_analysis.node_of(name)
    return host == node or host.split(".", 1)[0] == node


def judge(
    matrices: Sequence[Matrix],
    confirmed: Sequence[Confirmation] | None,
    run_id: int,
    node: str,
) -> Verdict:
    """The verdict on ``node`` from run ``run_id``'s matrices and confirmation (None: none)."""
    decision = drain_analysis.decide(matrices, run_id, confirmed)
    named = [s for s in decision.suspects if same_node(s.node, node)]
    mine = [
        c
        for c in confirmed or ()
        if c.op in OPS and c.where == "node" and c.pairs and same_node(c.name, node)
    ]
    if mine:
        c = min(mine, key=lambda c: c.again / c.typical if c.typical > 0 else math.inf)
        verdict = Verdict(node, bool(named), c.op, c.bytes, c.again, c.typical, c.pairs,
                          c.slow_pairs)  # fmt: skip
    else:
        verdict = _first_pass(matrices, node, bool(named))
        suspected = any(same_node(o.name, node) for m in matrices for o in m.outliers)
        if math.isnan(verdict.value) or (suspected and confirmed is not None):
            verdict = replace(verdict, judged=False)  # named, and not measured again
    if not named:
        return verdict
    said = named[0].reason.removeprefix(drain_analysis.PREFIX).strip()
    return replace(verdict, reason=f"{drain_analysis.PREFIX} recheck: {said}")


def _first_pass(matrices: Sequence[Matrix], node: str, slow: bool) -> Verdict:
    """The node's links against the partners' links in the largest bandwidth matrix."""
    bandwidth = [m for m in matrices if m.op == "matrix_bw"]
    if not bandwidth:
        return Verdict(node, slow, "matrix_bw", 0, math.nan, math.nan)
    m = max(bandwidth, key=lambda m: m.bytes)
    mine: list[float] = []
    theirs: list[float] = []
    for i, row in enumerate(m.values):
        for j, v in enumerate(row):
            if v is None:
                continue
            ends = same_node(m.names[i], node) or same_node(m.names[j], node)
            (mine if ends else theirs).append(v)
    value = float(np.median(mine)) if mine else math.nan
    typical = float(np.median(theirs)) if theirs else math.nan
    return Verdict(node, slow, m.op, m.bytes, value, typical)
