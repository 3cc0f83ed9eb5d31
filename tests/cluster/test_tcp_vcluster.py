"""TCP below MPI across a 2-node virtual cluster at 1 gbit (root): stream, iperf3, buffers."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from collections.abc import Iterator

import pytest

from commscope.measure import vcluster
from tests.cluster.test_vcluster import assert_nothing_left
from tests.conftest import need, no_vcluster_up

pytestmark = pytest.mark.cluster
GBIT_BPS = 1e9 / 8  # bytes per second of a 1 gbit link
IPERF_PORT = 5201


@pytest.fixture
def two_nodes() -> Iterator[vcluster.ClusterState]:
    """A 2-node vcluster at 1 gbit, always removed afterwards."""
    need(os.geteuid() == 0, "vcluster tests need root (network namespaces, bridge, /etc/hosts)")
    no_vcluster_up()
    try:
        yield vcluster.up(2, "1gbit")
    finally:
        vcluster.down()
        assert_nothing_left()


def run_tcp(cli, *args: str) -> list[dict]:
    out = cli("run", "tcp", "--vcluster", "--json", *args, timeout=900)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)["runs"]


def _iperf3(state: vcluster.ClusterState, *args: str) -> dict:
    """Run iperf3 from node 1 to a one-shot server on node 2; its JSON output."""
    a, b = state.nodes[0], state.nodes[1]
    server = subprocess.Popen(
        ["ip", "netns", "exec", b.name, "iperf3", "-s", "-1", "-p", str(IPERF_PORT)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        time.sleep(0.5)
        out = subprocess.run(
            [
                "ip",
                "netns",
                "exec",
                a.name,
                "iperf3",
                "-c",
                b.address,
                "-p",
                str(IPERF_PORT),
                *args,
                "-J",
            ],
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        )
    finally:
        server.kill()
        server.wait()
    return json.loads(out.stdout)


def iperf3_peak_Bps(state: vcluster.ClusterState, seconds: int = 6) -> float:
    """iperf3's peak from node 1 to node 2: its best one-second interval, bytes/s.

    The first interval is left out: it also counts what filled the socket buffer.
    """
    intervals = _iperf3(state, "-t", str(seconds))["intervals"][1:]
    return max(float(i["sum"]["bits_per_second"]) for i in intervals) / 8


def iperf3_bidir_Bps(state: vcluster.ClusterState, seconds: int = 10) -> tuple[float, float]:
    """iperf3 --bidir between nodes 1 and 2: bytes/s node 1 -> 2 and node 2 -> 1."""
    end = _iperf3(state, "-t", str(seconds), "--bidir")["end"]
    return (
        end["sum_received"]["bits_per_second"] / 8,
        end["sum_received_bidir_reverse"]["bits_per_second"] / 8,
    )


def stream_vs_iperf3(run: dict, reference: tuple[float, float]) -> list[float]:
    """Each direction's stream rate over iperf3's in the same direction, client -> server first."""
    rate = {d["from"]: d["rate_Bps"] for d in run["stream"]}  # 0: the client, 1: the server
    return [rate[0] / reference[0], rate[1] / reference[1]]


def test_stream_each_direction_keeps_up_with_iperf3_bidir(cli, two_nodes):
    need(shutil.which("iperf3") is not None, "iperf3 is not installed (./setup.sh --test)")
    # Both directions at once cross two tbf hops and a bridge, all processed by this VM's two
    # cores: the emulated link, not the tool, sets the ceiling (58-71 % of 1 gbit each way on
    # a quiet machine, less when the host steals time). So the reference is iperf3 --bidir
    # (a connection per direction, 128 KiB writes) on the same link, before and after; one of
    # three rounds must agree (every stream run is stored).
    for _ in range(3):
        before = iperf3_bidir_Bps(two_nodes)
        (run,) = run_tcp(cli, "--tcp-mode", "stream")  # 10 s, mean 2000 B, max 16000 B
        after = iperf3_bidir_Bps(two_nodes)
        reference = ((before[0] + after[0]) / 2, (before[1] + after[1]) / 2)
        # iperf3's own drift over the run is the noise the reference carries.
        drift = max(abs(b - a) / r for b, a, r in zip(before, after, reference, strict=True))
        floor = 0.80 - drift
        ratios = stream_vs_iperf3(run, reference)
        rates = ", ".join(f"{d['rate_Bps'] / 1e6:.1f}" for d in run["stream"])
        print(
            f"\nstream MB/s each way: {rates}; iperf3 --bidir {reference[0] / 1e6:.1f}, "
            f"{reference[1] / 1e6:.1f}; ratios {', '.join(f'{r:.2f}' for r in ratios)}; "
            f"retransmitted {[d['retrans'] for d in run['stream']]}; floor {floor:.2f}"
        )
        if min(ratios) >= floor:
            break
    assert run["status"] == "complete" and run["pair"] == "inter-node"
    ends = {e["role"]: e for e in run["ends"]}
    assert (ends["client"]["node"], ends["server"]["node"]) == ("csnode1", "csnode2")
    assert all(e["interface"] == "eth0" and e["mtu"] == 1500 for e in ends.values())
    assert len(run["stream"]) == 2
    # Messages of 2000 B on average against iperf3's 128 KiB writes: at least 80 % of its rate,
    # less what iperf3 itself drifted between before and after.
    assert min(ratios) >= floor, (ratios, floor)
    for d in run["stream"]:
        # Below a quarter of the link something is broken (the misconfigured GigE link
        # of Rechistov et al. 2012, cluster simulation, ran at 18 and 8 MB/s).
        assert 0.25 <= d["rate_Bps"] / GBIT_BPS <= 1.00
        assert d["retrans"] is not None and d["snd_mss"] == 1448
        assert 1900 <= d["received_bytes"] / d["messages"] <= 2100  # exponential, mean 2000


def test_pingpong_peak_is_within_10_percent_of_iperf3(cli, two_nodes):
    need(shutil.which("iperf3") is not None, "iperf3 is not installed (./setup.sh --test)")
    # From 256 KiB up the links' token bucket (16 KB) no longer lets a message pass unshaped:
    # smaller messages are faster than the rate, which iperf3 never sees.
    # Peak against peak: iperf3's average also holds the dips of its congestion window,
    # which a ping-pong of one message at a time does not cause.
    # Interleaved; on this shared VM one of three rounds must agree within 10 % plus the drift
    # between the iperf3 runs before and after it.
    for _ in range(3):
        before = iperf3_peak_Bps(two_nodes)
        (run,) = run_tcp(cli, "--sizes", "256K,512K,1MiB,2MiB,4MiB", "--point-budget", "2")
        after = iperf3_peak_Bps(two_nodes)
        reference = (before + after) / 2
        tolerance = 0.10 + abs(before - after) / reference  # plus iperf3's own drift
        peak = run["peak_bandwidth_Bps"]
        print(
            f"\nping-pong peak {peak / 1e6:.1f} MB/s at {run['peak_bytes']} B; iperf3 "
            f"{before / 1e6:.1f} and {after / 1e6:.1f} MB/s; ratio {peak / reference:.3f}"
            f" (tolerance {tolerance:.3f})"
        )
        if abs(peak / reference - 1) <= tolerance:
            break
    assert abs(peak / reference - 1) <= tolerance


def test_socket_buffer_sweep_records_what_the_kernel_granted(cli, two_nodes):
    runs = run_tcp(
        cli,
        "--sizes",
        "1,64K,1MiB",
        "--sockbuf",
        "default,16K,64K,128K,256K,512K",
        "--point-budget",
        "0.2",
    )
    assert [r["sockbuf_requested"] for r in runs] == [
        0,
        16 << 10,
        64 << 10,
        128 << 10,
        256 << 10,
        512 << 10,
    ]
    for r in runs:
        print(
            f"\nsockbuf {r['sockbuf_requested']}: granted "
            + ", ".join(f"{e['role']} {e['sndbuf']}/{e['rcvbuf']}" for e in r["ends"])
            + f"; latency {r['latency_s'] * 1e6:.1f} us, peak {r['peak_bandwidth_Bps'] / 1e6:.1f}"
            " MB/s"
        )
        assert r["status"] == "complete" and r["points"] == 3
        for end in r["ends"]:
            if r["sockbuf_requested"] == 0:
                assert end["sndbuf"] > 0 and end["rcvbuf"] > 0
                continue
            # The kernel doubles a request and caps it at twice net.core.[wr]mem_max.
            assert end["sndbuf"] == 2 * min(r["sockbuf_requested"], end["wmem_max"]), end
            assert end["rcvbuf"] == 2 * min(r["sockbuf_requested"], end["rmem_max"]), end
