"""Which nodes share a switch, level by level, from a measured all-pairs matrix.

Nodes behind one switch reach each other faster than nodes behind different switches: the
path between switches adds hops and shares an uplink. The distance between two nodes is the
time per byte of their links (the inverse bandwidth, both directions' median) at the
matrix's largest size, or their latency where only latency was measured. Average-linkage
hierarchical clustering (SciPy) merges the nearest nodes first; the tree is cut at the first
merge whose distance jumps by more than ``MIN_JUMP`` over the one before: smaller steps are
noise between links of one switch. Each group is a leaf switch; the groups are then
clustered the same way (the distance between two groups is the median of their nodes'
distances) to find the switches above, until one switch holds everything.

What it finds is a grouping seen in the timings (:class:`SwitchGrouping`), not a modelled
network: those are the topologies of ``commscope.predict.topologies``.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray
from scipy.cluster import hierarchy
from scipy.spatial.distance import squareform

from commscope.strict import visible

MIN_JUMP = 1.5  # a merge this much farther than the one before starts another switch level


@dataclass(frozen=True)
class SwitchGroup:
    """A switch found by measurement: the nodes on it (leaf) or the groups below it."""

    name: str
    nodes: tuple[str, ...] = ()
    switches: tuple[str, ...] = ()
    # median bandwidth (bytes/s) and latency (s) between members; None where not measured
    bandwidth_Bps: float | None = None  # noqa: N815 - the unit is part of the name
    latency_s: float | None = None


@dataclass(frozen=True)
class SwitchGrouping:
    """The switches found, leaves first, the top switch last."""

    switches: tuple[SwitchGroup, ...]
    source: str  # "bandwidth" or "latency": what the distances came from

    @property
    def leaves(self) -> tuple[SwitchGroup, ...]:
        """The switches that hold nodes."""
        return tuple(s for s in self.switches if s.nodes)


def symmetric(values: NDArray[np.float64]) -> NDArray[np.float64]:
    """The mean of both directions of each pair; NaN where neither was measured."""
    both = np.stack([values, values.T])
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a pair measured in neither direction
        out = np.nanmean(np.where(np.isfinite(both), both, np.nan), axis=0)
    np.fill_diagonal(out, 0.0)
    return np.asarray(out, dtype=np.float64)


def groups(distance: NDArray[np.float64], min_jump: float = MIN_JUMP) -> list[list[int]]:
    """Indices grouped below the first merge that jumps by more than ``min_jump``; [all] else."""
    n = len(distance)
    if n < 3:
        return [list(range(n))]
    filled = np.where(np.isfinite(distance), distance, np.nanmax(distance))
    tree = hierarchy.linkage(squareform(filled, checks=False), method="average")
    heights = tree[:, 2]
    lows = np.maximum(heights[:-1], np.finfo(float).tiny)
    jumps = heights[1:] / lows
    steps = np.flatnonzero(jumps > min_jump)
    if not steps.size:
        return [list(range(n))]
    first = int(steps[0])  # the nearest level of switches: the leaves, then up level by level
    cut = (heights[first] + heights[first + 1]) / 2
    labels = hierarchy.fcluster(tree, t=cut, criterion="distance")
    found: dict[int, list[int]] = {}
    for i, label in enumerate(labels):
        found.setdefault(int(label), []).append(i)
    return sorted(found.values())


def _median(values: NDArray[np.float64], rows: Sequence[int], cols: Sequence[int]) -> float | None:
    block = values[np.ix_(rows, cols)]
    picked = block[np.isfinite(block) & (block > 0)]
    return float(np.median(picked)) if picked.size else None


def infer(
    names: Sequence[str],
    bandwidth: NDArray[np.float64] | None,
    latency: NDArray[np.float64] | None,
    min_jump: float = MIN_JUMP,
) -> SwitchGrouping:
    """The switch tree of nodes ``names`` from their link matrices (row sends, column receives).

    Raises:
        ValueError: fewer than 2 nodes, or neither matrix given.
    """
    if len(names) < 2:
        raise ValueError("a topology needs at least 2 nodes")
    if bandwidth is None and latency is None:
        raise ValueError("a topology needs a bandwidth or latency matrix")
    bw = None if bandwidth is None else symmetric(bandwidth)
    lat = None if latency is None else symmetric(latency)
    if bw is not None:
        with np.errstate(divide="ignore"):
            distance = np.where(bw > 0, 1.0 / bw, np.nan)
        np.fill_diagonal(distance, 0.0)
        source = "bandwidth"
    else:
        assert lat is not None
        distance, source = lat, "latency"
    switches: list[SwitchGroup] = []
    units: list[list[int]] = [[i] for i in range(len(names))]  # each unit's nodes
    below: list[str] = []  # the switch each unit is (none for nodes)
    level = 0
    while True:
        between = np.array([[0.0 if a is b else _median(distance, a, b) or 0.0 for b in units]
                            for a in units])  # fmt: skip
        found = groups(between, min_jump)
        last = len(found) == 1
        made = []
        for k, group in enumerate(found):
            parts = [units[g] for g in group]
            nodes = [i for part in parts for i in part]
            made.append(
                SwitchGroup(
                    name="top" if last and level > 0 else f"s{level}_{k}",
                    nodes=tuple(names[i] for i in nodes) if level == 0 else (),
                    switches=tuple(below[g] for g in group) if level > 0 else (),
                    bandwidth_Bps=_across(bw, parts),
                    latency_s=_across(lat, parts),
                )
            )
        switches += made
        if last:
            return SwitchGrouping(tuple(switches), source)
        units = [[i for g in group for i in units[g]] for group in found]
        below = [s.name for s in made]
        level += 1


def _across(values: NDArray[np.float64] | None, parts: Sequence[Sequence[int]]) -> float | None:
    """The median over pairs of nodes in different parts (a leaf's parts: its single nodes)."""
    if values is None:
        return None
    picked = [
        values[i, j]
        for a, x in enumerate(parts)
        for b, y in enumerate(parts)
        if a != b
        for i in x
        for j in y
        if np.isfinite(values[i, j]) and values[i, j] > 0
    ]
    return float(np.median(picked)) if picked else None


def slurm_topology(grouping: SwitchGrouping) -> str:
    r"""Slurm's topology/tree file (topology.conf): a line per switch, leaves first.

    A line per switch whatever the nodes' names hold: a control character in one is shown
    escaped (a newline as ``\x0a``). Such a name is no name Slurm takes, and the file is not
    written with it (:mod:`commscope.jobs.topology`); the text is still shown.
    """
    lines = []
    for s in grouping.switches:
        if s.nodes:
            lines.append(f"SwitchName={s.name} Nodes={','.join(map(visible, s.nodes))}")
        else:
            lines.append(f"SwitchName={s.name} Switches={','.join(s.switches)}")
    return "\n".join(lines) + "\n"
