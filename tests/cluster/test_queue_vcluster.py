"""A small message's wait behind its node's outgoing stream follows that node's queue (root).

Two nodes at 50 mbit under Reno (every kernel allows it in every namespace), which like CUBIC
fills a link's queue before it backs off. Contention
level "queue" times round trips from node 2 whose answers leave node 1 while node 1 streams 1
MiB messages to node 2: the way an MPI's rendezvous answer leaves a node that is sending. Those
answers wait in node 1's shaped queue, so most must take longer than every idle round trip,
none much longer than the queue takes to drain at the link's rate; and with node 1's queue cut
to a quarter, every wait must fit the smaller queue, which the full one's median exceeds. The
stream's sender answering the stream's receiver waits behind the stream's own connection,
which holds more than the node's queue lets one socket keep there, so those answers wait longer
than the third rank's. The stream's sender answering another rank takes a connection of its
own, so its answers wait behind the node's queue, as the third rank's do, and not behind the
stream's connection. A stream's rate is timed until its receiver has it all, so no stream
outruns the link, not even one of eager messages, whose sends return as soon as the kernel
holds them.
"""

from __future__ import annotations

import json
import subprocess

import pytest

from commscope.measure.vcluster.model import burst_bytes, parse_rate, queue_bytes
from tests.conftest import have_mpi, need

pytestmark = pytest.mark.cluster

RATE = "50mbit"
NO_PUT = "btl_tcp_flags=send,inplace,need-ack,need-csum,hetero-rdma"


def waits(cli, sizes: str = "1MiB") -> dict[tuple[str, int], dict]:
    """Per answerer (a third rank, the stream's sender to its receiver or to another rank) and
    stream size, ``show --json``'s waits."""
    out = cli(
        "run", "contention", "--vcluster", "--ranks-per-node", "2", "--mpi", "openmpi",
        "--levels", "queue", "--sizes", sizes, "--repeats", "3", "--mca", NO_PUT, "--json",
        timeout=600,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    shown = json.loads(cli("show", str(json.loads(out.stdout)["run"]), "--json", check=True).stdout)
    print(json.dumps(shown["contention_queue"]))
    found = {(q["answerer"], q["bytes"]): q for q in shown["contention_queue"]}
    assert len(found) == 3 * len(sizes.split(","))  # every answerer, every size
    return found


@pytest.mark.parametrize("cluster", [(2, RATE)], indirect=True)
def test_answers_wait_behind_their_nodes_queue_and_follow_its_depth(cli, cluster):
    need(have_mpi("openmpi"), "openmpi is not installed")
    for node in cluster.nodes:
        sysctl = ["sysctl", "-q", "-w", "net.ipv4.tcp_congestion_control=reno"]
        subprocess.run(["ip", "netns", "exec", node.name, *sysctl], check=True)
    Bps = parse_rate(RATE) / 8
    full_s = queue_bytes(parse_rate(RATE)) / Bps  # the time a full queue takes to drain
    quarter = queue_bytes(parse_rate(RATE)) // 4

    measured = waits(cli, "32KiB,1MiB")
    for found in measured.values():  # 32 KiB goes eagerly, 1 MiB after an answer
        assert 0.5 * Bps < found["stream_Bps"] < 1.05 * Bps, found["bytes"]
    full = measured[("third rank", 1 << 20)]
    assert full["samples"] >= 20
    assert full["waiting_share"] > 0.5  # most answers took longer than every idle round trip
    assert full["wait_s"]["p90"] < 1.5 * full_s
    # The sender's own answers queue behind what it handed its socket and its MPI as well.
    back = measured[("stream's sender", 1 << 20)]
    assert back["samples"] >= 10
    assert back["waiting_share"] > 0.5
    assert back["wait_s"]["p90"] > full["wait_s"]["p90"]
    # Answering another rank, the streaming rank's answers leave by the node's queue alone.
    streamer = measured[("stream's sender, to another rank", 1 << 20)]
    assert streamer["samples"] >= 10
    assert streamer["waiting_share"] > 0.5
    assert streamer["wait_s"]["p90"] < 1.5 * full_s < back["wait_s"]["p90"]

    tbf = ["tbf", "rate", RATE, "burst", str(burst_bytes(parse_rate(RATE))), "limit", str(quarter)]
    sender = cluster.nodes[0].name  # rank 0, which streams, runs on the first node
    subprocess.run(
        ["tc", "-n", sender, "qdisc", "replace", "dev", "eth0", "root", *tbf], check=True
    )
    cut_waits = waits(cli)
    for who in ("third rank", "stream's sender, to another rank"):  # both behind the node's queue
        cut = cut_waits[(who, 1 << 20)]
        assert cut["waiting_share"] > 0.5, who
        assert cut["wait_s"]["p90"] < 1.5 * quarter / Bps, who
        # Each met the full queue before: it waited longer there than behind the cut one.
        assert measured[(who, 1 << 20)]["wait_s"]["p50"] > cut["wait_s"]["p50"], who
    assert full["wait_s"]["p50"] > 1.2 * quarter / Bps  # the full queue held more than a quarter
