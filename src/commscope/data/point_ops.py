"""The op names of Points and the family each belongs to.

A Point is one size of one series between ranks. Besides the pair-by-pair p2p series
(pingpong, bw, bibw, ...), three families of Points have their own kinds: the all-pairs matrix
and bisection, the one-sided (RMA) series and the multi-pair bandwidth (mbw).
"""

from __future__ import annotations

P2P = "p2p"  # the family of the pair-by-pair series, and of every Point kept by kind p2p

# Points of every rank paired with others (kinds/matrix.py), not of the p2p series.
PAIRED_OPS = ("matrix_lat", "matrix_bw", "bisection_bw")

MBW_OP_PREFIX = "mbw_k"  # op of k pairs sending at once: "mbw_k4" (osu_mbw_mr's method)


def mbw_pairs(op: str) -> int | None:
    """The pair count k of a multi-pair bandwidth op "mbw_k<k>"; None for every other op."""
    k = op.removeprefix(MBW_OP_PREFIX)
    return int(k) if k != op and k.isdigit() else None


# One-sided (MPI-3 RMA) series are Points named OP_MODE_SYNC: MPI_Put, MPI_Get or
# MPI_Accumulate, latency or bandwidth, under fence, passive-target lock + flush, or PSCW.
RMA_OPERATIONS = ("put", "get", "acc")
RMA_MODES = ("lat", "bw")
RMA_SYNCS = ("fence", "lock", "pscw")
RMA_OPS = tuple(f"{o}_{m}_{s}" for o in RMA_OPERATIONS for m in RMA_MODES for s in RMA_SYNCS)


def is_rma(op: str) -> bool:
    """Whether a Point's op is a one-sided series (kept out of the p2p kind)."""
    return op in RMA_OPS


def family(op: str) -> str:
    """The family of a Point's op: ``paired`` (matrix, bisection), ``rma``, ``mbw`` or ``p2p``.

    Each family has its own kind; only ``p2p`` points are pair-by-pair curves.
    """
    if op in PAIRED_OPS:
        return "paired"
    if is_rma(op):
        return "rma"
    return "mbw" if mbw_pairs(op) is not None else P2P
