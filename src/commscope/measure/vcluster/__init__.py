"""Virtual cluster: network namespaces on one machine, joined by rate-limited kernel TCP links.

Each node ``csnodeI`` is a network namespace with one veth link (``eth0`` inside, ``csvethI``
outside) attached to the bridge ``csbr0``. Both directions of every link are shaped with
``tc tbf``, so traffic between two nodes crosses two shaped hops, as on a switched network.
With two or more switches the nodes sit in contiguous blocks on leaf bridges ``csbr1..K``,
each joined to the core ``csbr0`` by an uplink (a veth pair ``csupK``/``csuplK``) shaped both
ways at its own rate. The node names go into a marked block of /etc/hosts.

Modules, one job each (import the names below from here):

- ``model``: what a cluster is (:class:`Node`, :class:`ClusterState`), rates and the plan.
- ``system``: commands, namespace and link queries, the state file and /etc/hosts.
- ``lifecycle``: :func:`up`, :func:`down` and :func:`status`, built from ``system``.
- ``launch``: agent scripts and MPI launcher arguments; runs nothing, the launcher does.
- ``services``, ``ssh``, ``slurm``: daemons in the nodes (``up --ssh``, ``up --slurm``): a real
  sshd per node, and a real Slurm (slurmctld and munged here, one slurmd per node).
"""

from commscope.measure.vcluster.launch import AGENTS_DIR, agent_path, mpich_args, openmpi_args
from commscope.measure.vcluster.lifecycle import NODE_IFACE, down, set_rate, status, up
from commscope.measure.vcluster.model import (
    BRIDGE,
    BRIDGE_PREFIX,
    BURST_SECONDS,
    DEFAULT_RATE,
    DEFAULT_SUBNET,
    DEFAULT_TCP_LIMIT_OUTPUT,
    MAX_NODES,
    MAX_RATE_BPS,
    MAX_TCP_LIMIT_OUTPUT,
    MIN_BURST_BYTES,
    MIN_QUEUE_BYTES,
    MIN_RATE_BPS,
    MIN_TCP_LIMIT_OUTPUT,
    NODE_PREFIX,
    QUEUE_SECONDS,
    STATE_DIR,
    STATE_FILE,
    STATE_FORMAT,
    UPLINK_PREFIX,
    VETH_PREFIX,
    ClusterState,
    Node,
    Uplink,
    burst_bytes,
    check_switches,
    parse_rate,
    parse_rates,
    plan,
    queue_bytes,
)
from commscope.measure.vcluster.services import alive, daemons
from commscope.measure.vcluster.system import (
    COMMAND_TIMEOUT_S,
    HOSTS_FILE,
    HOSTS_MARK,
    TOOLS,
    check_congestion_control,
    congestion_control,
    tcp_limit_output,
)

__all__ = [
    "AGENTS_DIR",
    "BRIDGE",
    "BRIDGE_PREFIX",
    "BURST_SECONDS",
    "COMMAND_TIMEOUT_S",
    "DEFAULT_RATE",
    "DEFAULT_SUBNET",
    "DEFAULT_TCP_LIMIT_OUTPUT",
    "HOSTS_FILE",
    "HOSTS_MARK",
    "MAX_NODES",
    "MAX_RATE_BPS",
    "MAX_TCP_LIMIT_OUTPUT",
    "MIN_BURST_BYTES",
    "MIN_QUEUE_BYTES",
    "MIN_RATE_BPS",
    "MIN_TCP_LIMIT_OUTPUT",
    "NODE_IFACE",
    "NODE_PREFIX",
    "QUEUE_SECONDS",
    "STATE_DIR",
    "STATE_FILE",
    "STATE_FORMAT",
    "TOOLS",
    "UPLINK_PREFIX",
    "VETH_PREFIX",
    "ClusterState",
    "Node",
    "Uplink",
    "agent_path",
    "alive",
    "burst_bytes",
    "check_congestion_control",
    "check_switches",
    "congestion_control",
    "daemons",
    "down",
    "mpich_args",
    "openmpi_args",
    "parse_rate",
    "parse_rates",
    "plan",
    "queue_bytes",
    "set_rate",
    "status",
    "tcp_limit_output",
    "up",
]
