"""Slurm's topology.conf (the topology/tree plugin's file), read into switches and written back.

Each line is ``SwitchName=NAME Nodes=LIST`` (a leaf) or ``SwitchName=NAME Switches=LIST``,
``LinkSpeed=N`` may follow, ``#`` starts a comment; LIST is a Slurm host list
(``csnode[1-2,4],x``). :func:`parse` checks what makes a tree: each key once, each switch
defined once and below at most one other, each node on one leaf, each switch named below
another defined in the file. The virtual cluster checks a file it is given with it, and
``commscope topology --merge`` reads the site's file with it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

KEYS = ("SwitchName", "Nodes", "Switches", "LinkSpeed")
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
_HOSTLIST = re.compile(r"([A-Za-z0-9._-]*)\[([0-9,-]+)\]([A-Za-z0-9._-]*)")
_NUMBERED = re.compile(r"(.*?)([0-9]+)")
MAX_RANGE = 4096  # names one bracket may expand to: a typo must not fill the memory


class TopologyConfError(ValueError):
    """A topology.conf that is not a tree; the message is one line naming the file and line."""


@dataclass(frozen=True)
class ConfSwitch:
    """One ``SwitchName=`` line: its nodes (a leaf) or the switches below it, and its line."""

    name: str
    nodes: tuple[str, ...] = ()
    switches: tuple[str, ...] = ()
    link_speed: str | None = None
    line: int = 0  # where it stands in the file read (0: not read from a file)

    def text(self) -> str:
        """The switch as one topology.conf line."""
        members = (
            f"Nodes={','.join(self.nodes)}"
            if self.nodes
            else (f"Switches={','.join(self.switches)}")
        )
        speed = f" LinkSpeed={self.link_speed}" if self.link_speed is not None else ""
        return f"SwitchName={self.name} {members}{speed}"


def expand_hostlist(text: str) -> list[str]:
    """Names of a Slurm host list with at most one bracket per name: ``csnode[1-2,4],x``.

    Raises:
        ValueError: a name or range this reading does not take.
    """
    items = re.findall(r"[^,\[]*(?:\[[^\]]*\])?[^,]*", text)
    names: list[str] = []
    for item in (i for i in items if i):
        bracket = _HOSTLIST.fullmatch(item)
        if bracket is None:
            if not NAME.fullmatch(item):
                raise ValueError(f"{item!r} is not a node or switch name")
            names.append(item)
            continue
        head, ranges, tail = bracket.groups()
        for part in ranges.split(","):
            low, _, high = part.partition("-")
            if not low.isdigit() or not (high or low).isdigit() or int(high or low) < int(low):
                raise ValueError(f"{item!r} has a range that is not one")
            if int(high or low) - int(low) > MAX_RANGE:
                raise ValueError(f"{item!r} spans more than {MAX_RANGE} names")
            width = len(low) if low.startswith("0") else 0
            names += [f"{head}{i:0{width}d}{tail}" for i in range(int(low), int(high or low) + 1)]
    return names


def compress_hostlist(names: Iterable[str]) -> str:
    """Names as a short Slurm host list: ``csnode[1-3,5],login`` (sorted, runs in brackets).

    Names ending in as many digits share a bracket with the others of their prefix
    (``n08,n09,n10`` -> ``n[08-10]``; ``n9,n10`` -> ``n9,n10``); any other name stands alone.
    :func:`expand_hostlist` reads the text back.
    """
    runs: dict[tuple[str, int], list[int]] = {}
    alone: list[str] = []
    for name in sorted(set(names)):
        numbered = _NUMBERED.fullmatch(name)
        if numbered is None:
            alone.append(name)
            continue
        digits = numbered.group(2)
        runs.setdefault((numbered.group(1), len(digits)), []).append(int(digits))
    parts = []
    for (prefix, width), numbers in sorted(runs.items()):
        if len(numbers) == 1:
            parts.append(f"{prefix}{numbers[0]:0{width}d}")
            continue
        spans: list[list[int]] = []
        for n in sorted(numbers):
            if spans and n == spans[-1][1] + 1:
                spans[-1][1] = n
            else:
                spans.append([n, n])
        inner = ",".join(
            f"{a:0{width}d}" if a == b else f"{a:0{width}d}-{b:0{width}d}" for a, b in spans
        )
        parts.append(f"{prefix}[{inner}]")
    return ",".join(parts + alone)


def parse(text: str, source: str) -> list[ConfSwitch]:
    """The switches of topology.conf ``text``, in the file's order.

    Raises:
        TopologyConfError: one line naming ``source``, the line and the fix.
    """
    switches: list[ConfSwitch] = []
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.split("#", 1)[0].strip()
        if line:
            switches.append(_switch(line, f"{source} line {number}", number))
    _check_tree(switches, source)
    return switches


def _switch(line: str, where: str, number: int) -> ConfSwitch:
    fields: dict[str, str] = {}
    for token in line.split():
        key, eq, value = token.partition("=")
        if not eq or key not in KEYS or key in fields or not value:
            raise TopologyConfError(
                f"{where}: {token[:60]!r} is not one of {', '.join(KEYS)}=VALUE"
                " (once each): write lines like 'SwitchName=s1 Nodes=csnode[1-2]'"
            )
        fields[key] = value
    name = fields.get("SwitchName", "")
    if not NAME.fullmatch(name) or ("Nodes" in fields) == ("Switches" in fields):
        raise TopologyConfError(
            f"{where}: give SwitchName=NAME and either Nodes=LIST or Switches=LIST"
        )
    try:
        members = tuple(expand_hostlist(fields.get("Nodes") or fields["Switches"]))
    except ValueError as err:
        raise TopologyConfError(f"{where}: {err}: write names like csnode[1-2],csnode4") from None
    nodes, below = (members, ()) if "Nodes" in fields else ((), members)
    return ConfSwitch(name, nodes, below, fields.get("LinkSpeed"), number)


def _check_tree(switches: Sequence[ConfSwitch], source: str) -> None:
    """Each switch defined once, each node and switch below at most one switch."""
    defined: dict[str, ConfSwitch] = {}
    above: dict[str, ConfSwitch] = {}
    for s in switches:
        if s.name in defined:
            raise TopologyConfError(
                f"{source} line {s.line}: switch {s.name} is defined on line"
                f" {defined[s.name].line} already: give each switch one line"
            )
        defined[s.name] = s
        for member in s.nodes or s.switches:
            if member in above:
                kind = "node" if s.nodes else "switch"
                raise TopologyConfError(
                    f"{source} line {s.line}: {kind} {member} is under switch"
                    f" {above[member].name} (line {above[member].line}) already: a {kind}"
                    " sits under one switch; remove it from one of the two"
                )
            above[member] = s
    for s in switches:
        for below in s.switches:
            if below not in defined:
                raise TopologyConfError(
                    f"{source} line {s.line}: switch {below} is not defined in the file: "
                    "add its SwitchName= line"
                )


def render(switches: Iterable[ConfSwitch]) -> str:
    """The switches as topology.conf lines."""
    return "".join(s.text() + "\n" for s in switches)


def renamed(switch: ConfSwitch, names: dict[str, str]) -> ConfSwitch:
    """``switch`` with its own name and the switches below it renamed by ``names``."""
    return replace(
        switch,
        name=names.get(switch.name, switch.name),
        switches=tuple(names.get(s, s) for s in switch.switches),
    )
