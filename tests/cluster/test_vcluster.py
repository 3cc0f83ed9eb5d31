"""Virtual cluster for real: namespaces, bridge, shaped links, /etc/hosts and cleanup (root)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from itertools import permutations

import pytest

from commscope.errors import ClusterError
from commscope.measure import vcluster
from commscope.measure.vcluster import system
from tests.conftest import need, no_vcluster_up

pytestmark = pytest.mark.cluster


def sh(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(argv), capture_output=True, text=True, timeout=30)


def namespaces() -> set[str]:
    return {entry["name"] for entry in json.loads(sh("ip", "-j", "netns", "list").stdout or "[]")}


def links() -> set[str]:
    return {link["ifname"] for link in json.loads(sh("ip", "-j", "link", "show").stdout)}


def hosts_entries() -> list[str]:
    with open(vcluster.HOSTS_FILE, encoding="utf-8") as hosts:
        return [line for line in hosts if vcluster.HOSTS_MARK in line]


def assert_nothing_left() -> None:
    assert not {ns for ns in namespaces() if ns.startswith(vcluster.NODE_PREFIX)}
    ours = (vcluster.VETH_PREFIX, vcluster.BRIDGE_PREFIX, vcluster.UPLINK_PREFIX)
    left = {name for name in links() if name.startswith(ours)}
    assert not left
    assert not hosts_entries()
    assert not vcluster.STATE_DIR.exists()
    # What --ssh and --slurm write outside the state folder.
    assert not os.path.exists("/etc/ssh/ssh_config.d/commscope-vcluster.conf")
    for name in ("slurm.conf", "cgroup.conf", "mpi.conf", "topology.conf"):
        path = os.path.join("/etc/slurm", name)
        assert not (os.path.exists(path) and "commscope-vcluster" in open(path).read()), path
    assert (
        not [p for p in os.listdir("/etc/netns") if p.startswith(vcluster.NODE_PREFIX)]
        if os.path.isdir("/etc/netns")
        else True
    )


def ping(node: str, target: str) -> None:
    out = sh("ip", "netns", "exec", node, "ping", "-c", "1", "-W", "2", target)
    assert out.returncode == 0, f"{node} cannot ping {target}: {out.stdout}{out.stderr}"


@pytest.fixture
def fresh() -> Iterator[None]:
    """No vcluster before the test, and none after it, whatever the test did."""
    need(os.geteuid() == 0, "vcluster tests need root (network namespaces, bridge, /etc/hosts)")
    for tool in ("ip", "tc", "unshare", "ping"):
        need(shutil.which(tool) is not None, f"vcluster tests need '{tool}' (iproute2, ping)")
    no_vcluster_up()
    vcluster.down()  # pieces of a crashed earlier run, found by name
    try:
        yield
    finally:
        vcluster.down()


@pytest.mark.parametrize("nodes", [2, 4])
def test_up_makes_nodes_that_resolve_and_ping_each_other(fresh, nodes):
    state = vcluster.up(nodes)
    assert state.healthy and len(state.nodes) == nodes
    assert {n.name for n in state.nodes} <= namespaces()
    assert len(hosts_entries()) == nodes
    for node in state.nodes:
        resolved = sh("getent", "hosts", node.name).stdout.split()
        assert resolved[:2] == [node.address, node.name]
        ping(node.name, state.bridge_address)
    for a, b in permutations(state.nodes, 2):
        ping(a.name, b.name)
    assert vcluster.status() == state


def test_every_link_is_shaped_both_ways(fresh):
    state = vcluster.up(2, rate="200mbit")
    for node in state.nodes:
        egress = sh("tc", "-n", node.name, "-j", "qdisc", "show", "dev", vcluster.NODE_IFACE)
        ingress = sh("tc", "-j", "qdisc", "show", "dev", node.veth)
        for out in (egress, ingress):
            (qdisc,) = [q for q in json.loads(out.stdout) if q.get("root")]
            assert qdisc["kind"] == "tbf"
            assert qdisc["options"]["rate"] == 200_000_000 // 8
            # tc stores the bucket in clock ticks, so it reads back rounded.
            assert qdisc["options"]["burst"] == pytest.approx(state.burst_bytes, rel=0.02)
            # tc shows the queue limit as the time its bytes beyond the bucket take to send.
            opts = qdisc["options"]
            assert opts["lat"] * 1e-6 * opts["rate"] + opts["burst"] == pytest.approx(
                vcluster.queue_bytes(200_000_000), rel=0.02
            )


def test_up_twice_is_safe_and_a_different_cluster_asks_for_down(fresh):
    first = vcluster.up(2)
    assert vcluster.up(2, rate="1000mbit") == first
    with pytest.raises(ClusterError, match="down' first") as err:
        vcluster.up(3)
    assert "\n" not in err.value.one_line()
    with pytest.raises(ClusterError, match="down' first"):
        vcluster.up(2, rate="100mbit")
    again = vcluster.status()
    assert again is not None and again.healthy and again == first


def test_tcp_cc_is_every_nodes_until_down_puts_the_hosts_list_back(fresh):
    sysctl = system.TCP_SYSCTL
    available = (sysctl / "tcp_available_congestion_control").read_text().split()
    allowed_before = (sysctl / "tcp_allowed_congestion_control").read_text().split()
    host_default = (sysctl / "tcp_congestion_control").read_text().strip()
    # One the host does not allow if there is one, so that up() must widen the list.
    others = [cc for cc in available if cc != host_default]
    need(bool(others), f"this kernel offers only {host_default}: nothing to switch the nodes to")
    cc = next((c for c in others if c not in allowed_before), others[0])
    state = vcluster.up(2, rate="100mbit", tcp_cc=cc)
    assert state.healthy and state.tcp_cc == cc
    assert [vcluster.congestion_control(n.name) for n in state.nodes] == [cc, cc]
    assert (sysctl / "tcp_congestion_control").read_text().strip() == host_default
    assert cc in (sysctl / "tcp_allowed_congestion_control").read_text().split()
    with pytest.raises(ClusterError, match="down' first"):
        vcluster.up(2, rate="100mbit")  # the same nodes under another TCP are another cluster
    # A node switched back behind the cluster's back is a problem the health check names.
    setting = f"net.ipv4.tcp_congestion_control={host_default}"
    sh("ip", "netns", "exec", "csnode2", "sysctl", "-q", "-w", setting)
    problems = vcluster.status().problems  # type: ignore[union-attr]
    assert problems == (f"csnode2 runs TCP {host_default}, not {cc}",)
    vcluster.down()
    assert (sysctl / "tcp_allowed_congestion_control").read_text().split() == allowed_before


def test_socket_queue_limit_is_every_nodes_and_the_health_check_watches_it(fresh):
    path = system.TCP_SYSCTL / "tcp_limit_output_bytes"
    host = int(path.read_text())
    state = vcluster.up(2, rate="100mbit", tcp_limit_output=65536)
    assert state.healthy and state.tcp_limit_output == 65536
    assert [vcluster.tcp_limit_output(n.name) for n in state.nodes] == [65536, 65536]
    assert int(path.read_text()) == host  # the host's own sockets are left alone
    with pytest.raises(ClusterError, match="down' first"):
        vcluster.up(2, rate="100mbit")  # the default limit makes another cluster
    setting = "net.ipv4.tcp_limit_output_bytes=4096"
    sh("ip", "netns", "exec", "csnode1", "sysctl", "-q", "-w", setting)
    problems = vcluster.status().problems  # type: ignore[union-attr]
    assert problems == ("csnode1 lets a TCP socket queue 4096 bytes, not 65536",)
    vcluster.down()
    # "kernel": every node keeps the default a new namespace starts with.
    fresh_ns = "csprobe-limit"
    assert sh("ip", "netns", "add", fresh_ns).returncode == 0
    try:
        default = int(sh("ip", "netns", "exec", fresh_ns, "cat", str(path)).stdout)
    finally:
        sh("ip", "netns", "del", fresh_ns)
    kernel = vcluster.up(2, rate="100mbit", tcp_limit_output=0)
    assert kernel.healthy and kernel.tcp_limit_output == 0
    assert [vcluster.tcp_limit_output(n.name) for n in kernel.nodes] == [default, default]


def test_down_removes_everything_and_is_idempotent(fresh):
    vcluster.up(3)
    removed = vcluster.down()
    assert "namespace csnode3" in removed and "bridge csbr0" in removed
    assert_nothing_left()
    assert vcluster.down() == []
    assert vcluster.status() is None


def test_down_cleans_a_half_finished_up(fresh):
    # What a crash right after the state file and the first namespace would leave.
    half = vcluster.plan(3)
    vcluster.STATE_DIR.mkdir(parents=True)
    vcluster.STATE_FILE.write_text(json.dumps(half.to_json()), encoding="utf-8")
    assert sh("ip", "netns", "add", "csnode1").returncode == 0
    state = vcluster.status()
    assert state is not None and not state.healthy
    assert "build did not finish" in state.problems
    assert "namespace csnode2 missing" in state.problems
    with pytest.raises(ClusterError, match="broken"):
        vcluster.up(3)
    removed = vcluster.down()
    assert "namespace csnode1" in removed
    assert_nothing_left()


def test_down_cleans_up_after_a_command_failed_midway(fresh, monkeypatch):
    real_run = system.run

    def failing_run(argv):
        if argv[:2] == ["tc", "qdisc"] and argv[4] == "csveth2":
            raise ClusterError("simulated failure")
        return real_run(argv)

    monkeypatch.setattr(system, "run", failing_run)  # every command up() runs
    with pytest.raises(ClusterError, match="halfway") as err:
        vcluster.up(3)
    assert "simulated failure" in err.value.one_line()
    monkeypatch.undo()
    assert {"csnode1", "csnode2"} <= namespaces() and "csveth2" in links()
    vcluster.down()
    assert_nothing_left()


def test_pieces_without_state_block_up_until_down(fresh):
    assert sh("ip", "netns", "add", "csnode9").returncode == 0
    with pytest.raises(ClusterError, match="csnode9"):
        vcluster.up(2)
    assert "namespace csnode9" in vcluster.down()
    assert_nothing_left()


def test_status_notices_a_lost_node(fresh):
    vcluster.up(2)
    assert sh("ip", "link", "del", "csveth2").returncode == 0
    assert sh("ip", "netns", "del", "csnode2").returncode == 0
    state = vcluster.status()
    assert state is not None and not state.healthy
    assert state.problems == ("namespace csnode2 missing", "veth csveth2 missing")


def test_a_subnet_the_machine_uses_is_refused_before_anything_is_made(fresh):
    with pytest.raises(ClusterError, match="overlaps"):
        vcluster.up(2, subnet="127.0.0.0/24")
    assert_nothing_left()


def test_agent_gives_each_node_its_own_hostname_and_ipc_namespace(fresh):
    machine = sh("hostname").stdout.strip()
    vcluster.up(2)
    agent = str(vcluster.agent_path("ompi-rsh-agent"))
    probe = "echo $(hostname) $(readlink /proc/self/ns/ipc) $(readlink /proc/self/ns/net)"
    seen = {}
    for node in ("csnode1", "csnode2"):
        out = sh(agent, "-x", node, probe)
        assert out.returncode == 0, out.stderr
        seen[node] = out.stdout.split()
        assert seen[node][0] == node
    own = [os.readlink("/proc/self/ns/ipc"), os.readlink("/proc/self/ns/net")]
    assert seen["csnode1"][1:] != seen["csnode2"][1:]
    for node in seen:
        assert seen[node][1] != own[0] and seen[node][2] != own[1]
    assert sh("hostname").stdout.strip() == machine
