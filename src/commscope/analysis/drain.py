"""Which nodes a matrix run says to take out of service, and the reason each carries.

A node is drained when a bandwidth matrix names it as a sender or a receiver (its row or
column, :mod:`commscope.analysis.matrix`): every link it sends or receives on is slow, so the
node is what is wrong. A single slow link names two nodes of which at most one is at fault,
and draining a healthy node costs jobs: links are reported, never drained. Latency matrices
are not used: on shared cores they follow the scheduling more than the network
(docs/reference/matrix.md).

When the run holds a confirmation round (:mod:`commscope.analysis.confirm`), that is the
verdict: a node is drained only when the confirmation judges it bad (also an end of a slow
link whose pairs with healthy partners are slow too); a suspect the confirmation found
transient, or did not measure, is reported and not drained.

The reason starts with :data:`PREFIX`, as Node Health Check marks its own: ``commscope
undrain`` returns to service only nodes whose reason starts so, and a node drained for any
other reason is never touched.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from commscope.analysis.confirm import Confirmation
from commscope.analysis.matrix import Matrix, Outlier
from commscope.units import size_text

PREFIX = "commscope:"


@dataclass(frozen=True)
class Suspect:
    """A node to drain, why, and every figure that named it.

    Attributes:
        node: the node's name (a matrix of sockets or ranks names its node).
        reason: the drain reason: :data:`PREFIX`, the worst figure, its value against the
            typical link, the run id.
        figures: one line per outlier that named it.
    """

    node: str
    reason: str
    figures: tuple[str, ...]


@dataclass(frozen=True)
class Decision:
    """What a matrix run says to drain.

    Attributes:
        run_id: the run the decision is from.
        suspects: nodes to drain, in matrix order.
        links: one line per slow link named alone (reported, not drained).
        spared: one line per suspect node the confirmation did not judge bad (not drained).
    """

    run_id: int
    suspects: tuple[Suspect, ...]
    links: tuple[str, ...]
    spared: tuple[str, ...] = ()


def ours(reason: str) -> bool:
    """True when a drain reason is commscope's own (it starts with :data:`PREFIX`)."""
    return reason.startswith(PREFIX)


def node_of(name: str) -> str:
    """The node of a matrix name: ``csnode1/s0`` and ``csnode1/r3`` are on ``csnode1``."""
    return name.split("/", 1)[0]


def _shortfall(o: Outlier) -> float:
    """How far below its typical link an outlier is, as a share (bandwidth: higher is better)."""
    return 1.0 - o.value / o.typical if o.typical > 0 else 0.0


def reason(m: Matrix, o: Outlier, run_id: int) -> str:
    """The drain reason for node outlier ``o`` of bandwidth matrix ``m`` in run ``run_id``."""
    return (
        f"{PREFIX} bandwidth as {o.where} at {size_text(m.bytes)}: {o.value / 1e6:.1f} MB/s"
        f" against typical {o.typical / 1e6:.1f} MB/s, run {run_id}"
    )


def confirmed_reason(c: Confirmation, run_id: int) -> str:
    """The drain reason for a node the confirmation judged bad in run ``run_id``."""
    return (
        f"{PREFIX} bandwidth at {size_text(c.bytes)}: {c.again / 1e6:.1f} MB/s against typical"
        f" {c.typical / 1e6:.1f} MB/s, {c.slow_pairs} of {c.pairs} pairs slow again, run {run_id}"
    )


def decide(
    matrices: Sequence[Matrix], run_id: int, confirmed: Sequence[Confirmation] | None = None
) -> Decision:
    """The nodes to drain, and the links and suspects that are only reported.

    Without a confirmation (``confirmed`` None): the nodes the bandwidth matrices name as
    senders or receivers; a node named by several outliers (both directions, several sizes)
    is drained once, for the one furthest below its typical link. With one: the nodes it
    judges bad in a bandwidth matrix, each for its worst verdict.
    """
    worst: dict[str, tuple[float, str]] = {}
    figures: dict[str, list[str]] = {}
    links: list[str] = []
    first: dict[str, list[str]] = {}
    for m in matrices:
        if m.op != "matrix_bw":
            continue
        for o in m.outliers:
            line = f"bandwidth matrix at {m.bytes} bytes: {o.text(m.unit)}"
            if o.where == "link":
                links.append(line)
                continue
            node = node_of(o.name)
            first.setdefault(node, []).append(line)
            if confirmed is None:
                figures.setdefault(node, []).append(line)
                far = _shortfall(o)
                if node not in worst or far > worst[node][0]:
                    worst[node] = (far, reason(m, o, run_id))
    spared: list[str] = []
    if confirmed is not None:
        bandwidth = [c for c in confirmed if c.op == "matrix_bw" and c.where == "node"]
        for c in bandwidth:
            node = node_of(c.name)
            if c.verdict != "bad":
                continue
            figures.setdefault(node, []).append(f"confirmed: {c.text()}")
            far = 1.0 - c.again / c.typical if c.typical > 0 else 0.0
            if node not in worst or far > worst[node][0]:
                worst[node] = (far, confirmed_reason(c, run_id))
        for c in bandwidth:
            if node_of(c.name) not in worst and c.verdict != "bad":
                spared.append(c.text())
        judged = {node_of(c.name) for c in bandwidth}
        spared += [
            f"node {node}: not measured again, so not confirmed: {lines[0]}"
            for node, lines in first.items()
            if node not in judged
        ]
        passing = [
            c for c in confirmed if c.op == "matrix_bw" and c.where == "link" and c.verdict != "bad"
        ]
        spared += [c.text() for c in passing]
        links = [line for line in links if not any(f": {c.name}:" in line for c in passing)]
    names = [node_of(n) for m in matrices for n in m.names]
    order = sorted(worst, key=lambda node: names.index(node) if node in names else len(names))
    suspects = tuple(Suspect(n, worst[n][1], tuple(figures[n])) for n in order)
    return Decision(run_id, suspects, tuple(links), tuple(dict.fromkeys(spared)))


def hosts(matrices: Sequence[Matrix]) -> tuple[str, ...]:
    """The distinct nodes the matrices were measured on, in order."""
    seen: list[str] = []
    for m in matrices:
        for name in m.names:
            if node_of(name) not in seen:
                seen.append(node_of(name))
    return tuple(seen)
