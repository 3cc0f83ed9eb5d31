"""Rendezvous answers that race a busy node's queue: which wait, and what they add, chained."""

from __future__ import annotations

import math

import numpy as np
import pytest

from commscope import predict
from commscope.analysis.queue import QueueWait
from commscope.data.mpi_config import EagerLimit
from commscope.predict import answers
from commscope.predict.cost import HockneyCost
from commscope.predict.model import ClusterModel, Link
from commscope.predict.patterns import ListStep, Pattern

B = 6.25e6  # 50 mbit
TCP = EagerLimit("Open MPI", "tcp", "inter-node", "btl_tcp_eager_limit", 65536, "default")
MODEL = ClusterModel(
    name="eight",
    node_names=tuple(f"n{i}" for i in range(8)),
    sockets=1,
    cores=2,
    memory=Link(bandwidth_Bps=5e9),
    nic=Link(bandwidth_Bps=B),
)
COST = HockneyCost.from_model(MODEL)


def waits_of(stream_bytes: int, waits_s: list[float]) -> QueueWait:
    return QueueWait(stream_bytes, 30e-6, 40e-6, np.sort(np.array(waits_s)), B)


def constant(wait_s: float, sizes=(1 << 18, 1 << 20)) -> answers.AnswerWaits:
    found = answers.AnswerWaits.of(TCP, [waits_of(m, [wait_s] * 20) for m in sizes])
    assert found is not None
    return found


def racing(op: str, algorithm: str, nodes: int, per_node: int, size: int = 1 << 20):
    """Per step, the transfers whose answers race, as (src, dst) pairs."""
    pattern = predict.build(op, nodes * per_node, size, algorithm)
    placement = predict.regular(MODEL, nodes, per_node)
    t = answers._transfers(pattern)
    race = answers.racing(placement.node, t, constant(0.01).rendezvous(t.nbytes))
    steps: dict[int, set[tuple[int, int]]] = {}
    for k, s, d in zip(t.step[race], t.src[race], t.dst[race], strict=True):
        steps.setdefault(int(k), set()).add((int(s), int(d)))
    return steps


def test_every_hop_of_a_ring_between_nodes_races_its_receivers_stream():
    # 4x1: each rank sends on while its left neighbour's request comes.
    found = racing("allreduce", "ring", 4, 1)
    assert len(found) == 6
    assert all(hops == {(0, 1), (1, 2), (2, 3), (3, 0)} for hops in found.values())
    # 2x2: the hops 1 -> 2 and 3 -> 0 cross; each receiver's node streams the other one.
    found = racing("allreduce", "ring", 2, 2)
    assert all(hops == {(1, 2), (3, 0)} for hops in found.values())


def test_pair_exchanges_and_trees_race_nothing():
    # Recursive doubling on 4x1: every stream from the receiver goes back to the sender.
    assert racing("allreduce", "recursive-doubling", 4, 1) == {}
    # On 2x2 the second step's answers do race, but the sender's link carries the other
    # pair's data meanwhile: no wait idles it.
    assert racing("allreduce", "recursive-doubling", 2, 2) == {}
    for op, algorithm in (("bcast", "binomial"), ("reduce", "binomial"), ("gather", "linear")):
        assert racing(op, algorithm, 4, 1) == {}


def test_the_pairwise_all_to_all_races_its_shifts_but_not_its_exchange():
    found = racing("alltoall", "pairwise", 4, 1)
    # Its steps send to rank + 1, + 2 and + 3 (some order): the step of + 2 is an exchange.
    shifts = [{(d - s) % 4 for s, d in hops} for hops in found.values()]
    assert sorted(map(sorted, shifts)) == [[1], [3]]


def test_messages_sent_eagerly_race_nothing():
    # 256 KiB in 4 blocks of 64 KiB: with 128 bytes of headers they exceed the limit, and so race.
    assert racing("allreduce", "ring", 4, 1, 1 << 18)
    assert racing("allreduce", "ring", 4, 1, 1 << 17) == {}  # 32 KiB blocks go at once


def test_one_racing_answer_adds_half_its_wait_and_the_draws_are_reproducible():
    # Three nodes, one step: 0 -> 1 while node 1 streams to node 2. Only 0 -> 1's answer
    # races; it waits 30 ms in about half the draws, in step with 1 -> 2's equal transfer.
    m = 1 << 20
    step = ListStep(np.array([0, 1]), np.array([1, 2]), np.array([m, m]))
    pattern = Pattern("alltoall", "list", 3, m, (step,))
    placement = predict.regular(MODEL, 3, 1)
    wait = 0.03
    found = answers.cost_s(MODEL, placement, pattern, COST, constant(wait))
    sd = wait * math.sqrt(answers.RACE_SHARE * (1 - answers.RACE_SHARE) / answers.DRAWS)
    assert found == pytest.approx(answers.RACE_SHARE * wait, abs=4 * sd)
    assert 0 < found < wait
    assert answers.cost_s(MODEL, placement, pattern, COST, constant(wait)) == found
    assert answers.cost_s(MODEL, placement, pattern, COST, constant(0.0)) == pytest.approx(
        0.0, abs=1e-12
    )


def test_waits_chain_so_a_ring_across_every_link_pays_more():
    ring = predict.build("allreduce", 4, 1 << 20, "ring")
    four = predict.predict(MODEL, predict.regular(MODEL, 4, 1), ring, COST, constant(0.02))
    two = predict.predict(MODEL, predict.regular(MODEL, 2, 2), ring, COST, constant(0.02))
    plain = predict.predict(MODEL, predict.regular(MODEL, 4, 1), ring, COST)
    # Six steps, half the answers waiting 20 ms each, chained: more than one step's expected
    # wait per step is not possible, less than half of it would be no chaining at all.
    assert 6 * 0.01 < four.answer_wait_s < 6 * 0.02
    assert 0 < two.answer_wait_s < four.answer_wait_s
    assert four.time_s == pytest.approx(plain.time_s + four.answer_wait_s)
    assert four.to_json()["answer_wait_s"] == four.answer_wait_s
    assert plain.answer_wait_s == 0.0 and plain.to_json()["answer_wait_s"] == 0.0
    both = [predict.regular(MODEL, 4, 1), predict.regular(MODEL, 2, 2)]
    ranked = predict.rank_placements(MODEL, ring, COST, both, constant(0.02))
    assert [pr.placement.label for pr in ranked] == ["2x2", "4x1"]


def test_only_a_stream_of_messages_as_large_or_up_to_half_as_large_prices_them():
    ring = predict.build("allreduce", 4, 1 << 20, "ring")  # 256 KiB messages
    far = constant(0.02, sizes=(1 << 16, 1 << 22))  # 64 KiB and 4 MiB streams: 4x and 16x off
    assert far.waits_s(1 << 18) is None
    pl = predict.regular(MODEL, 4, 1)
    assert predict.predict(MODEL, pl, ring, COST, far).answer_wait_s == 0.0
    near = constant(0.02, sizes=(1 << 17,))  # 128 KiB: within two, and no larger
    assert predict.predict(MODEL, pl, ring, COST, near).answer_wait_s > 0
    # A stream of larger messages keeps a fuller queue: its waits would overstate these.
    larger = constant(0.02, sizes=(1 << 19,))
    assert larger.waits_s(1 << 18) is None
    assert predict.predict(MODEL, pl, ring, COST, larger).answer_wait_s == 0.0


def test_no_wait_outlasts_what_the_racing_transfer_sends_once_answered():
    # The racing transfer's first fragment (up to the limit) left with its request, as the
    # answered one's did: only the rest can stand ahead of the answer.
    found = constant(0.02, sizes=(1 << 16, 1 << 17))
    answered = (1 << 16) + TCP.headers_bytes - TCP.bytes  # 64 KiB: its headers, no more
    assert found.waits_s(1 << 16) == pytest.approx(np.full(20, answered / B))
    rest_s = ((1 << 17) + TCP.headers_bytes - TCP.bytes) / B  # 128 KiB: 64 KiB and headers
    assert rest_s < 0.02
    assert found.waits_s(1 << 17) == pytest.approx(np.full(20, rest_s))
    assert constant(0.02).waits_s(1 << 20) == pytest.approx(np.full(20, 0.02))  # far above
    ring = predict.build("allreduce", 4, 1 << 18, "ring")  # 64 KiB messages, just above
    pl = predict.regular(MODEL, 4, 1)
    assert predict.predict(MODEL, pl, ring, COST, found).answer_wait_s < 6 * answered / B


def test_nothing_prices_answers_without_a_limit_or_measured_waits():
    assert answers.AnswerWaits.of(None, [waits_of(1 << 20, [0.01])]) is None
    assert answers.AnswerWaits.of(TCP, []) is None
    assert answers.AnswerWaits.of(TCP, [waits_of(1 << 20, [])]) is None  # no samples
