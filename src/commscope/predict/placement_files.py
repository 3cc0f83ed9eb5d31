"""Explicit placements from an MPI hostfile or an Open MPI rankfile.

Hostfile lines are ``host slots=N`` (Open MPI) or ``host:N`` (MPICH, SimGrid); a bare ``host``
is one slot, and a host listed again adds its slots. Ranks fill the hosts in ``block`` order
(each host's slots in turn) or ``cyclic`` order (one rank per host in turn, skipping full
hosts). A node's ranks are spread over its sockets like generated placements. Rankfile lines
are ``rank R=host slot=S:C`` (socket S, core C) or ``rank R=host slot=N`` (the node's N-th
core, socket by socket) and say exactly where each rank runs. ``#`` starts a comment.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
from numpy.typing import ArrayLike

from commscope.errors import PredictError
from commscope.predict.model import ClusterModel
from commscope.predict.placement import Placement, socket_layout

# Counts of at most 9 digits: every bound they meet (cores, ranks) is far below 10^9.
_HOST_RE = re.compile(
    r"(\S+?)(?::([0-9]{1,9}))?(?:\s+slots\s*=\s*([0-9]{1,9}))?"
    r"(?:\s+max_slots\s*=\s*[0-9]{1,9})?"
)
_RANK_RE = re.compile(
    r"rank\s+([0-9]{1,9})\s*=\s*(\S+)\s+slot\s*=\s*([0-9]{1,9})"
    r"(?::([0-9]{1,9}))?"
)


def _lines(path: str | Path) -> list[tuple[int, str]]:
    try:
        text = Path(path).read_text("utf-8")
    except OSError as err:
        raise PredictError(f"{path}: cannot read ({err.strerror})") from None
    except UnicodeDecodeError as err:
        raise PredictError(
            f"{path}: byte {err.start} is not UTF-8 text; give a hostfile or rankfile"
        ) from None
    out = []
    for number, line in enumerate(text.splitlines(), 1):
        line = line.split("#", 1)[0].strip()
        if line:
            out.append((number, line))
    return out


def _node_index(model: ClusterModel, host: str, where: str) -> int:
    try:
        return model.node_names.index(host)
    except ValueError:
        shown = ", ".join(model.node_names[:4]) + (", ..." if model.nodes > 4 else "")
        raise PredictError(f"{where}: host {host!r} is not a node of the model ({shown})") from None


def _explicit(
    label: str, node: ArrayLike, socket: ArrayLike, core: ArrayLike, order: str
) -> Placement:
    node_a = np.asarray(node, dtype=np.int64)
    socket_a = np.asarray(socket, dtype=np.int64)
    pairs = np.unique(np.stack([node_a, socket_a]), axis=1)
    return Placement(
        label=label,
        nodes=int(np.unique(node_a).size),
        per_node=int(np.bincount(node_a).max()),
        sockets_used=int(np.bincount(pairs[0]).max()),
        order=order,
        node=node_a,
        socket=socket_a,
        core=np.asarray(core, dtype=np.int64),
        symmetric=False,
    )


def from_hostfile(model: ClusterModel, path: str | Path, p: int, order: str = "block") -> Placement:
    """The placement of ``p`` ranks over a hostfile's slots.

    Raises:
        PredictError: a line is not understood (file and line named), a host is not in the
            model, a host has more slots than cores, or the slots total less than ``p``.
    """
    slots: dict[int, int] = {}
    for number, line in _lines(path):
        match = _HOST_RE.fullmatch(line)
        if match is None or (match.group(2) and match.group(3)):
            raise PredictError(f"{path} line {number}: {line!r} is not 'host slots=N' or 'host:N'")
        n = _node_index(model, match.group(1), f"{path} line {number}")
        slots[n] = slots.get(n, 0) + int(match.group(2) or match.group(3) or 1)
        if slots[n] > model.cores_per_node:
            raise PredictError(
                f"{path} line {number}: {slots[n]} slots on"
                f" {model.node_names[n]}, which has {model.cores_per_node} cores"
            )
    if sum(slots.values()) < p:
        raise PredictError(
            f"{path}: {sum(slots.values())} slots for {p} processes; add hosts or slots"
        )
    hosts = np.array(list(slots), dtype=np.int64)
    counts = np.array(list(slots.values()), dtype=np.int64)
    host_of_slot = np.repeat(np.arange(hosts.size), counts)
    round_of_slot = np.arange(host_of_slot.size) - np.repeat(np.cumsum(counts) - counts, counts)
    # Block takes each host's slots in turn; cyclic takes slot j of every host, then j + 1.
    if order == "cyclic":
        taken = host_of_slot[np.lexsort((host_of_slot, round_of_slot))][:p]
    else:
        taken = host_of_slot[:p]
    node = hosts[taken]
    socket = np.zeros(p, dtype=np.int64)
    core = np.zeros(p, dtype=np.int64)
    by_node = np.argsort(node, kind="stable")
    bounds = np.flatnonzero(np.diff(node[by_node])) + 1
    for mine in np.split(by_node, bounds):
        k = max(min(model.sockets, mine.size), -(-mine.size // model.cores))
        socket[mine], core[mine] = socket_layout(mine.size, k, model.cores)
    return _explicit(f"hostfile {Path(path).name}", node, socket, core, order)


def from_rankfile(model: ClusterModel, path: str | Path, p: int) -> Placement:
    """The placement an Open MPI rankfile gives ranks 0..p-1.

    Raises:
        PredictError: a line is not understood, a host or core is not in the model, a rank is
            missing or given twice, or two ranks share a core.
    """
    where: dict[int, tuple[int, int, int]] = {}
    cores_taken: set[tuple[int, int, int]] = set()
    for number, line in _lines(path):
        at = f"{path} line {number}"
        match = _RANK_RE.fullmatch(line)
        if match is None:
            raise PredictError(
                f"{at}: {line!r} is not 'rank R=host slot=S:C' or"
                " 'rank R=host slot=N' (one core per rank)"
            )
        rank, n = int(match.group(1)), _node_index(model, match.group(2), at)
        if match.group(4) is None:
            index = int(match.group(3))
            s, c = index // model.cores, index % model.cores
        else:
            s, c = int(match.group(3)), int(match.group(4))
        if s >= model.sockets or c >= model.cores:
            slot = line.split("slot", 1)[1].lstrip(" =")
            raise PredictError(
                f"{at}: slot {slot} is not a core of {model.node_names[n]}"
                f" ({model.sockets} socket(s) x {model.cores} cores)"
            )
        if rank in where:
            raise PredictError(f"{at}: rank {rank} is placed twice")
        if (n, s, c) in cores_taken:
            raise PredictError(f"{at}: rank {rank} shares a core with another rank")
        where[rank] = (n, s, c)
        cores_taken.add((n, s, c))
    missing = [r for r in range(p) if r not in where]
    if missing:
        raise PredictError(f"{path}: no line for rank {missing[0]} of {p}")
    loc = [where[r] for r in range(p)]
    return _explicit(
        f"rankfile {Path(path).name}",
        [x[0] for x in loc],
        [x[1] for x in loc],
        [x[2] for x in loc],
        "explicit",
    )
