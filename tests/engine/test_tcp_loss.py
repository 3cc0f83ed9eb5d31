"""The TCP segments a run sent and resent are counted per network namespace and shown.

Open MPI's TCP BTL between two ranks of this host: each 1 MiB ping-pong sample moves 1 MiB
each way, so the namespace's TCP must have sent at least 2 MiB per sample in segments of at
most one loopback MSS: a count below that would not be the run's traffic. Loss itself is
asserted on the virtual cluster, where a link can be made to drop
(tests/cluster/test_tcp_loss_vcluster.py).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import have_mpi, need

pytestmark = pytest.mark.mpi

MIB = 1 << 20
LOOPBACK_MSS = 65536 - 40  # the loopback MTU less IP and TCP headers: no segment is larger


def kernel_tcp() -> dict[str, int]:
    """This namespace's TCP counters, as /proc/net/snmp gives them."""
    names, values = (
        line.split()[1:] for line in Path("/proc/net/snmp").read_text().splitlines()
        if line.startswith("Tcp:")
    )  # fmt: skip
    return dict(zip(names, map(int, values), strict=True))


def test_a_run_over_tcp_counts_at_least_its_own_segments(cli):
    need(have_mpi("openmpi"), "openmpi is not installed")
    before = kernel_tcp()
    cli(
        "run",
        "p2p",
        "--mpi",
        "openmpi",
        "--np",
        "2",
        "--sizes",
        "1MiB",
        "--ops",
        "pingpong",
        "--mca",
        "btl=self,tcp",
        "--timeout",
        "120",
        check=True,
    )
    after = kernel_tcp()
    shown = json.loads(cli("show", "latest", "--json", check=True).stdout)
    [ns] = shown["tcp_loss"]  # both ranks in this host's namespace: one entry
    assert ns["nodes"] and all(isinstance(ns[k], int) for k in ("out_segs", "retrans_segs"))
    exported = cli("export", "latest", "--format", "json", check=True).stdout.splitlines()
    [point] = [r for r in map(json.loads, exported) if r["type"] == "point"]
    round_trips = len(point["samples_s"]) * point["iters_per_sample"]
    assert ns["out_segs"] >= round_trips * 2 * MIB / LOOPBACK_MSS, (ns, round_trips)
    # The run counted within the kernel's own counts over the same time (others may add).
    assert ns["out_segs"] <= after["OutSegs"] - before["OutSegs"], (ns, before, after)
    assert ns["retrans_segs"] <= after["RetransSegs"] - before["RetransSegs"], (ns, after)
    # Whatever was lost is said in one line per namespace, and only then.
    lossy = ns["timeouts"] > 0 or (
        ns["out_segs"] >= 1000 and ns["retrans_segs"] > ns["out_segs"] / 100
    )
    assert bool(shown["tcp_loss_warnings"]) is lossy
    # The namespace's congestion control for new connections, as the kernel says it.
    here = Path("/proc/sys/net/ipv4/tcp_congestion_control").read_text().strip()
    assert ns["congestion_control"] == here
    assert shown["tcp_congestion_control"] == {here: ns["nodes"]}
    # And how much one socket may queue below TCP, as the kernel says it.
    limit = int(Path("/proc/sys/net/ipv4/tcp_limit_output_bytes").read_text())
    assert ns["tcp_limit_output_bytes"] == limit
    assert shown["tcp_limit_output"] == [{"bytes": limit, "nodes": ns["nodes"]}]
    # And whether an idle connection restarts from the initial window, as the kernel says it.
    restart = int(Path("/proc/sys/net/ipv4/tcp_slow_start_after_idle").read_text())
    assert ns["tcp_slow_start_after_idle"] == restart
    assert shown["tcp_slow_start_after_idle"] == [{"value": restart, "nodes": ns["nodes"]}]
    assert shown["tcp_idle_restart_nodes"] == []  # one namespace: no run across nodes
