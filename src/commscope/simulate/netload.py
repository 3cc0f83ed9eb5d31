"""Network load of a simulated run, per link, from SimGrid's Paje trace.

As in table 4 of Rechistov et al. 2012 (cluster simulation): load and mean packet size, here
for the measured operation alone, with commscope's own traffic (clock synchronisation, window
broadcasts, result reductions, barriers) listed apart.

Bytes and messages per link follow each traced MPI message (``tracing/smpi`` with sizes) over
the route the platform gives its two ranks' nodes, so a link's bytes are exactly the sizes of
the messages that crossed it. The engine built for SMPI marks its phases in each rank's traced
MPI states (``cs_trace_phase``: a zero-count ``MPI_Testsome`` opens the measured operation, a
zero-count ``MPI_Testall`` commscope's own traffic); a message belongs to the phase its sender
was in when it posted it. SimGrid 3.32's categorized link variables cannot do this split: it
writes them into the uncategorized ``bandwidth_used``.

SimGrid's ``bandwidth_used`` link variable is not traced: integrated over time it gives rate
times duration, not bytes sent. On a 64 KiB all-to-all (4 ranks, 2 nodes) it read 2.2 % above
the message sizes on each NIC and 5.3 % above on a memory link carrying hundreds of 8-byte
sync messages (ns time stamps); at the default 6-digit stamps every rate change rounds to a
microsecond, and 6.3 MB were read for 8.39 MB of messages.
"""

from __future__ import annotations

import shlex
from collections import defaultdict
from collections.abc import Sequence
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
)
TRACE_FILE = "trace.paje"
PHASES = ("benchmark", "sync")
PHASE_TITLES = {
    "benchmark": "the measured operation",
    "sync": "commscope's own traffic",
    "all": "all traffic",
}
# Operations whose phases the engine does not mark (their control messages and barriers run
# inside them): a run with any of them is not split. Collectives and pingpong/bw/bibw are.
UNMARKED_OPS = ("loggp", "rma", "contention", "matrix", "bisection", "mbw")
# The MPI state that opens each phase (engine/src/schedule.c, cs_trace_phase).
PHASE_MARKS = {"PMPI_Testsome": "benchmark", "PMPI_Testall": "sync"}
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
    """One link's traffic of one phase over the run."""

    link: str
    bytes: int
    messages: int

    def to_json(self, duration_s: float) -> dict[str, Any]:
        """Plain dict, with the mean message size and the average load in Mbit/s."""
        return {
            "link": self.link,
            "bytes": self.bytes,
            "messages": self.messages,
            "mean_message_bytes": self.bytes / self.messages if self.messages else None,
            "mbit_per_s": self.bytes * 8 / duration_s / 1e6 if duration_s > 0 else None,
        }


@dataclass(frozen=True)
class NetLoad:
    """A traced run's load: per phase (when the engine marked them) and in all, per link."""

    duration_s: float
    unsplit: str | None  # why the phases are unknown (only ``all`` is), None when split
    phases: dict[str, list[LinkLoad]]
    all: list[LinkLoad]

    def to_json(self) -> dict[str, Any]:
        """What ``simulate run --netload`` stores with the run (run data ``netload``)."""
        d = self.duration_s
        return {
            "duration_s": d,
            "split": self.unsplit is None,
            "unsplit": self.unsplit,
            **{p: [x.to_json(d) for x in self.phases.get(p, [])] for p in PHASES},
            "all": [x.to_json(d) for x in self.all],
        }


def stored_view(data: dict[str, Any]) -> dict[str, Any]:
    """A stored load in today's shape: runs traced before the split kept only ``links``."""
    if "all" in data:
        return data
    return {
        "duration_s": data.get("duration_s", 0.0),
        "split": False,
        "unsplit": "traced before commscope split the traffic by phase",
        "benchmark": [],
        "sync": [],
        "all": data.get("links", []),
    }


class _Trace:
    """What one pass over a Paje file gathers."""

    def __init__(self) -> None:
        self.defs: dict[str, str] = {}  # event code -> event name
        self.containers: dict[str, str] = {}  # alias -> name
        self.values: dict[str, str] = {}  # entity value alias -> name
        self.phase: dict[str, str] = {}  # rank container -> its phase now
        self.marked = False
        self.starts: dict[str, tuple[str, int, str]] = {}  # key -> sender, size, phase
        self.sent: list[tuple[str, str, int, str]] = []  # sender, receiver, size, phase
        self.end_time = 0.0

    def event(self, ev: list[str]) -> None:
        kind = self.defs.get(ev[0], "")
        if kind == "PajeCreateContainer":  # time alias type parent name
            self.containers[ev[2]] = ev[5]
        elif kind == "PajeDefineEntityValue":  # alias type name color
            self.values[ev[1]] = ev[3]
        elif kind in ("PajePushState", "PajeSetState"):  # time type container value
            mark = PHASE_MARKS.get(self.values.get(ev[4], ev[4]))
            if mark:
                self.phase[ev[3]] = mark
                self.marked = True
        elif kind == "PajeStartLink" and len(ev) >= 8 and ev[4] == "PTP":
            # time type container value sender key size
            self.starts[ev[6]] = (ev[5], int(float(ev[7])), self.phase.get(ev[5], "sync"))
        elif kind == "PajeEndLink" and ev[4] == "PTP" and ev[6] in self.starts:
            sender, size, phase = self.starts.pop(ev[6])
            self.sent.append((sender, ev[5], size, phase))
        if kind in _TIMED:
            self.end_time = max(self.end_time, float(ev[1]))


def _read(path: Path) -> _Trace:
    trace = _Trace()
    try:
        with path.open(encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.startswith("%EventDef"):
                    _, name, code = line.split()
                    trace.defs[code] = name
                elif line.strip() and line[0] not in "%#":
                    trace.event(shlex.split(line))
    except OSError as err:
        raise SimulateError(f"{path}: cannot read the SimGrid trace ({err.strerror})") from None
    except (ValueError, IndexError):
        raise SimulateError(f"{path}: not a SimGrid Paje trace (malformed event)") from None
    if not trace.containers:
        raise SimulateError(f"{path}: not a SimGrid Paje trace (no containers)")
    return trace


def link_loads(
    path: Path, model: ClusterModel, rank_node: list[int], ops: Sequence[str] = ()
) -> NetLoad:
    """Per-link load of each phase, and in all, of the traced run.

    Args:
        path: the Paje trace.
        model: the cluster the platform was written from.
        rank_node: per rank, the model node index it ran on.
        ops: the engine operations the run measured.
    """
    trace = _read(path)
    count: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0])  # bytes, messages
    for sender, receiver, size, phase in trace.sent:
        a = _rank(trace.containers.get(sender))
        b = _rank(trace.containers.get(receiver))
        if a is None or b is None or max(a, b) >= len(rank_node):
            continue
        for link in route_links(model, rank_node[a], rank_node[b]):
            for key in ((phase, link), ("all", link)):
                count[key][0] += size
                count[key][1] += 1
    names = sorted({link for _, link in count if not link.endswith("fabric")})

    def loads(phase: str) -> list[LinkLoad]:
        return [LinkLoad(n, *count.get((phase, n), [0, 0])) for n in names]

    unmarked = [op for op in ops if op in UNMARKED_OPS]
    unsplit = (
        f"{', '.join(unmarked)} mark no phases in the engine"
        if unmarked
        else None
        if trace.marked
        else "the trace has no phase marks (an engine built before them)"
    )
    phases = {p: loads(p) for p in PHASES} if unsplit is None else {}
    return NetLoad(trace.end_time, unsplit, phases, loads("all"))


def _rank(name: str | None) -> int | None:
    if not name or not name.startswith("rank-"):
        return None
    try:
        return int(name[5:])
    except ValueError:
        return None
