"""`predict` says when messages go by rendezvous between nodes, and prices their answers' waits."""

from __future__ import annotations

import json

import pytest

from commscope.data.mpi_config import RUN_DATA_KIND, EagerLimit, ProtocolLimits
from commscope.data.record_parse import record_from_dict
from commscope.data.records import Queue
from commscope.data.store import Store
from commscope.predict import build
from tests.synthetic_contention import as_measured, records, store_run

B = 6.25e6  # 50 mbit
SIZES = [1 << 16, 1 << 18, 1 << 20]
TCP = EagerLimit("Open MPI", "tcp", "inter-node", "btl_tcp_eager_limit", 65536, "default")
VADER = EagerLimit("Open MPI", "vader", "intra-node", "btl_vader_eager_limit", 4096, "default")


@pytest.mark.parametrize(
    ("op", "algorithm", "size", "largest"),
    [
        ("allreduce", "ring", 1 << 20, 1 << 18),  # p blocks of the buffer
        ("allgather", "ring", 1 << 20, 1 << 20),  # each rank's contribution
        ("alltoall", "block", 1 << 16, 1 << 16),  # per pair
        ("gather", "linear", 1000, 1000),
    ],
)
def test_the_largest_message_is_what_one_transfer_carries(op, algorithm, size, largest):
    assert build(op, 4, size, algorithm).largest_message() == largest


def test_one_rank_sends_no_message():
    assert build("allreduce", 1, 1 << 20, "ring").largest_message() == 0


def queue_record(
    stream_bytes: int, wait_s: float, back: bool = False, streamer: bool = False
) -> Queue:
    """Answers that waited ``wait_s`` behind a stream of ``stream_bytes`` messages (30 us idle):
    a third rank's, or the stream's sender's to its receiver (``back``) or to another rank."""
    rec = record_from_dict(
        {
            "type": "queue", "bytes": stream_bytes, "stream": [0, 2],
            "ping": [2, 0] if back else [3, 0] if streamer else [3, 1],
            "ping_bytes": 8, "messages": 10, "stream_s": [10 * stream_bytes / B],
            "idle_s": [[30e-6] * 5], "loaded_s": [[30e-6 + wait_s] * 9 + [30e-6 + 2 * wait_s]],
        },
        f"queue {stream_bytes}",
    )  # fmt: skip
    assert isinstance(rec, Queue)
    return rec


def predicted(
    cli, size: str, limits: ProtocolLimits | None, queue: list[Queue] | None = None
) -> tuple[str, dict]:
    nic = records("nic", as_measured(lambda m, cf: cf * m / B), SIZES, [1, 2])
    memory = records("memory", as_measured(lambda m, cf: 0.01 * cf * m / B), SIZES, [1, 2])
    run_id = store_run(cli.store, [*memory, *nic, *(queue or [])])  # type: ignore[list-item]
    if limits:
        with Store.open(cli.store) as store:
            store.set_run_data(run_id, RUN_DATA_KIND, limits.to_json())
    cluster = cli.store.parent / "cluster.yaml"
    cluster.write_text("name: four\nnodes: 4\nsockets: 1\ncores: 2\n")
    argv = ["predict", "allreduce", "--algorithm", "ring", "--np", "4", "--sizes", size]
    argv += ["--tables", str(run_id), "--cluster", str(cluster)]
    text = " ".join(cli(*argv, check=True).stdout.split())
    return text, json.loads(cli(*argv, "--json", check=True).stdout)


def test_messages_above_the_tables_inter_node_eager_limit_are_named_with_the_limit(cli):
    text, out = predicted(cli, "1MiB", ProtocolLimits("Open MPI", (VADER, TCP)))
    assert out["rendezvous"]["largest_message_bytes"] == 1 << 18
    assert out["rendezvous"]["eager_limit"]["setting"] == "btl_tcp_eager_limit"
    assert "its messages (up to 256 KiB) are above the inter-node eager limit" in text
    assert "(Open MPI tcp 65536 B, btl_tcp_eager_limit)" in text
    # The advice: the least limit that sends the 256 KiB messages, headers included, at once.
    assert out["rendezvous"]["eager_enough_bytes"] == (1 << 18) + TCP.headers_bytes
    assert out["rendezvous"]["raise_with"] == ["btl_tcp_max_send_size"]
    assert (
        f"setting btl_tcp_eager_limit to {(1 << 18) + 128} B or more (and btl_tcp_max_send_size"
        " alike) sends them at once" in text
    )
    assert out["rendezvous"]["answer_wait"] is None  # the tables run measured no queue waits
    assert out["rendezvous"]["answers_priced"] is False
    assert out["rendezvous"]["exchanges_priced"] is False
    assert "behind the peer's own stream" not in text
    assert all(pr["answer_wait_s"] == 0.0 for pr in out["predictions"])
    assert "the prices leave out the answers that wait behind their node's outgoing stream" in text
    assert "'commscope run contention --levels queue' measures" in text
    assert "of it, answers waiting" not in text


def test_the_answer_wait_of_the_nearest_stream_size_is_named_with_the_note(cli):
    queue = [
        queue_record(1 << 16, 0.004),
        queue_record(1 << 18, 0.010),
        queue_record(1 << 22, 0.02),
    ]
    text, out = predicted(cli, "1MiB", ProtocolLimits("Open MPI", (VADER, TCP)), queue)
    wait = out["rendezvous"]["answer_wait"]
    assert wait["bytes"] == 1 << 18  # the 256 KiB messages of the 1 MiB ring
    assert wait["wait_s"]["p50"] == pytest.approx(0.010)
    assert wait["wait_s"]["p90"] == pytest.approx(0.010, rel=0.2)  # 9 of 10 waited 10 ms
    assert "measured such an answer waiting 10.0 ms (median; 90th percentile" in text
    assert "behind its node's outgoing stream of 256 KiB messages" in text
    # The ring's hops race their receivers' streams: the prices include the waits, chained.
    assert out["rendezvous"]["answers_priced"] is True
    assert "the prices include the answers that wait behind their receiver's node's" in text
    assert "of it, answers waiting" in text
    by = {pr["placement"]["label"]: pr for pr in out["predictions"]}
    assert by["4x1"]["answer_wait_s"] > by["2x2"]["answer_wait_s"] > 0
    # Six steps, half the answers waiting 10 ms or more: at least 30 ms on 4x1.
    assert by["4x1"]["answer_wait_s"] >= 0.03
    assert [pr["placement"]["label"] for pr in out["predictions"]][:2] == ["2x2", "4x1"]


def test_waits_measured_far_from_the_messages_size_are_named_but_not_priced(cli):
    queue = [queue_record(1 << 16, 0.004), queue_record(1 << 22, 0.02)]  # 4x and 16x off
    text, out = predicted(cli, "1MiB", ProtocolLimits("Open MPI", (VADER, TCP)), queue)
    assert out["rendezvous"]["answer_wait"]["bytes"] == 1 << 16  # the nearest, still named
    assert out["rendezvous"]["answers_priced"] is False
    assert all(pr["answer_wait_s"] == 0.0 for pr in out["predictions"])
    assert "but none behind messages as large as these or down to half their size" in text


def test_messages_sent_eagerly_or_an_unrecorded_limit_bring_no_note(cli):
    # 128 KiB in 4 blocks: 32 KiB messages, under the 64 KiB limit with room for headers.
    text, out = predicted(cli, "128KiB", ProtocolLimits("Open MPI", (VADER, TCP)))
    assert out["rendezvous"] is None and "eager limit" not in text
    text, out = predicted(cli, "1MiB", None)  # tables measured before limits were recorded
    assert out["rendezvous"] is None and "eager limit" not in text
    only_intra = ProtocolLimits("Open MPI", (VADER,), unknown=("inter-node eager limit unknown",))
    text, out = predicted(cli, "1MiB", only_intra)
    assert out["rendezvous"] is None and "eager limit" not in text


def test_a_message_within_the_headers_of_the_limit_counts_as_above(cli):
    # 256 KiB in 4 blocks: exactly 64 KiB each; with its headers it no longer fits the limit.
    _, out = predicted(cli, "256KiB", ProtocolLimits("Open MPI", (TCP,)))
    assert out["rendezvous"]["largest_message_bytes"] == 65536


def test_the_note_says_when_an_exchanges_answer_behind_its_peers_stream_is_priced(cli):
    # The ring exchanges nothing: its prices do not move, but the note names what is priced.
    queue = [queue_record(1 << 18, 0.010), queue_record(1 << 20, 0.13, back=True)]
    text, out = predicted(cli, "1MiB", ProtocolLimits("Open MPI", (VADER, TCP)), queue)
    assert out["rendezvous"]["exchanges_priced"] is True
    assert out["rendezvous"]["answer_wait"]["answerer"] == "third rank"  # the node's queue
    assert "where the two ranks of an exchange arrive apart, the answer that waits" in text
    plain, _ = predicted(cli, "1MiB", ProtocolLimits("Open MPI", (VADER, TCP)), queue[:1])
    assert "behind the peer's own stream" not in plain


def test_the_streaming_ranks_own_answers_price_4x1_and_the_note_says_so(cli):
    third = [queue_record(1 << 18, 0.010)]
    own = [*third, queue_record(1 << 18, 0.030, streamer=True)]
    limits = ProtocolLimits("Open MPI", (VADER, TCP))
    text, out = predicted(cli, "1MiB", limits, own)
    plain_text, plain = predicted(cli, "1MiB", limits, third)
    assert out["rendezvous"]["streamers_priced"] is True
    assert plain["rendezvous"]["streamers_priced"] is False
    assert "where the receiver streams itself, its own answers' waits" in text
    assert "receiver streams itself" not in plain_text
    assert out["rendezvous"]["answer_wait"]["answerer"] == "third rank"  # the one named
    waits = {pr["placement"]["label"]: pr["answer_wait_s"] for pr in out["predictions"]}
    before = {pr["placement"]["label"]: pr["answer_wait_s"] for pr in plain["predictions"]}
    assert waits["2x2"] == before["2x2"]  # a third rank answers each of its racing hops
    assert waits["4x1"] > 1.5 * before["4x1"]  # every 4x1 hop's receiver streams itself
