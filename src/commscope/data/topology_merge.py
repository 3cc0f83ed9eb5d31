"""A measured switch tree merged into a site's topology.conf (``commscope topology --merge``).

A matrix run measures some of a cluster's nodes; the site's topology.conf holds them all. The
merge keeps every switch of the file that holds a node not measured, and replaces those whose
nodes were all measured by the measured switches. A kept switch that also holds a measured
node would leave that node under two switches (the file's and the measured one): the merge
refuses it, naming the node and both switches; measuring every node of that switch settles it.

Upper switches of the file left with nothing below them go too; the measured tree's top is put
under the lowest switch of the file above every switch replaced (where the measured nodes sat),
or stands as a tree of its own when nothing in the file joined them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from commscope.data.topology_conf import ConfSwitch, renamed


class MergeConflict(ValueError):
    """A node the merge would put under two switches; the message is one line."""


@dataclass(frozen=True)
class Merged:
    """The merged switches, the file's switches replaced, and where the measured top went.

    Attributes:
        switches: the file's kept switches in its order, then the measured ones.
        replaced: names of the file's switches the measured ones replace.
        under: the file's switch the measured top now sits under (None: no switch).
        roots: the switches under no other: more than one means trees no switch joins.
    """

    switches: list[ConfSwitch]
    replaced: list[str]
    under: str | None
    roots: list[str]


def merge(existing: Sequence[ConfSwitch], measured: Sequence[ConfSwitch], source: str) -> Merged:
    """Merge ``measured`` (leaves first, top last) into ``existing`` (read from ``source``).

    Raises:
        MergeConflict: a switch of the file holds measured and unmeasured nodes.
    """
    measured_leaf = {n: s.name for s in measured for n in s.nodes}
    dropped: set[str] = set()
    for s in existing:
        inside = [n for n in s.nodes if n in measured_leaf]
        outside = [n for n in s.nodes if n not in measured_leaf]
        if inside and outside:
            raise MergeConflict(
                f"--merge {source}: node {inside[0]} would sit under two switches:"
                f" {s.name} (line {s.line}), kept for {outside[0]} which the run did not"
                f" measure, and the measured {measured_leaf[inside[0]]}; measure every node of"
                f" {s.name} (or edit {source}), or write the measured switches alone with --partial"
            )
        if inside:
            dropped.add(s.name)
    grew = True
    while grew:  # an upper switch whose every switch below went goes too
        grew = False
        for s in existing:
            if s.switches and s.name not in dropped and set(s.switches) <= dropped:
                dropped.add(s.name)
                grew = True
    parent = {below: s.name for s in existing for below in s.switches}
    lost = sorted({parent[d] for d in dropped if d in parent and parent[d] not in dropped})
    under = _lowest_common_ancestor(lost, parent)
    taken = {s.name for s in existing if s.name not in dropped}
    names = {s.name: _free(s.name, taken) for s in measured}
    new = [renamed(s, names) for s in measured]
    below_measured = {b for s in new for b in s.switches}
    tops = tuple(s.name for s in new if s.name not in below_measured)
    kept = []
    for s in existing:
        if s.name in dropped:
            continue
        below = tuple(b for b in s.switches if b not in dropped)
        kept.append(replace(s, switches=below + (tops if s.name == under else ())))
    switches = kept + new
    below_any = {b for s in switches for b in s.switches}
    roots = [s.name for s in switches if s.name not in below_any]
    return Merged(switches, sorted(dropped), under, roots)


def _lowest_common_ancestor(switches: Sequence[str], parent: dict[str, str]) -> str | None:
    """The lowest switch that is ``switches``' own or above each of them (None: none is)."""
    if not switches:
        return None
    chains = [_chain(s, parent) for s in switches]
    return next((s for s in chains[0] if all(s in chain for chain in chains[1:])), None)


def _chain(switch: str, parent: dict[str, str]) -> list[str]:
    chain = [switch]
    while chain[-1] in parent and parent[chain[-1]] not in chain:  # a cycle ends the walk
        chain.append(parent[chain[-1]])
    return chain


def _free(name: str, taken: set[str]) -> str:
    """``name``, or ``measured_NAME`` (numbered if need be) when the file keeps that name."""
    if name not in taken:
        return name
    candidate, number = f"measured_{name}", 1
    while candidate in taken:
        number += 1
        candidate = f"measured{number}_{name}"
    return candidate
