"""Cluster models from YAML files, validated with one-line errors naming the file and field.

Format (every key but ``nodes``, ``sockets`` and ``cores`` may be left out)::

    name: rack1                 # shown in outputs; default: the file name
    nodes: 16                   # a count (names node0..node15) or a list of host names
                                # (RFC 1123: letters, digits, hyphens, dots)
    sockets: 2                  # per node
    cores: 6                    # per socket
    channels:                   # nominal figures, used when no measurement covers a level
      memory: {bandwidth: 10GB/s, latency: 0.3us}     # each socket's memory controller
      socket: {bandwidth: 12GB/s, latency: 0.5us}     # each node's socket interconnect
      nic:    {bandwidth: 40Gbit/s, latency: 1.5us}   # each node's NIC, each direction
    switches:                   # optional: every node behind exactly one switch
      - name: leaf0
        nodes: 0-7              # indices "A-B", or a list of indices or host names
        uplink: {bandwidth: 100Gbit/s}
    topology:                   # optional, instead of switches: the network's shape
      kind: fat_tree            # fat_tree, dragonfly or torus (commscope.predict.topologies)
      down: [16, 8]             # fat tree, per switch level: elements below each switch
      up: [1, 8]                # per level: switches each element below links up to
      links: [1, 2]             # per level: parallel links (default 1); ports: per switch
                                # dragonfly: groups, chassis, routers, nodes_per_router,
                                #   links: {groups, chassis, routers}; torus: dims: [8, 8, 16]

With a topology, ``nodes`` may be left out (the topology's count, named node0, node1, ...);
if given it must be that count. Every link of the topology has the NIC's rate and latency.

Bandwidths: a number of bytes/s, or with a unit: B/s, kB/s, MB/s, GB/s, TB/s (decimal),
KiB/s, MiB/s, GiB/s, bit/s, kbit/s, Mbit/s, Gbit/s, Tbit/s (SimGrid's Bps and bps also work).
Latencies: seconds, or with a unit: s, ms, us, ns.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

import yaml

from commscope import limits, strict
from commscope.errors import PredictError
from commscope.predict import topologies
from commscope.predict.model import ClusterModel, Link, Switch, host_name_problem

# "simulation" holds SimGrid parameters (commscope.simulate.params); prediction ignores it.
_TOP = ("name", "nodes", "sockets", "cores", "channels", "switches", "topology", "simulation")
_CHANNELS = {"memory": "memory", "socket": "socket_link", "nic": "nic"}
_LINK = ("bandwidth", "latency")
_SWITCH = ("name", "nodes", "uplink")
_BYTES = {
    "b": 1.0,
    "kb": 1e3,
    "mb": 1e6,
    "gb": 1e9,
    "tb": 1e12,
    "kib": 2.0**10,
    "mib": 2.0**20,
    "gib": 2.0**30,
    "tib": 2.0**40,
}
_BITS = {"bit": 1.0, "kbit": 1e3, "mbit": 1e6, "gbit": 1e9, "tbit": 1e12}
_SECONDS = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "ns": 1e-9}
_NUMBER = r"([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)"
_RATE_RE = re.compile(_NUMBER + r"\s*([A-Za-z]*)(/s)?")
_TIME_RE = re.compile(_NUMBER + r"\s*([a-z]*)", re.IGNORECASE)
_RANGE_RE = re.compile(r"([0-9]+)\s*-\s*([0-9]+)")
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")
RATE_FORMS = (
    f"e.g. 12.5GB/s, 100Gbit/s, 1e9 (bytes/s), from {limits.MIN_RATE_BPS:g} to"
    f" {limits.MAX_RATE_BPS:g} bytes/s"
)
TIME_FORMS = f"e.g. 1.5us, 0.2ms, 2e-6 (seconds), from 0 to {limits.MAX_LATENCY_S:g} s"
MAX_FILE_BYTES = 16 << 20  # a model of MAX_MODEL_NODES named nodes takes about 2 MB
MAX_NAME_CHARS = limits.MAX_HOST_NAME_CHARS  # switch names: as long as a host name


def _rate(value: float) -> float | None:
    """``value`` if it is a bandwidth within the stated bounds (finite), else None."""
    ok = math.isfinite(value) and limits.MIN_RATE_BPS <= value <= limits.MAX_RATE_BPS
    return value if ok else None


def _delay(value: float) -> float | None:
    """``value`` if it is a latency within the stated bounds (finite), else None."""
    return value if math.isfinite(value) and 0 <= value <= limits.MAX_LATENCY_S else None


def parse_bandwidth(value: Any) -> float | None:
    """A bandwidth in bytes/s from a number or text such as ``40Gbit/s``; None if not one."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return _rate(float(value)) if abs(value) < 1e300 else None
    if not isinstance(value, str) or len(value) > limits.MAX_NUMBER_CHARS:
        return None
    match = _RATE_RE.fullmatch(value.strip())
    if match is None:
        return None
    number, unit, per = float(match.group(1)), match.group(2), match.group(3)
    scale: float | None = None
    if not unit and not per:
        scale = 1.0
    elif per and unit.lower() in _BITS:
        scale = _BITS[unit.lower()] / 8
    elif per and unit.endswith("B") and unit.lower() in _BYTES:
        scale = _BYTES[unit.lower()]
    elif not per and unit.endswith("Bps"):  # SimGrid: Bps is bytes/s, bps bits/s
        scale = _BYTES.get(unit[:-3].lower() + "b")
    elif not per and unit.endswith("bps"):
        bits = _BITS.get(unit[:-3].lower() + "bit")
        scale = None if bits is None else bits / 8
    if scale is None:
        return None
    return _rate(number * scale)


def parse_latency(value: Any) -> float | None:
    """A latency in seconds from a number or text such as ``1.5us``; None if not one."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return _delay(float(value)) if abs(value) < 1e300 else None
    if not isinstance(value, str) or len(value) > limits.MAX_NUMBER_CHARS:
        return None
    match = _TIME_RE.fullmatch(value.strip().lower())
    if match is None or match.group(2) not in _SECONDS:
        return None
    return _delay(float(match.group(1)) * _SECONDS[match.group(2)])


class _Reader:
    """Checks one file's fields; every error names the file and the field."""

    def __init__(self, where: str) -> None:
        self.where = where

    def fail(self, field: str, message: str) -> PredictError:
        return PredictError(f"{self.where}: {field}: {message}")

    def mapping(self, value: Any, field: str, known: tuple[str, ...]) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise self.fail(field, f"expected a mapping with keys {', '.join(known)}")
        for key in value:
            if key not in known:
                raise self.fail(
                    f"{field}.{key}" if field != "(top)" else str(key),
                    f"unknown field; expected one of {', '.join(known)}",
                )
        return value

    def count(self, value: Any, field: str, most: int) -> int:
        try:
            return strict.check_whole(value, 1, most)
        except strict.NumberError as err:
            raise self.fail(field, str(err)) from None

    def text(self, value: Any, field: str) -> str:
        if isinstance(value, bool) or not isinstance(value, (str, int)):
            raise self.fail(field, f"{strict.shown(value)} is not a name; give text")
        return str(value)

    def name(self, value: Any, field: str, most: int) -> str:
        text = self.text(value, field)
        if not text.strip() or len(text) > most or _CONTROL.search(text):
            raise self.fail(
                field, f"{strict.shown(text)}: give a name of 1 to {most} printable characters"
            )
        return text

    def host(self, value: Any, field: str) -> str:
        text = self.text(value, field)
        if problem := host_name_problem(text):
            raise self.fail(field, problem)
        return text

    def link(self, value: Any, field: str) -> Link:
        data = self.mapping(value, field, _LINK)
        bw = data.get("bandwidth")
        lat = data.get("latency")
        rate = None if bw is None else parse_bandwidth(bw)
        if bw is not None and rate is None:
            raise self.fail(f"{field}.bandwidth", f"{bw!r} is not a bandwidth; use {RATE_FORMS}")
        delay = None if lat is None else parse_latency(lat)
        if lat is not None and delay is None:
            raise self.fail(f"{field}.latency", f"{lat!r} is not a latency; use {TIME_FORMS}")
        return Link(rate, delay)

    def node_names(self, value: Any) -> tuple[str, ...]:
        if isinstance(value, list):
            if not value or len(value) > limits.MAX_MODEL_NODES:
                raise self.fail(
                    "nodes", f"give a list of 1 to {limits.MAX_MODEL_NODES} host names, or a count"
                )
            names = tuple(self.host(n, f"nodes[{i}]") for i, n in enumerate(value))
            if len(set(names)) != len(names):
                raise self.fail("nodes", "host names must be distinct")
            return names
        count = self.count(value, "nodes", limits.MAX_MODEL_NODES)
        return tuple(f"node{i}" for i in range(count))

    def switch_nodes(self, value: Any, field: str, names: tuple[str, ...]) -> tuple[int, ...]:
        index = {n: i for i, n in enumerate(names)}
        if isinstance(value, str) and (match := _RANGE_RE.fullmatch(value.strip())):
            lo, hi = (int(x) if len(x) < 10 else len(names) for x in match.groups())
            if not lo <= hi < len(names):
                raise self.fail(
                    field,
                    f"{strict.shown(value)}: give indices A-B with A <= B <= {len(names) - 1}",
                )
            items: list[Any] = list(range(lo, hi + 1))
        elif isinstance(value, list) and value:
            items = value
        else:
            raise self.fail(
                field, f"{value!r}: give node indices 'A-B' or a list of indices or host names"
            )
        out = []
        for item in items:
            if isinstance(item, int) and not isinstance(item, bool) and 0 <= item < len(names):
                out.append(item)
            elif isinstance(item, str) and item in index:
                out.append(index[item])
            else:
                raise self.fail(
                    field,
                    f"{item!r} is not a node of this model (indices"
                    f" 0-{len(names) - 1} or host names)",
                )
        return tuple(out)


def model_from_dict(data: Any, where: str) -> ClusterModel:
    """Build and validate a model from decoded YAML.

    Args:
        data: the decoded document.
        where: the file name, used in errors and as the default name.

    Raises:
        PredictError: a field is missing, unknown or invalid (one line naming it).
    """
    r = _Reader(where)
    top = r.mapping(data, "(top)", _TOP)
    topology = None if top.get("topology") is None else topologies.parse(top["topology"], r.fail)
    for key in ("nodes", "sockets", "cores"):
        if key not in top and not (key == "nodes" and topology is not None):
            raise r.fail(
                key, "missing; a model needs nodes, sockets (per node) and cores (per socket)"
            )
    if topology is not None:
        names = _topology_nodes(r, top.get("nodes"), topology)
    else:
        names = r.node_names(top["nodes"])
    links = {attr: Link() for attr in _CHANNELS.values()}
    channels = r.mapping(top.get("channels", {}) or {}, "channels", tuple(_CHANNELS))
    for key, value in channels.items():
        links[_CHANNELS[key]] = r.link(value, f"channels.{key}")
    switches = []
    raw_switches = top.get("switches") or []
    if not isinstance(raw_switches, list):
        raise r.fail("switches", "expected a list of switches (name, nodes, uplink)")
    seen: dict[int, str] = {}
    for k, raw in enumerate(raw_switches):
        field = f"switches[{k}]"
        sw = r.mapping(raw, field, _SWITCH)
        name = r.name(sw.get("name", f"switch{k}"), f"{field}.name", MAX_NAME_CHARS)
        if "nodes" not in sw:
            raise r.fail(f"{field}.nodes", "missing: which nodes are behind this switch")
        nodes = r.switch_nodes(sw["nodes"], f"{field}.nodes", names)
        for n in nodes:
            if n in seen:
                raise r.fail(
                    f"{field}.nodes", f"node {names[n]} is behind switch {seen[n]} already"
                )
            seen[n] = name
        uplink = r.link(sw.get("uplink"), f"{field}.uplink")
        if uplink.bandwidth_Bps is None:
            raise r.fail(f"{field}.uplink.bandwidth", "missing; switches need an uplink rate")
        switches.append(Switch(name, nodes, uplink))
    if topology is not None:
        if raw_switches:
            raise r.fail("switches", "give either switches or a topology, not both")
        if links["nic"].bandwidth_Bps is None:
            raise r.fail(
                "channels.nic.bandwidth",
                "missing; a topology's links all have the NIC rate: give it",
            )
        switches = _leaf_switches(topology, links["nic"])
    elif switches:
        lost = [names[i] for i in range(len(names)) if i not in seen]
        if lost:
            raise r.fail("switches", f"node {lost[0]} is behind no switch; list every node")
        if links["nic"].bandwidth_Bps is None:
            raise r.fail(
                "channels.nic.bandwidth",
                "missing; switches need the NIC rate to compare uplinks with NICs",
            )
    name = r.name(top.get("name", Path(where).stem or "model"), "name", limits.MAX_LABEL_CHARS)
    return ClusterModel(
        name=name,
        node_names=names,
        sockets=r.count(top["sockets"], "sockets", limits.MAX_SOCKETS),
        cores=r.count(top["cores"], "cores", limits.MAX_CORES_PER_SOCKET),
        memory=links["memory"],
        socket_link=links["socket_link"],
        nic=links["nic"],
        switches=tuple(switches),
        source=where,
        topology=topology,
    )


def _topology_nodes(r: _Reader, value: Any, topology: topologies.Topology) -> tuple[str, ...]:
    """Names node0.. of a topology's nodes; ``nodes``, if given, must be their count."""
    if value is not None:
        if isinstance(value, list):
            raise r.fail(
                "nodes",
                f"with a topology give a count ({topology.nodes}) or leave nodes out:"
                " its nodes are named node0, node1, ... in topology order",
            )
        count = r.count(value, "nodes", limits.MAX_MODEL_NODES)
        if count != topology.nodes:
            raise r.fail(
                "nodes",
                f"{count}, but the {topology.describe()} holds {topology.nodes};"
                f" set nodes: {topology.nodes} (or leave it out) or change the topology",
            )
    return tuple(f"node{i}" for i in range(topology.nodes))


def _leaf_switches(topology: topologies.Topology, nic: Link) -> list[Switch]:
    """The topology's leaves as switches, each uplink at its links' total NIC rate."""
    leaves = topology.leaves()
    if leaves is None:
        return []
    rate = float(nic.bandwidth_Bps or 0.0) * leaves.uplink_links
    return [
        Switch(f"{leaves.name}{k}", tuple(range(start, start + leaves.size)), Link(rate))
        for k, start in enumerate(range(0, topology.nodes, leaves.size))
    ]


def load_model(path: str | Path) -> ClusterModel:
    """Read a cluster model from a YAML file.

    Raises:
        PredictError: the file cannot be read, is not YAML, or a field is invalid.
    """
    return model_from_dict(load_document(path), str(path))


def load_document(path: str | Path) -> Any:
    """The decoded YAML of a model file (not yet validated).

    Raises:
        PredictError: the file cannot be read or is not YAML.
    """
    where = str(path)
    try:
        with open(path, "rb") as f:
            raw = f.read(MAX_FILE_BYTES + 1)
    except OSError as err:
        raise PredictError(f"{where}: cannot read the cluster model ({err.strerror})") from None
    if len(raw) > MAX_FILE_BYTES:
        raise PredictError(
            f"{where}: larger than {MAX_FILE_BYTES >> 20} MiB, not a cluster"
            " model; give the model's YAML file"
        )
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        raise PredictError(
            f"{where}: byte {err.start} is not UTF-8 text; give the model's YAML file"
        ) from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        line = f" line {mark.line + 1}" if mark is not None else ""
        raise PredictError(
            f"{where}:{line} not valid YAML ({getattr(err, 'problem', err)})"
        ) from None
    except RecursionError:
        raise PredictError(
            f"{where}: nested too deeply to read; a cluster model is a few levels deep"
        ) from None
    except (ValueError, OverflowError) as err:  # e.g. a date 2001-13-45
        raise PredictError(
            f"{where}: a value YAML cannot build ({err}); quote it or fix it"
        ) from None
    return data
