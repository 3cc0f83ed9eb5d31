"""Exchange patterns as step-wise transfer lists.

A pattern is the sequence of steps of one collective algorithm; the transfers of a step run at
once, and a step ends when its slowest transfer does. A rank's message to itself is a local copy
and is left out. ``size`` means, per operation:

- alltoall: bytes each rank sends to each other rank;
- bcast, reduce, allreduce: bytes of the whole buffer;
- allgather, gather: bytes each rank contributes.

Steps where every rank r sends to (r - d) mod p for a set of offsets d are kept as offsets
(:class:`ShiftStep`): they look alike from every rank, which lets symmetric placements be priced
from one node's transfers. Others are explicit arrays (:class:`ListStep`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from commscope.errors import PredictError
from commscope.units import size_text

Transfers = tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.int64]]
SIZE_MEANS = {
    "alltoall": "per pair",
    "bcast": "buffer",
    "reduce": "buffer",
    "allreduce": "buffer",
    "allgather": "per rank",
    "gather": "per rank",
}
DEFAULT_BLOCK = 32  # MPICH's default throttle for this algorithm (MPIR_CVAR_ALLTOALL_THROTTLE)


@dataclass(frozen=True)
class ShiftStep:
    """Every rank r sends ``nbytes`` to rank (r - d) mod p, for each offset d at once."""

    offsets: NDArray[np.int64]
    nbytes: int

    def size(self, p: int) -> int:
        """Number of transfers."""
        return p * int(self.offsets.size)

    def transfers(self, p: int, sources: NDArray[np.int64] | None = None) -> Transfers:
        """(src, dst, bytes) arrays; only those from ``sources`` when given."""
        src = np.arange(p, dtype=np.int64) if sources is None else sources
        s = np.repeat(src, self.offsets.size)
        d = (s - np.tile(self.offsets, src.size)) % p
        return s, d, np.full(s.size, self.nbytes, dtype=np.int64)


@dataclass(frozen=True)
class ListStep:
    """Explicit transfers: src[i] sends nbytes[i] to dst[i]."""

    src: NDArray[np.int64]
    dst: NDArray[np.int64]
    nbytes: NDArray[np.int64]

    def size(self, p: int) -> int:
        """Number of transfers."""
        return int(self.src.size)

    def transfers(self, p: int, sources: NDArray[np.int64] | None = None) -> Transfers:
        """(src, dst, bytes) arrays (``sources`` must be None: the step has no symmetry)."""
        if sources is not None:
            raise ValueError("a ListStep cannot be restricted to some sources")
        return self.src, self.dst, self.nbytes


Step = ShiftStep | ListStep


@dataclass(frozen=True)
class Pattern:
    """One collective algorithm on p ranks, as steps of transfers."""

    op: str
    algorithm: str
    p: int
    size: int
    steps: tuple[Step, ...] = field(repr=False)
    params: dict[str, int] = field(default_factory=dict)
    # Steps overlap in time: a rank's transfers may share channels with another rank's
    # transfers of an earlier or later step, so the pattern is priced on a timeline
    # (predict.timeline) rather than step by step.
    timeline: bool = False

    @property
    def shift_invariant(self) -> bool:
        """Every step is a :class:`ShiftStep`."""
        return all(isinstance(s, ShiftStep) for s in self.steps)

    @property
    def n_transfers(self) -> int:
        """Transfers over all steps."""
        return sum(s.size(self.p) for s in self.steps)

    def flat(self) -> tuple[Transfers, NDArray[np.int64]]:
        """Every transfer of every step, in step order, and the index of its step."""
        parts = [(k, s.transfers(self.p)) for k, s in enumerate(self.steps)]
        parts = [(k, t) for k, t in parts if t[0].size]
        if not parts:
            none = np.zeros(0, np.int64)
            return (none, none, none), none
        flat = tuple(np.concatenate([t[i] for _, t in parts]) for i in range(3))
        step = np.repeat(np.array([k for k, _ in parts]), [t[0].size for _, t in parts])
        return (flat[0], flat[1], flat[2]), step

    def largest_message(self) -> int:
        """Bytes of the largest single transfer (0 for a pattern without transfers)."""
        sizes = [
            (s.nbytes if s.offsets.size else 0)
            if isinstance(s, ShiftStep)
            else int(s.nbytes.max(initial=0))
            for s in self.steps
        ]
        return max(sizes, default=0)

    def describe(self) -> str:
        """One line, e.g. ``alltoall (block, block=8), 8 processes, 1 MiB per pair, 1 step``."""
        extra = "".join(f", {k}={v}" for k, v in self.params.items())
        steps = len(self.steps)
        return (
            f"{self.op} ({self.algorithm}{extra}), {self.p} processes,"
            f" {size_text(self.size)} {SIZE_MEANS[self.op]}, {steps}"
            f" step{'s' if steps != 1 else ''}"
        )

    def to_json(self) -> dict[str, Any]:
        """Plain dict (no transfer lists)."""
        return {
            "op": self.op,
            "algorithm": self.algorithm,
            "processes": self.p,
            "bytes": self.size,
            "steps": len(self.steps),
            "transfers": self.n_transfers,
            **self.params,
        }


def _shift(offsets: list[int] | NDArray[np.int64], nbytes: int) -> ShiftStep:
    d = np.asarray(offsets, dtype=np.int64)
    return ShiftStep(d[d != 0], nbytes)


def _pairs(
    src: NDArray[np.int64], dst: NDArray[np.int64], nbytes: int, p: int, root: int = 0
) -> ListStep:
    # Builders work on ranks relative to the root; shift them back to real ranks.
    return ListStep((src + root) % p, (dst + root) % p, np.full(src.size, nbytes, dtype=np.int64))


def alltoall_block(p: int, size: int, block: int = DEFAULT_BLOCK) -> Pattern:
    """Block All-to-all: batches of ``block`` Isend/Irecv, then Waitall.

    The algorithm of Peryshkova and Kurnosov 2018 (contention-aware placement). Batch ii
    (ii = 0, block, 2 block, ...) sends from every rank r to r - ii - i for i < min(block,
    p - ii): one step of offsets ii..ii + ss - 1. With block >= p every transfer is in one step.
    """
    if block < 1:
        raise PredictError(f"block {block}: give at least 1")
    steps = tuple(_shift(np.arange(ii, min(ii + block, p)), size) for ii in range(0, p, block))
    return Pattern("alltoall", "block", p, size, steps, {"block": min(block, p)})


def alltoall_pairwise(p: int, size: int) -> Pattern:
    """Pairwise (ring) All-to-all: in step k = 1..p-1, rank r sends to r + k."""
    steps = tuple(_shift([p - k], size) for k in range(1, p))
    return Pattern("alltoall", "pairwise", p, size, steps)


def _log2_steps(p: int) -> int:
    return max(0, math.ceil(math.log2(p))) if p > 1 else 0


def bcast_binomial(p: int, size: int, root: int = 0) -> Pattern:
    """Binomial-tree Bcast, nearest first: in step k, ranks v < 2^k send to v + 2^k.

    Ranks are relative to the root.
    """
    steps = []
    for k in range(_log2_steps(p)):
        v = np.arange(min(2**k, p - 2**k), dtype=np.int64)
        steps.append(_pairs(v, v + 2**k, size, p, root))
    return Pattern("bcast", "binomial", p, size, tuple(steps), {"root": root})


def bcast_binomial_halving(p: int, size: int, root: int = 0) -> Pattern:
    """Binomial-tree Bcast that sends farthest first: MPICH's and SimGrid's binomial_tree.

    With 2^L the smallest power of two >= p, step j has distance d = 2^(L-1-j): every rank
    v (relative to root) that is a multiple of 2 d sends to v + d when that is below p. The
    root's first message crosses half the ranks, its last goes to its neighbour.

    Priced on the timeline: ranks reach the last steps at different times (their data came
    over paths of different lengths), so a step's transfers need not share a channel at
    once. Step by step, a 192-rank Bcast on 16 nodes of 12 read 11 % over SMPI's time, its
    intra-node steps priced as if all of a node's transfers overlapped.
    """
    steps = []
    for k in reversed(range(_log2_steps(p))):
        d = 2**k
        v = np.arange(0, p - d, 2 * d, dtype=np.int64)
        steps.append(_pairs(v, v + d, size, p, root))
    return Pattern("bcast", "binomial-halving", p, size, tuple(steps), {"root": root}, True)


def bcast_binomial_fanout(p: int, size: int, root: int = 0) -> Pattern:
    """Open MPI 4.1's binomial Bcast: each rank sends to all its children at once.

    The tree is the nearest-first one (rank v's children are v + 2^j for 2^j > v), but a
    parent posts every child's send together and waits for them all (Open MPI's
    bcast_intra_generic with one segment), so the root's children share its NIC. Step k holds
    the sends of the ranks whose data arrived in step k - 1 (the root's in step 0); the steps
    overlap in time (a child forwards while its parent still sends to its siblings), which the
    timeline pricing follows.
    """
    steps = []
    senders = np.zeros(1, dtype=np.int64)
    while senders.size:
        src, dst = [], []
        for v in senders.tolist():
            j = 1 << max(0, int(v).bit_length())
            while v + j < p:
                src.append(v)
                dst.append(v + j)
                j <<= 1
        if not src:
            break
        s, d = np.array(src, dtype=np.int64), np.array(dst, dtype=np.int64)
        steps.append(_pairs(s, d, size, p, root))
        senders = d
    return Pattern("bcast", "binomial-fanout", p, size, tuple(steps), {"root": root}, True)


def reduce_binomial(p: int, size: int, root: int = 0) -> Pattern:
    """Binomial-tree Reduce: in step k, ranks v = 2^k mod 2^(k+1) send to v - 2^k."""
    steps = []
    for k in range(_log2_steps(p)):
        v = np.arange(2**k, p, 2 ** (k + 1), dtype=np.int64)
        steps.append(_pairs(v, v - 2**k, size, p, root))
    return Pattern("reduce", "binomial", p, size, tuple(steps), {"root": root})


def allreduce_recursive_doubling(p: int, size: int) -> Pattern:
    """Recursive-doubling Allreduce, with MPICH's fold for p not a power of two.

    With pof2 the largest power of two <= p and rem = p - pof2: the first 2 rem ranks pair
    up and the even one sends its data to the odd one; the pof2 remaining ranks exchange with
    partner (new rank XOR 2^k) in log2(pof2) steps; the odd ranks send the result back.
    """
    pof2 = 1 << (p.bit_length() - 1)
    rem = p - pof2
    real = np.concatenate((np.arange(1, 2 * rem, 2), np.arange(2 * rem, p))).astype(np.int64)
    steps: list[Step] = []
    evens = np.arange(0, 2 * rem, 2, dtype=np.int64)
    if rem:
        steps.append(_pairs(evens, evens + 1, size, p))
    for k in range(pof2.bit_length() - 1):
        new = np.arange(pof2, dtype=np.int64)
        steps.append(_pairs(real[new], real[new ^ (1 << k)], size, p))
    if rem:
        steps.append(_pairs(evens + 1, evens, size, p))
    return Pattern("allreduce", "recursive-doubling", p, size, tuple(steps))


def allreduce_ring(p: int, size: int) -> Pattern:
    """Ring Allreduce: reduce-scatter then allgather, 2 (p - 1) steps of one chunk to r + 1.

    Chunks are ceil(size / p) bytes (the largest chunk paces the ring).
    """
    chunk = -(-size // p)
    steps = tuple(_shift([p - 1], chunk) for _ in range(2 * (p - 1)))
    return Pattern("allreduce", "ring", p, size, steps)


def allgather_ring(p: int, size: int) -> Pattern:
    """Ring Allgather: p - 1 steps, each rank passes one block of ``size`` bytes to r + 1."""
    steps = tuple(_shift([p - 1], size) for _ in range(p - 1))
    return Pattern("allgather", "ring", p, size, steps)


def gather_linear(p: int, size: int, root: int = 0) -> Pattern:
    """Linear Gather: every other rank sends ``size`` bytes to the root, all at once."""
    v = np.arange(1, p, dtype=np.int64)
    steps = (_pairs(v, np.zeros_like(v), size, p, root),) if p > 1 else ()
    # On the timeline, where a transfer knows that nothing flows the other way (see
    # predict.timeline).
    return Pattern("gather", "linear", p, size, steps, {"root": root}, True)


# op -> algorithm -> builder(p, size, **params); the first algorithm is the default.
ALGORITHMS: dict[str, dict[str, Callable[..., Pattern]]] = {
    "alltoall": {"block": alltoall_block, "pairwise": alltoall_pairwise},
    "bcast": {
        "binomial": bcast_binomial,
        "binomial-halving": bcast_binomial_halving,
        "binomial-fanout": bcast_binomial_fanout,
    },
    "reduce": {"binomial": reduce_binomial},
    "allreduce": {"recursive-doubling": allreduce_recursive_doubling, "ring": allreduce_ring},
    "allgather": {"ring": allgather_ring},
    "gather": {"linear": gather_linear},
}
ROOTED = ("bcast", "reduce", "gather")


def build(
    op: str,
    p: int,
    size: int,
    algorithm: str | None = None,
    block: int | None = None,
    root: int = 0,
) -> Pattern:
    """The pattern of ``op`` with ``algorithm`` (default: the first listed in ALGORITHMS).

    Args:
        op: alltoall, bcast, reduce, allreduce, allgather or gather.
        p: number of processes.
        size: bytes, as the module docstring says per operation.
        algorithm: one of ALGORITHMS[op]; None for the default.
        block: batch size of the block All-to-all (default DEFAULT_BLOCK).
        root: root rank of bcast, reduce and gather.

    Raises:
        PredictError: unknown op or algorithm, or a parameter out of range.
    """
    if op not in ALGORITHMS:
        raise PredictError(f"operation {op!r}: choose one of {', '.join(ALGORITHMS)}")
    algos = ALGORITHMS[op]
    name = algorithm or next(iter(algos))
    if name not in algos:
        raise PredictError(f"{op} algorithm {name!r}: choose one of {', '.join(algos)}")
    if p < 1 or size < 0:
        raise PredictError(f"{p} processes of {size} bytes: give p >= 1 and size >= 0")
    if op in ROOTED:
        if not 0 <= root < p:
            raise PredictError(f"root {root}: give a rank in 0..{p - 1}")
        return algos[name](p, size, root=root)
    if name == "block":
        return alltoall_block(p, size, DEFAULT_BLOCK if block is None else block)
    return algos[name](p, size)
