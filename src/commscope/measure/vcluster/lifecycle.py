"""Build, check and remove a vcluster: :func:`up`, :func:`status` and :func:`down`.

The state file is written before anything is created and lists everything that will be, so
that :func:`down` can remove a cluster whose :func:`up` stopped halfway. :func:`down` also
removes pieces found by their name prefix alone.
"""

from __future__ import annotations

import shutil
from dataclasses import replace

from commscope.errors import ClusterError
from commscope.measure.vcluster import services as daemons
from commscope.measure.vcluster import system
from commscope.measure.vcluster.model import (
    BRIDGE,
    BRIDGE_RE,
    DEFAULT_RATE,
    DEFAULT_SUBNET,
    DEFAULT_TCP_LIMIT_OUTPUT,
    NODE_RE,
    STATE_DIR,
    UPLINK_RE,
    VETH_RE,
    ClusterState,
    burst_bytes,
    parse_rate,
    plan,
    queue_bytes,
    same_layout,
)
from commscope.measure.vcluster.system import HOSTS_FILE, HOSTS_MARK

NODE_IFACE = "eth0"


def _tbf(rate: str) -> list[str]:
    """The tbf qdisc of a link of ``rate``: its bucket and queue follow from the rate."""
    bps = parse_rate(rate)
    return ["tbf", "rate", rate, "burst", str(burst_bytes(bps)), "limit", str(queue_bytes(bps))]


def _build_switches(state: ClusterState) -> None:
    """Create the bridge (the core with several switches), the leaves and their uplinks.

    An uplink is a veth pair between the core and a leaf, both in this namespace; each end's
    queue shapes what leaves through it, so the uplink is shaped in both directions.
    """
    bridge_cidr = f"{state.bridge_address}/{state.prefixlen}"
    system.run(["ip", "link", "add", state.bridge, "type", "bridge"])
    system.run(["ip", "addr", "add", bridge_cidr, "dev", state.bridge])
    system.run(["ip", "link", "set", state.bridge, "up"])
    if not state.uplinks:
        return
    tbf = _tbf(state.uplink_rate)
    for uplink in state.uplinks:
        system.run(["ip", "link", "add", uplink.leaf, "type", "bridge"])
        system.run(["ip", "link", "set", uplink.leaf, "up"])
        peer = ["peer", "name", uplink.leaf_end]
        system.run(["ip", "link", "add", uplink.core_end, "type", "veth", *peer])
        for end, bridge in ((uplink.core_end, state.bridge), (uplink.leaf_end, uplink.leaf)):
            system.run(["ip", "link", "set", end, "master", bridge])
            system.run(["ip", "link", "set", end, "up"])
            system.run(["tc", "qdisc", "add", "dev", end, "root", *tbf])


def _build(state: ClusterState) -> None:
    """Create the switches and every node of ``state``, in the order down() can undo."""
    _build_switches(state)
    for node in state.nodes:
        tbf = _tbf(state.node_rate(node))  # at the cluster's rate, the bucket is burst_bytes
        ns = node.name
        system.run(["ip", "netns", "add", ns])
        peer = ["peer", "name", NODE_IFACE, "netns", ns]
        system.run(["ip", "link", "add", node.veth, "type", "veth", *peer])
        system.run(["ip", "link", "set", node.veth, "master", node.switch])
        system.run(["ip", "link", "set", node.veth, "up"])
        cidr = f"{node.address}/{state.prefixlen}"
        system.run(["ip", "-n", ns, "addr", "add", cidr, "dev", NODE_IFACE])
        system.run(["ip", "-n", ns, "link", "set", "lo", "up"])
        system.run(["ip", "-n", ns, "link", "set", NODE_IFACE, "up"])
        if state.tcp_cc:  # before any daemon opens a connection
            system.set_congestion_control(ns, state.tcp_cc)
        if state.tcp_limit_output:
            system.set_tcp_limit_output(ns, state.tcp_limit_output)
        if state.slow_start_after_idle >= 0:
            system.set_slow_start_after_idle(ns, state.slow_start_after_idle)
        # Egress of the node, then egress of the bridge port, which is the node's ingress.
        system.run(["tc", "-n", ns, "qdisc", "add", "dev", NODE_IFACE, "root", *tbf])
        system.run(["tc", "qdisc", "add", "dev", node.veth, "root", *tbf])
    system.add_hosts_block(state)
    if state.services:
        daemons.write_node_hosts(state)
    if "ssh" in state.services:
        from commscope.measure.vcluster import ssh

        ssh.start(state)
    if "slurm" in state.services:
        from commscope.measure.vcluster import slurm

        slurm.start(state)


def up(
    nodes: int,
    rate: str = DEFAULT_RATE,
    subnet: str = DEFAULT_SUBNET,
    services: tuple[str, ...] = (),
    tcp_cc: str = "",
    tcp_limit_output: int = DEFAULT_TCP_LIMIT_OUTPUT,
    slow_start_after_idle: int = -1,
    switches: int = 1,
    uplink_rate: str = "",
) -> ClusterState:
    """Build a vcluster of ``nodes`` nodes, or return the one already up with these parameters.

    Args:
        nodes: number of nodes, 1 .. 64, named csnode1 .. csnodeN.
        rate: rate of each link in each direction, in tc syntax (``100mbit``, ``1gbit``),
            optionally followed by nodes' own rates: ``1gbit,csnode3=200mbit``.
        subnet: IPv4 network for the bridge and the nodes, /24 or larger.
        services: daemons to run in every node ("ssh", "slurm").
        tcp_cc: TCP congestion control of every node (e.g. ``cubic``); empty: the host's
            default. The host's allowed list gains it until :func:`down`.
        tcp_limit_output: bytes each TCP socket may keep in its node's own shaped queue
            (net.ipv4.tcp_limit_output_bytes of every node); 0: the kernel's default.
        slow_start_after_idle: net.ipv4.tcp_slow_start_after_idle of every node (1: a
            connection idle past its RTO restarts from the initial window); -1: the kernel's.
        switches: 1, every node on one bridge; K >= 2, the nodes in K contiguous blocks on
            leaf bridges joined to a core bridge (which keeps this machine's address).
        uplink_rate: each uplink's rate in each direction (default: the cluster's rate).

    Returns:
        The state of the running cluster (also written to :data:`STATE_FILE`).

    Raises:
        ClusterError: not root, a tool is missing, bad inputs, a different or broken cluster
            is already there (run :func:`down` first), or a command failed.
    """
    wanted = plan(
        nodes,
        rate,
        subnet,
        services,
        tcp_cc,
        tcp_limit_output,
        slow_start_after_idle,
        switches,
        uplink_rate,
    )
    system.require_root_and_tools()
    if tcp_cc:
        system.check_congestion_control(tcp_cc)
    existing = status()
    if existing is not None:
        if not same_layout(existing, wanted):
            raise ClusterError(
                f"a vcluster of {len(existing.nodes)} nodes at {existing.rate} on "
                f"{existing.subnet}{_switches(existing)}{_with(existing.services)}"
                f"{_cc(existing.tcp_cc)}"
                f"{_limit(existing.tcp_limit_output)}"
                f"{_restart(existing.slow_start_after_idle)} is up: "
                "run 'commscope vcluster down' first"
            )
        if not existing.healthy:
            problems = "; ".join(existing.problems) or "never finished building"
            raise ClusterError(
                f"the vcluster is broken ({problems}): run 'commscope vcluster down' first"
            )
        return existing
    leftovers = system.leftovers()
    if leftovers:
        raise ClusterError(
            f"vcluster pieces without a state file exist ({', '.join(leftovers)}): "
            "run 'commscope vcluster down' first"
        )
    system.check_subnet_free(wanted)
    if tcp_cc:
        # A namespace may only choose what the host allows ("Operation not permitted").
        allowed = system.allowed_congestion_control()
        if tcp_cc not in allowed.split():
            wanted = replace(wanted, restore_allowed_cc=allowed)
    system.write_state(wanted)  # before any change, so that down() can undo a halfway up()
    try:
        if wanted.restore_allowed_cc:
            system.write_allowed_congestion_control(f"{wanted.restore_allowed_cc} {tcp_cc}")
        _build(wanted)
    except ClusterError as err:
        raise ClusterError(
            "building the vcluster stopped halfway: run 'commscope vcluster down' to clean up"
        ) from err
    built = replace(wanted, complete=True)
    system.write_state(built)
    return built


def down() -> list[str]:
    """Remove the vcluster: links, namespaces, bridges, uplinks, /etc/hosts entries and state.

    Pieces named in the state file and pieces found by name prefix are both removed, so a
    half-built cluster goes too. Pieces already gone are skipped.

    Returns:
        What was removed, one short description per piece.

    Raises:
        ClusterError: not root, or a piece exists but could not be removed.
    """
    system.require_root_and_tools()
    try:
        state = system.read_state()
    except ClusterError:
        state = None  # an unreadable state file still goes; the name scan finds the rest
    veths = {node.veth for node in state.nodes} if state else set()
    names = {node.name for node in state.nodes} if state else set()
    bridges = {state.bridge, BRIDGE, *state.leaves} if state else {BRIDGE}
    uplinks = {u.core_end for u in state.uplinks} if state else set()
    links = system.links()
    veths |= {name for name in links if VETH_RE.fullmatch(name)}
    bridges |= {name for name in links if BRIDGE_RE.fullmatch(name)}
    uplinks |= {name for name in links if UPLINK_RE.fullmatch(name)}
    names |= {ns for ns in system.namespaces() if NODE_RE.fullmatch(ns)}

    removed: list[str] = []
    # Daemons first: a namespace cannot go while a process holds it.
    removed += [f"daemon {what}, stopped" for what in daemons.stop_all(names)]
    from commscope.measure.vcluster import slurm, ssh

    removed += ssh.remove_files() + slurm.remove_files()
    removed += daemons.remove_node_hosts(names | _netns_folders())
    # Deleting the outer veth end takes the inner end with it, at once; deleting only the
    # namespace would leave the outer end behind for a moment.
    for veth in sorted(veths & links.keys(), key=_natural):
        if system.try_run(["ip", "link", "del", veth]):
            removed.append(f"veth {veth}")
    # Deleting one end of an uplink takes the other with it.
    for uplink in sorted(uplinks, key=_natural):
        if uplink in system.links() and system.try_run(["ip", "link", "del", uplink]):
            removed.append(f"uplink {uplink}")
    present = set(system.namespaces())
    for ns in sorted(names & present, key=_natural):
        if system.try_run(["ip", "netns", "del", ns]):
            removed.append(f"namespace {ns}")
    for bridge in sorted(bridges & links.keys(), key=_natural):
        if system.try_run(["ip", "link", "del", bridge]):
            removed.append(f"bridge {bridge}")
    lines = system.read_hosts()
    kept = system.strip_hosts_block(lines)
    if len(kept) != len(lines):
        system.write_hosts(kept)
        removed.append(f"{len(lines) - len(kept)} {HOSTS_FILE} entries")
    if state and state.restore_allowed_cc:
        system.write_allowed_congestion_control(state.restore_allowed_cc)
        removed.append(f"congestion control {state.tcp_cc} from the host's allowed list")
    if STATE_DIR.exists():
        shutil.rmtree(STATE_DIR, ignore_errors=True)
        removed.append(f"state {STATE_DIR}")

    left = [piece for piece in system.leftovers() if piece in veths | names | bridges | uplinks]
    if left or STATE_DIR.exists():
        what = ", ".join(left) or str(STATE_DIR)
        raise ClusterError(
            f"could not remove {what}: remove it by hand ('ip netns del', "
            "'ip link del') and run 'commscope vcluster down' again"
        )
    return removed


def set_rate(node: str, rate: str) -> None:
    """Shape one node's link at ``rate``, both directions, e.g. to make one node slow.

    The state file keeps the cluster's rate: this is a fault put in on purpose, undone by
    calling it again with that rate or by :func:`down`.

    Raises:
        ClusterError: no vcluster, no such node, a bad rate, or tc failed.
    """
    system.require_root_and_tools()
    state = system.read_state()
    found = next((n for n in state.nodes if n.name == node), None) if state else None
    if found is None:
        names = ", ".join(n.name for n in state.nodes) if state else "none: no vcluster is up"
        raise ClusterError(f"node {node}: not a vcluster node (nodes: {names})")
    tbf = _tbf(rate.strip().lower())
    system.run(["tc", "-n", found.name, "qdisc", "replace", "dev", NODE_IFACE, "root", *tbf])
    system.run(["tc", "qdisc", "replace", "dev", found.veth, "root", *tbf])


def status() -> ClusterState | None:
    """Return the recorded vcluster with a fresh health check, or None when there is none.

    The health check fills :attr:`ClusterState.problems` with what is missing: namespaces,
    veths, bridges (or a bridge is down), uplinks, a link on another switch than recorded,
    /etc/hosts entries.

    Raises:
        ClusterError: the state file is unreadable, or a query command failed.
    """
    state = system.read_state()
    if state is None:
        return None
    problems: list[str] = []
    if not state.complete:
        problems.append("build did not finish")
    present = set(system.namespaces())
    links = system.links()
    problems += [f"namespace {n.name} missing" for n in state.nodes if n.name not in present]
    problems += [f"veth {n.veth} missing" for n in state.nodes if n.veth not in links]
    for name in (state.bridge, *state.leaves):
        bridge = links.get(name)
        if bridge is None:
            problems.append(f"bridge {name} missing")
        elif "UP" not in bridge.get("flags", []):
            problems.append(f"bridge {name} is down")
    ports = [(n.veth, n.switch) for n in state.nodes if state.uplinks]
    for uplink in state.uplinks:
        ports += [(uplink.core_end, state.bridge), (uplink.leaf_end, uplink.leaf)]
    for port, bridge_name in ports:
        link = links.get(port)
        if link is None:
            if not VETH_RE.fullmatch(port):  # a missing node veth is named above
                problems.append(f"uplink end {port} missing")
        elif link.get("master") != bridge_name:
            problems.append(f"{port} is not on switch {bridge_name}")
    if state.tcp_cc:
        for node in state.nodes:
            now = system.congestion_control(node.name) if node.name in present else state.tcp_cc
            if now != state.tcp_cc:
                problems.append(f"{node.name} runs TCP {now}, not {state.tcp_cc}")
    # Settings up() made in every node, read back from the nodes still there.
    nodes = [n.name for n in state.nodes if n.name in present]
    if state.tcp_limit_output:
        for name in nodes:
            limit = system.tcp_limit_output(name)
            if limit != state.tcp_limit_output:
                problems.append(
                    f"{name} lets a TCP socket queue {limit} bytes, not {state.tcp_limit_output}"
                )
    if state.slow_start_after_idle >= 0:
        for name in nodes:
            restart = system.slow_start_after_idle(name)
            if restart != state.slow_start_after_idle:
                problems.append(
                    f"{name} has tcp_slow_start_after_idle {restart},"
                    f" not {state.slow_start_after_idle}"
                )
    listed = {
        line.split()[1]
        for line in system.read_hosts()
        if line.rstrip().endswith(HOSTS_MARK) and len(line.split()) > 1
    }
    problems += [f"{n.name} missing from {HOSTS_FILE}" for n in state.nodes if n.name not in listed]
    return replace(state, problems=tuple(problems))


def _switches(state: ClusterState) -> str:
    if state.switches < 2:
        return ""
    return f", {state.switches} switches with {state.uplink_rate} uplinks"


def _with(services: tuple[str, ...]) -> str:
    return f" with {' and '.join(services)}" if services else ""


def _cc(tcp_cc: str) -> str:
    return f" under TCP {tcp_cc}" if tcp_cc else ""


def _limit(tcp_limit_output: int) -> str:
    queue = f"{tcp_limit_output} bytes" if tcp_limit_output else "the kernel's default"
    return f", {queue} per TCP socket"


def _restart(slow_start_after_idle: int) -> str:
    if slow_start_after_idle < 0:
        return ""
    return f", tcp_slow_start_after_idle {slow_start_after_idle}"


def _netns_folders() -> set[str]:
    folder = daemons.NETNS_ETC
    if not folder.is_dir():
        return set()
    return {p.name for p in folder.iterdir() if NODE_RE.fullmatch(p.name)}


def _natural(name: str) -> tuple[str, int]:
    """Sort key that puts csnode2 before csnode10."""
    head = name.rstrip("0123456789")
    tail = name[len(head) :]
    return head, int(tail) if tail else -1
