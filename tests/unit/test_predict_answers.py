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


def waits_of(
    stream_bytes: int, waits_s: list[float], back: bool = False, kind: str = "third"
) -> QueueWait:
    kind = "back" if back else kind
    return QueueWait(stream_bytes, 30e-6, 40e-6, np.sort(np.array(waits_s)), B, kind)


def constant(wait_s: float, sizes=(1 << 18, 1 << 20)) -> answers.AnswerWaits:
    found = answers.AnswerWaits.of(TCP, [waits_of(m, [wait_s] * 20) for m in sizes])
    assert found is not None
    return found


def by_step(which, op: str, algorithm: str, nodes: int, per_node: int, size: int):
    """Per step, the transfers ``which`` picks, as (src, dst) pairs."""
    pattern = predict.build(op, nodes * per_node, size, algorithm)
    placement = predict.regular(MODEL, nodes, per_node)
    t = answers.flat_transfers(pattern)
    picked = which(placement.node, t, constant(0.01).rendezvous(t.nbytes))
    steps: dict[int, set[tuple[int, int]]] = {}
    for k, s, d in zip(t.step[picked], t.src[picked], t.dst[picked], strict=True):
        steps.setdefault(int(k), set()).add((int(s), int(d)))
    return steps


def racing(op: str, algorithm: str, nodes: int, per_node: int, size: int = 1 << 20):
    """Per step, the transfers whose answers race."""
    return by_step(answers.racing, op, algorithm, nodes, per_node, size)


def test_every_hop_of_a_ring_between_nodes_races_its_receivers_stream():
    # 4x1: each rank sends on while its left neighbour's request comes.
    found = racing("allreduce", "ring", 4, 1)
    assert len(found) == 6
    assert all(hops == {(0, 1), (1, 2), (2, 3), (3, 0)} for hops in found.values())
    # 2x2: the hops 1 -> 2 and 3 -> 0 cross; each receiver's node streams the other one.
    found = racing("allreduce", "ring", 2, 2)
    assert all(hops == {(1, 2), (3, 0)} for hops in found.values())


def test_a_ring_hop_with_one_rank_per_node_is_answered_by_the_streaming_rank_itself():
    def streamer_answers(nodes: int, per_node: int):
        race = racing("allgather", "ring", nodes, per_node)
        own = by_step(answers.streaming_receiver, "allgather", "ring", nodes, per_node, 1 << 20)
        return {k: hops & own.get(k, set()) for k, hops in race.items()}

    # 4x1: every receiver sends on to its right neighbour itself.
    assert all(hops == {(0, 1), (1, 2), (2, 3), (3, 0)} for hops in streamer_answers(4, 1).values())
    # 2x2: rank 2 receives from 1 while its node-mate 3 streams to 0: a third rank's answer.
    assert all(hops == set() for hops in streamer_answers(2, 2).values())


def test_the_streaming_ranks_own_waits_price_its_answers_where_measured():
    ring = predict.build("allgather", 4, 1 << 20, "ring")
    sizes = (1 << 18, 1 << 20)
    third = [waits_of(m, [0.01] * 20) for m in sizes]
    own = [waits_of(m, [0.04] * 20, kind="streamer") for m in sizes]
    both = answers.AnswerWaits.of(TCP, third + own)
    assert both is not None and both.streamer and len(both.waits) == 2

    def priced(per_node: int, found: answers.AnswerWaits) -> float:
        nodes = 4 // per_node
        placement = predict.regular(MODEL, nodes, per_node)
        return answers.cost_s(MODEL, placement, ring, COST, found)

    # 4x1's answers all come from streaming ranks: priced as if only their waits were measured.
    assert priced(1, both) == priced(1, constant(0.04))
    assert priced(1, both) > 2 * priced(1, constant(0.01))
    # 2x2's come from a rank beside the stream: the streamer's waits do not touch them.
    assert priced(2, both) == priced(2, constant(0.01))
    # A size the streamer kind did not measure falls back to a third rank's waits.
    assert both.waits_s(1 << 20, streaming=True) == pytest.approx(np.full(20, 0.04))
    only_large = answers.AnswerWaits.of(TCP, [*third, own[1]])
    assert only_large is not None
    assert only_large.waits_s(1 << 18, streaming=True) == pytest.approx(np.full(20, 0.01))


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


def test_the_drawn_waits_are_what_the_price_chains_and_none_where_nothing_races():
    # The same step as above: 0 -> 1's answer races, 1 -> 2's does not (no third stream).
    m = 1 << 20
    step = ListStep(np.array([0, 1]), np.array([1, 2]), np.array([m, m]))
    pattern = Pattern("alltoall", "list", 3, m, (step,))
    placement = predict.regular(MODEL, 3, 1)
    drawn = answers.draws(MODEL, placement, pattern, COST, constant(0.03))
    assert drawn is not None and drawn.race.tolist() == [True, False]
    assert drawn.extra.shape == (answers.DRAWS, 2) and not drawn.extra[:, 1].any()
    # Won (none) or lost: the wait, or what is left of 1 -> 2's answered part if less.
    lost = drawn.extra[:, 0] > 0
    assert drawn.extra[:, 0].max() == pytest.approx(0.03) and 0.3 < lost.mean() < 0.7
    # One step, one racing transfer alongside an equal one: the price is the mean wait drawn.
    found = answers.cost_s(MODEL, placement, pattern, COST, constant(0.03))
    assert found == pytest.approx(drawn.extra[:, 0].mean())
    tree = predict.build("bcast", 4, m, "binomial")
    assert answers.draws(MODEL, predict.regular(MODEL, 4, 1), tree, COST, constant(0.03)) is None


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


def test_an_answer_meets_what_is_left_of_the_racing_part_when_it_comes():
    # 0 -> 1 while node 1 streams 1 -> 2, both 128 KiB: the racing part is 64 KiB and headers.
    # Its queue measured as deep as that whole part, the answer that loses the race comes at
    # a uniform moment of it and meets what is left: R / 2 on average, so R / 4 over the race.
    m = 1 << 17
    rest_s = (m + TCP.headers_bytes - TCP.bytes) / B
    found = constant(rest_s, sizes=(m,))
    assert found.answered_s(m) == pytest.approx(rest_s)
    assert found.answered_s(1 << 15) == math.inf  # no stream measured near: unpriced
    step = ListStep(np.array([0, 1]), np.array([1, 2]), np.array([m, m]))
    pattern = Pattern("alltoall", "list", 3, m, (step,))
    cost = answers.cost_s(MODEL, predict.regular(MODEL, 3, 1), pattern, COST, found)
    share = answers.RACE_SHARE
    # Per draw: the wait is rest_s * U in a share of the draws, 0 in the rest.
    sd = rest_s * math.sqrt(share / 3 - (share / 2) ** 2) / math.sqrt(answers.DRAWS)
    assert cost == pytest.approx(share * rest_s / 2, abs=4 * sd)
    assert cost < share * rest_s - 4 * sd  # a full queue for the whole part would cost that
    # A long racing part (1 MiB messages) leaves the steady queue's wait almost whole.
    big = 1 << 20
    long = ListStep(np.array([0, 1]), np.array([1, 2]), np.array([big, big]))
    deep = answers.cost_s(
        MODEL,
        predict.regular(MODEL, 3, 1),
        Pattern("alltoall", "list", 3, big, (long,)),
        COST,
        constant(0.02, sizes=(big,)),
    )
    left_s = (big + TCP.headers_bytes - TCP.bytes) / B
    expected = share * (0.02 - 0.02**2 / (2 * left_s))  # E[min(w, U * left_s)], w < left_s
    assert deep == pytest.approx(expected, rel=0.15)


def test_nothing_prices_answers_without_a_limit_or_measured_waits():
    assert answers.AnswerWaits.of(None, [waits_of(1 << 20, [0.01])]) is None
    assert answers.AnswerWaits.of(TCP, []) is None
    assert answers.AnswerWaits.of(TCP, [waits_of(1 << 20, [])]) is None  # no samples


def with_back(wait_s: float, back_s: float, sizes=(1 << 18, 1 << 20)) -> answers.AnswerWaits:
    """Waits behind a node's queue and, as deep as ``back_s``, behind a sender's own stream."""
    measured = [waits_of(m, [wait_s] * 20) for m in sizes]
    measured += [waits_of(m, [back_s] * 20, back=True) for m in sizes]
    found = answers.AnswerWaits.of(TCP, measured)
    assert found is not None
    return found


def exchanging(op: str, algorithm: str, nodes: int, per_node: int, size: int = 1 << 20):
    """Per step, the transfers that are half of a pair exchange between nodes."""
    return by_step(answers.exchanging, op, algorithm, nodes, per_node, size)


def test_the_waits_of_each_kind_go_to_their_own_rule():
    both = with_back(0.02, 0.13)
    assert [w.back for w in both.waits] == [False, False]
    assert [w.back for w in both.back] == [True, True]
    only_back = answers.AnswerWaits.of(TCP, [waits_of(1 << 20, [0.13] * 20, back=True)])
    assert only_back is not None and only_back.waits_s(1 << 20) is None


def test_the_answer_behind_a_fresh_stream_meets_the_deepest_connection_measured():
    both = with_back(0.02, 0.13)  # 0.13 s at 6.25 MB/s: 812 KB, less than 1 MiB's rest
    assert both.behind_own_stream_s(1 << 20) == pytest.approx(np.full(20, 0.13))
    # 256 KiB messages hand the connection only their 192 KiB after the first fragment.
    rest = (1 << 18) + TCP.headers_bytes - TCP.bytes
    assert both.behind_own_stream_s(1 << 18) == pytest.approx(np.full(20, rest / B))
    assert constant(0.02).behind_own_stream_s(1 << 20) is None  # not measured
    assert both.first_fragment_s() == pytest.approx(TCP.bytes / B)


def test_pair_exchanges_between_nodes_whose_links_carry_them_alone():
    # The pairwise All-to-all's step of shift 2 exchanges; its shifts 1 and 3 do not.
    found = exchanging("alltoall", "pairwise", 4, 1)
    assert list(found.values()) == [{(0, 2), (2, 0), (1, 3), (3, 1)}]
    # Recursive doubling exchanges at every step; on 2x2 its inter-node step shares links.
    assert len(exchanging("allreduce", "recursive-doubling", 4, 1)) == 2
    assert exchanging("allreduce", "recursive-doubling", 2, 2) == {}
    assert exchanging("allreduce", "ring", 4, 1) == {}


def test_an_exchange_whose_sender_arrives_late_waits_behind_its_peers_stream():
    # Step 0: 0 -> 1 (50 ms) while rank 2 idles. Step 1: 0 and 2 exchange, 100 ms each way.
    # Rank 0 arrives 50 ms after rank 2: 0 -> 2 waits 30 ms behind 2's stream to 0.
    t = answers.FlatTransfers(
        np.array([0, 0, 2]), np.array([1, 2, 0]), np.full(3, 1 << 20), np.array([0, 1, 1])
    )
    took = np.array([0.05, 0.1, 0.1])
    behind = np.array([[0.0, 0.03, 0.03]])
    none = np.zeros((1, 3))
    assert answers.chain(t, took, none, 3)[0] == pytest.approx(0.15)
    assert answers.chain(t, took, none, 3, behind, 0.01)[0] == pytest.approx(0.18)
    # Within the first fragment's time both answer at once: no wait.
    assert answers.chain(t, took, none, 3, behind, 0.06)[0] == pytest.approx(0.15)


def test_the_pairwise_all_to_all_pays_for_its_exchanges_only_where_ranks_arrive_apart():
    pairwise = predict.build("alltoall", 4, 1 << 20, "pairwise")
    four = predict.regular(MODEL, 4, 1)
    plain = predict.predict(MODEL, four, pairwise, COST, constant(0.02))
    deep = predict.predict(MODEL, four, pairwise, COST, with_back(0.02, 0.13))
    # Its shifts' racing answers set ranks 20 ms apart in some draws; the exchange then waits.
    assert deep.answer_wait_s > plain.answer_wait_s
    # No more than every exchange waiting 130 ms, chained through the last step.
    assert deep.answer_wait_s - plain.answer_wait_s < 2 * 0.13
    # With no racing wait, ranks arrive together at its exchange: nothing more to pay.
    lockstep = predict.predict(MODEL, four, pairwise, COST, with_back(0.0, 0.13))
    assert lockstep.answer_wait_s == 0.0
    # Recursive doubling exchanges in lockstep at every step: its price does not move.
    rd = predict.build("allreduce", 4, 1 << 20, "recursive-doubling")
    assert predict.predict(MODEL, four, rd, COST, with_back(0.02, 0.13)).answer_wait_s == 0.0
