"""A SimGrid platform and hostfile from a cluster model and its simulation parameters.

One host per node with one core per model core, so SMPI sees the ranks of a node as one node
(MPI_Comm_split_type, processor names). Transfers between two ranks of a node take the node's
own route to itself: its memory link, SHARED, so they contend with each other. (A
``<cluster>``'s loopback is a FATPIPE in SimGrid 3.32 and would hide that contention.) A
transfer between nodes crosses the sender's NIC going up, the fabric, the receiver's NIC going
down. A NIC is two links, one per direction, so each direction has the full rate (what
SPLITDUPLEX means; SimGrid 3.32's tracing aborts on SPLITDUPLEX links, and the network load
needs the trace). With switches in the model, nodes behind different switches also cross both
switches' uplinks and a core fabric. The socket interconnect is not modelled apart: a node's
transfers all share its memory link.

How it is written, in time and memory linear in the nodes wherever SimGrid allows:

- a flat model: one ``Cluster`` zone (SimGrid's star): each host's NIC up link and down link,
  the fabric as its backbone, and its memory link as its route to itself;
- listed switches: one route per ordered pair of nodes (N^2: at most
  MAX_SIMULATED_SWITCHED_NODES nodes; a fat tree describes the same network at any size);
- a topology (fat tree, dragonfly, torus): one SimGrid cluster zone of that topology, whose
  routes SimGrid computes. Every link has the NIC's rate and latency plus the switch latency
  (a hop is a link and the switch it reaches); a node's route to itself is the zone's
  loopback at the memory link's figures, a FATPIPE (SimGrid 3.32's only kind).
"""

from __future__ import annotations

import re
from xml.sax.saxutils import quoteattr

from commscope import strict
from commscope.errors import InputError
from commscope.limits import MAX_SIMULATED_NODES, MAX_SIMULATED_SWITCHED_NODES
from commscope.predict.model import ClusterModel
from commscope.predict.placement import Placement
from commscope.simulate.params import SimParams

# The fabric itself never limits bandwidth; it carries the switch latency.
FABRIC_BPS = 1e15
_SAFE_NAME = re.compile(r"[A-Za-z0-9_.\-]+")


def check_model(model: ClusterModel) -> None:
    """Refuse a model no platform is written for: too many nodes, or unsafe node names.

    Listed switches take a route for every ordered pair of nodes, N^2 of them (1,000 nodes:
    152 MB written in 6.8 s), so at most MAX_SIMULATED_SWITCHED_NODES nodes; flat models and
    topologies are written in linear time, up to MAX_SIMULATED_NODES nodes.

    Raises:
        InputError: the model has more nodes, or a node name SimGrid cannot take.
    """
    where = model.source or model.name
    if model.nodes > MAX_SIMULATED_NODES:
        raise InputError(
            f"{where}: {model.nodes} nodes; a simulated model has at most"
            f" {MAX_SIMULATED_NODES}; model fewer nodes"
        )
    if model.switches and model.topology is None and model.nodes > MAX_SIMULATED_SWITCHED_NODES:
        raise InputError(
            f"{where}: switches: {model.nodes} nodes behind listed switches; a simulated"
            f" model lists at most {MAX_SIMULATED_SWITCHED_NODES} (its platform lists all N^2"
            " routes); describe the network as a topology (kind: fat_tree) instead"
        )
    for name in model.node_names:
        if not _SAFE_NAME.fullmatch(name):
            raise InputError(
                f"{where}: node name {strict.shown(name)}: SimGrid host names here"
                " may hold only letters, digits, '.', '_' and '-'"
            )


def check_netload(model: ClusterModel) -> None:
    """Refuse to trace per-link loads where SimGrid, not this module, names the links.

    Raises:
        InputError: the model has a topology.
    """
    if model.topology is not None:
        raise InputError(
            f"--netload: SimGrid computes the routes of the model's {model.topology.kind},"
            " so per-link loads are traced on flat models and listed switches only;"
            " leave --netload out"
        )


def _link(name: str, bw: float, lat: float, sharing: str) -> str:
    return (
        f'    <link id={quoteattr(name)} bandwidth="{bw:.9g}Bps" latency="{lat:.9g}s"'
        f' sharing_policy="{sharing}"/>\n'
    )


def _route(src: str, dst: str, links: list[str]) -> str:
    parts = "".join(f"<link_ctn id={quoteattr(name)}/>" for name in links)
    return (
        f'    <route src={quoteattr(src)} dst={quoteattr(dst)} symmetrical="NO">{parts}</route>\n'
    )


def route_links(model: ClusterModel, i: int, j: int) -> list[str]:
    """Names of the links a transfer from node ``i`` to node ``j`` crosses, in order."""
    names = model.node_names
    check_netload(model)
    if i == j:
        return [f"{names[i]}-memory"]
    links = [f"{names[i]}-nic-up"]
    if not model.switches:
        links.append("fabric")
    elif model.switch_of[i] == model.switch_of[j]:
        links.append(f"{model.switches[model.switch_of[i]].name}-fabric")
    else:
        sa = model.switches[model.switch_of[i]].name
        sb = model.switches[model.switch_of[j]].name
        links += [
            f"{sa}-fabric",
            f"{sa}-uplink-up",
            "core-fabric",
            f"{sb}-uplink-down",
            f"{sb}-fabric",
        ]
    links.append(f"{names[j]}-nic-down")
    return links


def platform_xml(model: ClusterModel, params: SimParams, core_flops: float = 1e9) -> str:
    """The SimGrid (platform version 4.1) description of ``model``.

    ``core_flops`` is each core's speed; it matters only when computation is simulated.
    """
    check_model(model)
    head = [
        "<?xml version='1.0'?>\n",
        '<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">\n',
        '<platform version="4.1">\n',
        f"  <!-- {model.nodes} nodes x {model.cores_per_node} cores, written by commscope -->\n",
    ]
    if model.topology is not None:
        body = _topology_zone(model, params, core_flops)
    elif model.switches:
        body = _routed_zone(model, params, core_flops)
    else:
        body = _star_zone(model, params, core_flops)
    return "".join(head + body + ["</platform>\n"])


def _host(name: str, model: ClusterModel, core_flops: float) -> str:
    return (
        f'    <host id={quoteattr(name)} speed="{core_flops:.9g}f"'
        f' core="{model.cores_per_node}"/>\n'
    )


def _star_zone(model: ClusterModel, params: SimParams, core_flops: float) -> list[str]:
    """A flat model: each host's up and down NIC links and the fabric (the backbone)."""
    names = model.node_names
    out = ['  <zone id="cluster" routing="Cluster">\n']
    out += [_host(name, model, core_flops) for name in names]
    for name in names:
        out.append(_link(f"{name}-memory", params.memory_bw_Bps, params.memory_lat_s, "SHARED"))
        for way in ("up", "down"):
            out.append(_link(f"{name}-nic-{way}", params.nic_bw_Bps, params.nic_lat_s, "SHARED"))
    # A backbone is SHARED in SimGrid 3.32; at FABRIC_BPS it never limits a transfer.
    out.append(
        f'    <backbone id="fabric" bandwidth="{FABRIC_BPS:.9g}Bps"'
        f' latency="{params.switch_lat_s:.9g}s"/>\n'
    )
    out += [
        f'    <host_link id={quoteattr(n)} up="{n}-nic-up" down="{n}-nic-down"/>\n' for n in names
    ]
    out += [_route(n, n, [f"{n}-memory"]) for n in names]
    out.append("  </zone>\n")
    return out


def _routed_zone(model: ClusterModel, params: SimParams, core_flops: float) -> list[str]:
    """Listed switches: every route of every ordered pair of nodes."""
    names = model.node_names
    out = ['  <zone id="cluster" routing="Full">\n']
    out += [_host(name, model, core_flops) for name in names]
    for name in names:
        out.append(_link(f"{name}-memory", params.memory_bw_Bps, params.memory_lat_s, "SHARED"))
        for way in ("up", "down"):
            out.append(_link(f"{name}-nic-{way}", params.nic_bw_Bps, params.nic_lat_s, "SHARED"))
    for sw in model.switches:
        up = sw.uplink
        for way in ("up", "down"):
            out.append(
                _link(
                    f"{sw.name}-uplink-{way}",
                    float(up.bandwidth_Bps or FABRIC_BPS),
                    float(up.latency_s or 0.0),
                    "SHARED",
                )
            )
        out.append(_link(f"{sw.name}-fabric", FABRIC_BPS, params.switch_lat_s, "FATPIPE"))
    out.append(_link("core-fabric", FABRIC_BPS, params.switch_lat_s, "FATPIPE"))
    for i, a in enumerate(names):
        for j, b in enumerate(names):
            out.append(_route(a, b, route_links(model, i, j)))
    out.append("  </zone>\n")
    return out


def _topology_zone(model: ClusterModel, params: SimParams, core_flops: float) -> list[str]:
    """A topology: one SimGrid cluster zone of that topology.

    SPLITDUPLEX makes each cable an up and a down link, both SHARED (not a SimGrid
    split-duplex link, which tracing cannot take).
    """
    assert model.topology is not None
    kind, parameters = model.topology.simgrid()
    return [
        f'  <cluster id="cluster" prefix="node" suffix="" radical="0-{model.nodes - 1}"'
        f' speed="{core_flops:.9g}f" core="{model.cores_per_node}"'
        f' bw="{params.nic_bw_Bps:.9g}Bps" lat="{topology_link_latency(params):.9g}s"'
        f' sharing_policy="SPLITDUPLEX" topology="{kind}" topo_parameters="{parameters}"'
        f' loopback_bw="{params.memory_bw_Bps:.9g}Bps"'
        f' loopback_lat="{params.memory_lat_s:.9g}s"/>\n'
    ]


def topology_link_latency(params: SimParams) -> float:
    """Latency of each link of a topology: the NIC's, plus the switch latency."""
    return params.nic_lat_s + params.switch_lat_s


def hostfile(model: ClusterModel, placement: Placement) -> str:
    """One line per rank: the host it runs on (smpirun fills ranks in line order)."""
    check_model(model)
    return "".join(f"{model.node_names[int(n)]}\n" for n in placement.node)
