"""Exchange patterns: step counts, transfer counts, and that each algorithm does its job."""

from __future__ import annotations

import math

import numpy as np
import pytest

from commscope.errors import PredictError
from commscope.predict import patterns
from commscope.predict.patterns import ListStep, ShiftStep, build


def pairs(pattern: patterns.Pattern, k: int) -> set[tuple[int, int]]:
    src, dst, _ = pattern.steps[k].transfers(pattern.p)
    return set(zip(src.tolist(), dst.tolist(), strict=True))


def flow(pattern: patterns.Pattern, start: list[set[int]]) -> list[set[int]]:
    """What each rank holds after the steps, when every transfer carries all its sender has."""
    have = [set(s) for s in start]
    for step in pattern.steps:
        src, dst, _ = step.transfers(pattern.p)
        sent = [set(have[s]) for s in src.tolist()]
        for d, data in zip(dst.tolist(), sent, strict=True):
            have[d] |= data
    return have


@pytest.mark.parametrize(
    ("p", "block", "sizes"),
    [
        (8, 3, [2 * 8, 3 * 8, 2 * 8]),  # offsets {1,2}, {3,4,5}, {6,7}: self left out of the first
        (8, 8, [7 * 8]),
        (8, 100, [7 * 8]),
        (5, 1, [0, 5, 5, 5, 5]),  # block 1: the first step is the rank's copy to itself
        (1, 4, [0]),
    ],
)
def test_block_alltoall_transfer_counts(p: int, block: int, sizes: list[int]) -> None:
    pat = build("alltoall", p, 1000, block=block)
    assert len(pat.steps) == math.ceil(p / block) == len(sizes)
    assert [s.size(p) for s in pat.steps] == sizes
    assert pat.n_transfers == p * (p - 1)
    assert pat.shift_invariant


def test_block_alltoall_follows_the_pseudo_code() -> None:
    p, block = 7, 3
    pat = build("alltoall", p, 64, block=block)
    for k, ii in enumerate(range(0, p, block)):
        ss = min(block, p - ii)
        want = {(r, (r - i - ii + p) % p) for r in range(p) for i in range(ss)}
        assert pairs(pat, k) == {(s, d) for s, d in want if s != d}
        # Each Isend to dst has the matching Irecv at dst from (dst + i + ii) % p.
        recv = {((r + i + ii) % p, r) for r in range(p) for i in range(ss)}
        assert pairs(pat, k) == {(s, d) for s, d in recv if s != d}
    all_pairs = set().union(*(pairs(pat, k) for k in range(len(pat.steps))))
    assert all_pairs == {(a, b) for a in range(p) for b in range(p) if a != b}


def test_block_equal_to_p_puts_everything_in_one_step() -> None:
    pat = build("alltoall", 12, 1 << 20, block=12)
    assert len(pat.steps) == 1 and pat.steps[0].size(12) == 12 * 11


def test_pairwise_alltoall() -> None:
    pat = build("alltoall", 6, 10, "pairwise")
    assert len(pat.steps) == 5
    for k in range(5):
        assert pairs(pat, k) == {(r, (r + k + 1) % 6) for r in range(6)}


@pytest.mark.parametrize("p", [1, 2, 3, 5, 8, 9, 16, 33])
@pytest.mark.parametrize("root", [0, 1])
def test_binomial_bcast_reaches_everyone_in_ceil_log2_steps(p: int, root: int) -> None:
    root = root % p
    pat = build("bcast", p, 100, root=root)
    assert len(pat.steps) == math.ceil(math.log2(p)) if p > 1 else len(pat.steps) == 0
    assert pat.n_transfers == p - 1
    have = flow(pat, [{0} if r == root else set() for r in range(p)])
    assert all(h == {0} for h in have)


def mpich_bcast_sends(p: int, root: int) -> dict[int, set[tuple[int, int]]]:
    """Per distance, the sends of MPICH's binomial Bcast loop (receive, then halve the mask)."""
    sends: dict[int, set[tuple[int, int]]] = {}
    for rank in range(p):
        rel = (rank - root) % p
        mask = 1
        while mask < p and not rel & mask:
            mask <<= 1
        mask >>= 1
        while mask > 0:
            if rel + mask < p:
                sends.setdefault(mask, set()).add((rank, (rank + mask) % p))
            mask >>= 1
    return sends


@pytest.mark.parametrize("p", [2, 3, 5, 8, 12, 64, 192])
@pytest.mark.parametrize("root", [0, 3])
def test_halving_bcast_is_mpich_binomial_farthest_first(p: int, root: int) -> None:
    root = root % p
    pat = build("bcast", p, 100, "binomial-halving", root=root)
    want = mpich_bcast_sends(p, root)
    distances = sorted(want, reverse=True)
    assert [pairs(pat, k) for k in range(len(pat.steps))] == [want[d] for d in distances]
    assert pat.n_transfers == p - 1
    assert all(h == {0} for h in flow(pat, [{0} if r == root else set() for r in range(p)]))


@pytest.mark.parametrize("p", [2, 3, 6, 8, 13])
def test_binomial_reduce_gathers_everything_at_the_root(p: int) -> None:
    pat = build("reduce", p, 100, root=2 % p)
    assert len(pat.steps) == math.ceil(math.log2(p))
    assert pat.n_transfers == p - 1
    assert flow(pat, [{r} for r in range(p)])[2 % p] == set(range(p))


@pytest.mark.parametrize(("p", "steps"), [(8, 3), (6, 4), (5, 4), (2, 1), (1, 0)])
def test_recursive_doubling_allreduce(p: int, steps: int) -> None:
    pat = build("allreduce", p, 100)
    assert len(pat.steps) == steps
    assert all(h == set(range(p)) for h in flow(pat, [{r} for r in range(p)]))


def test_ring_allreduce_and_allgather() -> None:
    ar = build("allreduce", 6, 1000, "ring")
    assert len(ar.steps) == 10 and all(isinstance(s, ShiftStep) for s in ar.steps)
    assert {int(s.nbytes) for s in ar.steps} == {167}  # ceil(1000 / 6)
    ag = build("allgather", 6, 1000)
    assert len(ag.steps) == 5 and pairs(ag, 0) == {(r, (r + 1) % 6) for r in range(6)}


def test_linear_gather() -> None:
    pat = build("gather", 5, 10, root=3)
    assert len(pat.steps) == 1 and isinstance(pat.steps[0], ListStep)
    assert pairs(pat, 0) == {(r, 3) for r in range(5) if r != 3}


def test_shift_step_restricted_to_sources() -> None:
    step = ShiftStep(np.array([1, 2]), 8)
    src, dst, nb = step.transfers(6, np.array([0, 3]))
    assert src.tolist() == [0, 0, 3, 3] and dst.tolist() == [5, 4, 2, 1]
    assert nb.tolist() == [8] * 4


@pytest.mark.parametrize(
    ("kwargs", "text"),
    [
        ({"op": "scatter"}, "operation 'scatter'"),
        ({"op": "alltoall", "algorithm": "bruck"}, "alltoall algorithm 'bruck'"),
        ({"op": "bcast", "root": 9}, "root 9"),
        ({"op": "alltoall", "block": 0}, "block 0"),
    ],
)
def test_build_errors(kwargs: dict[str, object], text: str) -> None:
    args = {"p": 4, "size": 10, **kwargs}
    with pytest.raises(PredictError, match=text):
        build(**args)  # type: ignore[arg-type]


def openmpi_bmtree_children(v: int, p: int) -> list[int]:
    """Open MPI 4.1's binomial tree (ompi_coll_base_topo_build_bmtree, root 0): v XOR mask
    for every mask from the next power of two above v up to p."""
    mask = 1
    while mask <= v:
        mask <<= 1
    out = []
    while mask < p and v ^ mask < p:
        out.append(v ^ mask)
        mask <<= 1
    return out


def test_fanout_bcast_by_hand_for_four_and_eight() -> None:
    four = build("bcast", 4, 100, "binomial-fanout")
    # The root sends to 1 and 2 at once; 1 forwards to 3 once it has the data.
    assert [pairs(four, k) for k in range(len(four.steps))] == [{(0, 1), (0, 2)}, {(1, 3)}]
    eight = build("bcast", 8, 100, "binomial-fanout")
    assert [pairs(eight, k) for k in range(len(eight.steps))] == [
        {(0, 1), (0, 2), (0, 4)},
        {(1, 3), (1, 5), (2, 6)},
        {(3, 7)},
    ]
    assert four.timeline and eight.timeline


@pytest.mark.parametrize("p", [2, 3, 5, 8, 12, 64, 192])
@pytest.mark.parametrize("root", [0, 3])
def test_fanout_bcast_is_openmpi_binomial_tree(p: int, root: int) -> None:
    root = root % p
    pat = build("bcast", p, 100, "binomial-fanout", root=root)
    got: dict[int, set[int]] = {}
    for k in range(len(pat.steps)):
        for s, d in pairs(pat, k):
            got.setdefault((s - root) % p, set()).add((d - root) % p)
    want = {v: set(c) for v in range(p) if (c := openmpi_bmtree_children(v, p))}
    assert got == want
    # Every rank's sends sit in one step: the step after the one that brought its data.
    assert all(h == {0} for h in flow(pat, [{0} if r == root else set() for r in range(p)]))
    assert pat.n_transfers == p - 1
