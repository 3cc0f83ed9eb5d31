"""Network load of a simulated run, per link, from SimGrid's Paje trace.

As in table 4 of Rechistov et al. 2012 (cluster simulation): load and mean packet size.

Bytes per link integrate the trace's ``bandwidth_used`` of each link over time (what SimGrid
really moved, protocol effects included). Messages per link follow each traced MPI message
(``tracing/smpi`` with sizes) over the route the platform gives its two ranks' nodes.
"""

from __future__ import annotations

import shlex
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from commscope.errors import SimulateError
from commscope.predict.model import ClusterModel
from commscope.simulate.platform import route_links

TRACE_CONFIG = (
    "tracing:yes",
    "tracing/smpi:yes",
    "tracing/smpi/internals:yes",
    "tracing/smpi/display-sizes:yes",
    "tracing/uncategorized:yes",
)
TRACE_FILE = "trace.paje"
# Events whose first field is a date (definitions have none).
_TIMED = {
    "PajeSetVariable",
    "PajeAddVariable",
    "PajeSubVariable",
    "PajeSetState",
    "PajePushState",
    "PajePopState",
    "PajeResetState",
    "PajeStartLink",
    "PajeEndLink",
    "PajeNewEvent",
    "PajeCreateContainer",
    "PajeDestroyContainer",
}


@dataclass(frozen=True)
class LinkLoad:
    """One link's traffic over the run."""

    link: str
    bytes: float
    messages: int
    message_bytes: int

    def to_json(self, duration_s: float) -> dict[str, Any]:
        """Plain dict, with the mean message size and the average load in Mbit/s."""
        return {
            "link": self.link,
            "bytes": self.bytes,
            "messages": self.messages,
            "mean_message_bytes": self.message_bytes / self.messages if self.messages else None,
            "mbit_per_s": self.bytes * 8 / duration_s / 1e6 if duration_s > 0 else None,
        }


def _events(path: Path) -> tuple[dict[str, str], list[list[str]]]:
    """Event definitions (code -> name) and event lines (split) of a Paje file."""
    names: dict[str, str] = {}
    events: list[list[str]] = []
    try:
        with path.open(encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.startswith("%EventDef"):
                    _, name, code = line.split()
                    names[code] = name
                elif line.strip() and line[0] not in "%#":
                    events.append(shlex.split(line))
    except OSError as err:
        raise SimulateError(f"{path}: cannot read the SimGrid trace ({err.strerror})") from None
    return names, events


def link_loads(
    path: Path, model: ClusterModel, rank_node: list[int]
) -> tuple[list[LinkLoad], float]:
    """Per-link load and the traced duration (s).

    Args:
        path: the Paje trace.
        model: the cluster the platform was written from.
        rank_node: per rank, the model node index it ran on.
    """
    defs, events = _events(path)
    containers: dict[str, str] = {}
    bw_used: set[str] = set()
    level: dict[str, float] = defaultdict(float)
    since: dict[str, float] = {}
    moved: dict[str, float] = defaultdict(float)
    starts: dict[str, tuple[str, int]] = {}
    messages: dict[str, int] = defaultdict(int)
    message_bytes: dict[str, int] = defaultdict(int)
    end_time = 0.0
    for ev in events:
        kind = defs.get(ev[0], "")
        if kind == "PajeCreateContainer":  # time id type parent name
            containers[ev[2]] = ev[5]
        elif kind == "PajeDefineVariableType" and ev[3] == "bandwidth_used":
            bw_used.add(ev[1])
        elif kind in ("PajeSetVariable", "PajeAddVariable", "PajeSubVariable") and ev[2] in bw_used:
            t, c, v = float(ev[1]), ev[3], float(ev[4])
            moved[c] += level[c] * (t - since.get(c, t))
            since[c] = t
            level[c] = (
                v
                if kind == "PajeSetVariable"
                else (level[c] + v if kind == "PajeAddVariable" else level[c] - v)
            )
            end_time = max(end_time, t)
        elif kind == "PajeStartLink" and len(ev) >= 8 and ev[4] == "PTP":
            starts[ev[6]] = (ev[5], int(float(ev[7])))
        elif kind == "PajeEndLink" and ev[4] == "PTP" and ev[6] in starts:
            src, size = starts.pop(ev[6])
            a, b = _rank(containers.get(src)), _rank(containers.get(ev[5]))
            if a is None or b is None or max(a, b) >= len(rank_node):
                continue
            for link in route_links(model, rank_node[a], rank_node[b]):
                messages[link] += 1
                message_bytes[link] += size
        if kind in _TIMED:
            end_time = max(end_time, float(ev[1]))
    if not containers:
        raise SimulateError(f"{path}: not a SimGrid Paje trace (no containers)")
    links = sorted(set(containers[c] for c in moved) | set(messages))
    by_name = {containers[c]: moved[c] for c in moved}
    loads = [
        LinkLoad(name, by_name.get(name, 0.0), messages.get(name, 0), message_bytes.get(name, 0))
        for name in links
        if not name.endswith("fabric")
    ]
    return loads, end_time


def _rank(name: str | None) -> int | None:
    if not name or not name.startswith("rank-"):
        return None
    try:
        return int(name[5:])
    except ValueError:
        return None
