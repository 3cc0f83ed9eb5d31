"""``commscope vcluster``: build, inspect and remove the virtual cluster."""

from __future__ import annotations

import argparse

from commscope.cli import common
from commscope.errors import ClusterError, InputError, UsageError
from commscope.measure import vcluster
from commscope.measure.vcluster import slurm as vslurm
from commscope.strict import shown
from commscope.units import parse_size

NAME = "vcluster"
HELP = "build, check or remove a virtual cluster of network namespaces on this machine (root)"
EXAMPLES = """examples:
  sudo commscope vcluster up --nodes 4             4 nodes joined by 1 gbit links
  sudo commscope vcluster up --nodes 2 --rate 100mbit --subnet 10.88.0.0/24
  sudo commscope vcluster up --nodes 2 --ssh       an sshd in every node: runs with --hostfile
  sudo commscope vcluster up --nodes 4 --slurm     a real Slurm: slurmctld here, slurmd per node
  sudo commscope vcluster up --nodes 3 --slurm --accounting
                                                   with slurmdbd: sacctmgr admin levels work
  sudo commscope vcluster up --nodes 4 --rate 50mbit --tcp-cc cubic
                                                   every node's TCP under CUBIC, not the host's
  sudo commscope vcluster up --nodes 4 --tcp-limit-output kernel
                                                   sockets may fill the nodes' queues (drops)
  sudo commscope vcluster up --nodes 4 --rate 200mbit,csnode3=50mbit
                                                   csnode3's link slower than the others
  sudo commscope vcluster up --nodes 4 --switches 2 --uplink-rate 50mbit
                                                   csnode1,2 and csnode3,4 on two switches
  sudo commscope vcluster up --nodes 4 --switches 2 --slurm --slurm-topology topology.conf
  sudo commscope vcluster slurm-topology topology.conf   Slurm reads this topology instead
  sudo commscope vcluster set csnode2 --rate 500mbit   one node's link slowed while it runs
  commscope vcluster status                        nodes and health (exit 1 if not healthy)
  sudo commscope vcluster down                     remove everything it made"""


def setup_parser(parser: argparse.ArgumentParser) -> None:
    """Add the ``up``, ``down`` and ``status`` actions."""
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    up = actions.add_parser(
        "up",
        help="build the cluster (safe to repeat with the same options)",
        description="Build a virtual cluster on this machine (root): one network namespace"
        " per node, links shaped by tc, optionally switches, sshd and Slurm.",
        epilog="""examples:
  sudo commscope vcluster up --nodes 4             4 nodes joined by 1 gbit links
  sudo commscope vcluster up --nodes 2 --ssh       an sshd in every node: runs with --hostfile
  sudo commscope vcluster up --nodes 4 --slurm     a real Slurm: slurmctld here, slurmd per node
  sudo commscope vcluster up --nodes 3 --slurm --accounting
                                                   with slurmdbd: sacctmgr admin levels work
  sudo commscope vcluster up --nodes 4 --switches 2 --uplink-rate 50mbit
""",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    up.add_argument(
        "--nodes",
        type=common.whole(1, vcluster.MAX_NODES),
        required=True,
        help=f"number of nodes, 1 .. {vcluster.MAX_NODES}",
    )
    common.option(
        up,
        "--rate",
        default=vcluster.DEFAULT_RATE,
        help="rate of each link in each direction, in tc syntax (100mbit, 1gbit); "
        "NODE=RATE items set nodes' own: 1gbit,csnode3=200mbit",
    )
    up.add_argument(
        "--switches",
        type=common.whole(1, vcluster.MAX_NODES),
        default=1,
        metavar="K",
        help="switches holding the nodes: 1, one bridge; 2 or more, leaves of contiguous "
        "blocks of nodes joined to a core by uplinks [default: 1]",
    )
    up.add_argument(
        "--uplink-rate",
        default="",
        metavar="RATE",
        help="rate of each leaf's uplink in each direction, tc syntax (needs --switches 2 or "
        "more) [default: the links' rate]",
    )
    common.option(
        up,
        "--subnet",
        default=vcluster.DEFAULT_SUBNET,
        help="IPv4 network of /24 or larger for the bridge and the nodes",
    )
    up.add_argument(
        "--tcp-cc",
        default="",
        metavar="NAME",
        help="TCP congestion control of every node, e.g. cubic (default: the host's, which "
        "nodes inherit); BBR slows connections that idle between steps: see"
        " docs/reference/vcluster.md",
    )
    up.add_argument(
        "--tcp-limit-output",
        type=_tcp_limit_output,
        default=vcluster.DEFAULT_TCP_LIMIT_OUTPUT,
        metavar="BYTES",
        help="bytes each TCP socket may keep in its node's shaped queue, 4K .. 64MiB, e.g. "
        "32K, or kernel for the kernel's default (4 MiB, under which a fan-out dropped about "
        "twice as many packets: see docs/reference/vcluster.md) [default: %(default)s]",
    )
    up.add_argument(
        "--tcp-slow-start-after-idle",
        type=_slow_start_after_idle,
        default=-1,
        metavar="0|1|kernel",
        help="net.ipv4.tcp_slow_start_after_idle of every node: 1 restarts a connection idle "
        "past its RTO from the initial window, 0 does not; kernel leaves the kernel's (1) "
        "[default: kernel]",
    )
    up.add_argument(
        "--ssh",
        action="store_true",
        help="run an OpenSSH server in every node (keys made now, gone at 'down')",
    )
    up.add_argument(
        "--slurm",
        action="store_true",
        help="run Slurm: slurmctld and munged here, one slurmd in every node",
    )
    up.add_argument(
        "--accounting",
        action="store_true",
        help="with --slurm: slurmdbd and a MariaDB of its own (127.0.0.1:6830), so that "
        "sacctmgr works, e.g. to give a user AdminLevel=Administrator",
    )
    up.add_argument(
        "--slurm-topology",
        metavar="FILE",
        help="Slurm's topology.conf (topology/tree) instead of the cluster's own switches, "
        "e.g. one 'commscope topology RUN -o FILE' wrote (needs --slurm)",
    )
    actions.add_parser(
        "down",
        help="stop its daemons; remove every namespace, link, key, "
        "configuration, hosts entry and state file",
        description="Remove the virtual cluster: its daemons, namespaces, links, keys,"
        " configuration, hosts entries and state file.",
        epilog="examples:\n  sudo commscope vcluster down",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    change = actions.add_parser(
        "set",
        help="change one node's link rate while the cluster runs (a fault put in on purpose)",
        description="Shape one node's link at another rate, both directions; 'set NODE --rate"
        " RATE' with the cluster's rate undoes it.",
        epilog="examples:\n  sudo commscope vcluster set csnode2 --rate 500mbit   half of 1gbit",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    change.add_argument("node", help="the node's name, e.g. csnode2")
    common.option(change, "--rate", required=True, help="its link rate in tc syntax (500mbit)")
    topo = actions.add_parser(
        "slurm-topology",
        help="give the running cluster's Slurm another topology.conf (scontrol reconfigure)",
        description="Check a topology/tree file against the cluster's nodes, write it to "
        "/etc/slurm/topology.conf and have slurmctld read it; print 'scontrol show topology'.",
        epilog="examples:\n  commscope run matrix --vcluster\n"
        "  commscope topology latest -o t.conf\n"
        "  sudo commscope vcluster slurm-topology t.conf",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    topo.add_argument("file", metavar="FILE", help="the topology.conf to use")
    status = actions.add_parser(
        "status",
        help="show the nodes and check their health",
        description="Show the virtual cluster's nodes, links and daemons; exit 1 if it is"
        " not healthy.",
        epilog="examples:\n  commscope vcluster status\n  commscope vcluster status --json",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    status.add_argument("--json", action="store_true", help="print the state as JSON")


def _slow_start_after_idle(text: str) -> int:
    """``kernel`` (-1: leave every node's setting as it is), 0 or 1."""
    choices = {"kernel": -1, "0": 0, "1": 1}
    if text.strip().lower() not in choices:
        raise argparse.ArgumentTypeError(f"{text!r}: give 0, 1 or kernel")
    return choices[text.strip().lower()]


def _tcp_limit_output(text: str) -> int:
    """``kernel`` (0: leave every node's net.ipv4.tcp_limit_output_bytes as it is) or a size.

    The range is :func:`vcluster.plan`'s to check; 0 is refused here, where it would
    otherwise read as ``kernel``.
    """
    if text.strip().lower() == "kernel":
        return 0
    try:
        limit = parse_size(text)
    except InputError:
        limit = 0
    if limit == 0:
        raise argparse.ArgumentTypeError(
            f"{shown(text)} is not a limit: give bytes such as 32768, 32K or 1MiB, or kernel"
        )
    return limit


def run(args: argparse.Namespace) -> int:
    """Carry out the chosen action; return the exit status."""
    if args.action == "up":
        return _up(args)
    if args.action == "down":
        return _down()
    if args.action == "slurm-topology":
        state = vcluster.status()
        if state is None:
            raise UsageError(
                "no vcluster is up: start one with 'commscope vcluster up --nodes N --slurm'"
            )
        text = _read_topology(args.file)
        try:
            vslurm.check_topology(text, state, args.file)
        except ClusterError as err:
            raise UsageError(str(err)) from None
        shown = vslurm.use_topology(state, text, args.file)
        print(f"vcluster: Slurm now reads {common.terminal_text(args.file)}:")
        print(common.terminal_text(shown.rstrip()))
        return 0
    if args.action == "set":
        try:
            vcluster.parse_rate(args.rate)
        except ClusterError as err:
            raise UsageError(str(err)) from None
        vcluster.set_rate(args.node, args.rate)
        print(f"vcluster: {args.node}'s link now at {args.rate.strip().lower()} both ways")
        return 0
    return _status(args.json)


def _read_topology(path: str) -> str:
    try:
        with open(path, encoding="utf-8") as file:
            return file.read(1 << 20)
    except (OSError, UnicodeDecodeError) as err:
        why = getattr(err, "strerror", None) or "not UTF-8 text"
        raise UsageError(
            f"--slurm-topology {shown(path)}: cannot read it ({why}): give a topology.conf"
            " such as 'commscope topology RUN -o FILE' writes"
        ) from None


def _up(args: argparse.Namespace) -> int:
    # Bad input exits 2 like every other usage error; only the build itself raises ClusterError.
    wanted = tuple(name for name in ("ssh", "slurm", "accounting") if getattr(args, name))
    topology = ""
    try:
        planned = vcluster.plan(
            args.nodes,
            rate=args.rate,
            subnet=args.subnet,
            services=wanted,
            tcp_cc=args.tcp_cc,
            tcp_limit_output=args.tcp_limit_output,
            slow_start_after_idle=args.tcp_slow_start_after_idle,
            switches=args.switches,
            uplink_rate=args.uplink_rate,
        )
        if args.tcp_cc:
            vcluster.check_congestion_control(args.tcp_cc)
        if args.slurm_topology is not None:
            if not args.slurm:
                raise ClusterError(
                    f"--slurm-topology {shown(args.slurm_topology)} without --slurm: there is"
                    " no Slurm to read it; add --slurm"
                )
            topology = _read_topology(args.slurm_topology)
            vslurm.check_topology(topology, planned, args.slurm_topology)
    except ClusterError as err:
        raise UsageError(str(err)) from None
    state = vcluster.up(
        args.nodes,
        rate=args.rate,
        subnet=args.subnet,
        services=wanted,
        tcp_cc=args.tcp_cc,
        tcp_limit_output=args.tcp_limit_output,
        slow_start_after_idle=args.tcp_slow_start_after_idle,
        switches=args.switches,
        uplink_rate=args.uplink_rate,
    )
    print(f"vcluster up: {_summary(state)}")
    _print_nodes(state)
    if topology:
        vslurm.use_topology(state, topology, args.slurm_topology)
        print(f"  Slurm's topology: {common.terminal_text(args.slurm_topology)}")
    return 0


def _print_nodes(state: vcluster.ClusterState) -> None:
    """A line per node: name, address, and its switch and own rate where they say something."""
    for node in state.nodes:
        extra = f"  switch {node.switch}" if state.switches > 1 else ""
        extra += f"  link {node.rate}" if node.rate else ""
        print(f"  {node.name:<10} {node.address}{extra}")


def _down() -> int:
    removed = vcluster.down()
    if not removed:
        print("vcluster down: nothing to remove")
    for piece in removed:
        print(f"removed {piece}")
    return 0


def _status(as_json: bool) -> int:
    state = vcluster.status()
    if as_json:
        data = (
            None
            if state is None
            else {**state.to_json(), "healthy": state.healthy, "problems": list(state.problems)}
        )
        common.print_json(data)
    elif state is None:
        print("no vcluster is up (start one with 'commscope vcluster up --nodes N')")
    else:
        print(f"vcluster: {_summary(state)}: {'healthy' if state.healthy else 'BROKEN'}")
        _print_nodes(state)
        for problem in state.problems:
            print(f"  problem: {problem}")
        if not state.healthy:
            print("  fix: 'commscope vcluster down', then 'up' again")
    return 0 if state is not None and state.healthy else 1


def _summary(state: vcluster.ClusterState) -> str:
    extra = f", running {' and '.join(state.services)}" if state.services else ""
    extra += f", TCP {state.tcp_cc} in every node" if state.tcp_cc else ""
    if state.tcp_limit_output:
        extra += f", {state.tcp_limit_output} bytes queued per TCP socket"
    if state.slow_start_after_idle >= 0:
        extra += f", tcp_slow_start_after_idle {state.slow_start_after_idle}"
    switches = (
        f", {state.switches} switches ({', '.join(state.leaves)}) joined by {state.uplink_rate}"
        f" uplinks to the core {state.bridge}"
        if state.switches > 1
        else ""
    )
    return (
        f"{len(state.nodes)} nodes, {state.rate} links, subnet {state.subnet}, "
        f"bridge {state.bridge} at {state.bridge_address}{switches}{extra}"
    )
