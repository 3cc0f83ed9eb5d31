"""Cluster models from this machine's hwloc topology and from the virtual cluster's facts.

hwloc describes one node: sockets are its Package objects, cores its Core objects. A model of
several identical nodes repeats it. The virtual cluster's nodes are network namespaces on this
machine, so each has this machine's sockets and cores; its NIC rate is the tbf rate.
"""

from __future__ import annotations

import shutil
import subprocess
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from pathlib import Path

from commscope.errors import PredictError
from commscope.predict.model import ClusterModel, Link
from commscope.units import parse_tc_rate

HWLOC_TOOLS = (
    ("hwloc-ls", "--of", "xml"),
    ("lstopo", "--of", "xml"),
    ("lstopo-no-graphics", "--of", "xml"),
)
HWLOC_TIMEOUT_S = 30


def hwloc_xml() -> str:
    """This machine's topology as hwloc XML, from hwloc-ls or lstopo.

    Raises:
        PredictError: no hwloc tool is installed, or it failed.
    """
    for argv in HWLOC_TOOLS:
        if shutil.which(argv[0]) is None:
            continue
        try:
            out = subprocess.run(
                [*argv, "-"], capture_output=True, text=True, check=True, timeout=HWLOC_TIMEOUT_S
            )
        except (OSError, subprocess.SubprocessError) as err:
            raise PredictError(
                f"{argv[0]} failed ({err}); give the model as --cluster FILE"
            ) from None
        return out.stdout
    raise PredictError(
        "no hwloc tool (hwloc-ls, lstopo) found; install hwloc or give the model as --cluster FILE"
    )


def topology_from_xml(text: str, where: str) -> tuple[str, int, int]:
    """(host name, sockets, cores per socket) of the node an hwloc XML describes.

    A machine without Package objects counts as one socket. Packages with different core
    counts are refused: the model needs every socket alike.

    Raises:
        PredictError: not hwloc XML, no cores, or sockets of different sizes.
    """
    try:
        root = ET.fromstring(text)
    except ET.ParseError as err:
        raise PredictError(f"{where}: not hwloc XML ({err})") from None
    if root.tag != "topology":
        raise PredictError(
            f"{where}: not hwloc XML (root element <{root.tag}>, expected <topology>)"
        )
    host = (
        next((i.get("value", "") for i in root.iter("info") if i.get("name") == "HostName"), "")
        or "node0"
    )
    packages = [o for o in root.iter("object") if o.get("type") == "Package"]
    per_package = [sum(1 for o in p.iter("object") if o.get("type") == "Core") for p in packages]
    if not packages:
        per_package = [sum(1 for o in root.iter("object") if o.get("type") == "Core")]
    if not per_package or min(per_package) < 1:
        raise PredictError(f"{where}: the topology lists no cores")
    if len(set(per_package)) != 1:
        raise PredictError(
            f"{where}: sockets have different core counts {per_package}; write"
            " a cluster YAML file instead"
        )
    return host, len(per_package), per_package[0]


def model_from_hwloc(
    xml_text: str | None = None, nodes: int = 1, where: str = "hwloc"
) -> ClusterModel:
    """A model of ``nodes`` nodes each like the one hwloc describes.

    Args:
        xml_text: hwloc XML; None runs hwloc on this machine.
        nodes: how many identical nodes; names are the host name with an index appended
            when there are several.
        where: where the XML came from, used in errors and as the model's source.
    """
    text = hwloc_xml() if xml_text is None else xml_text
    host, sockets, cores = topology_from_xml(text, where)
    if nodes < 1:
        raise PredictError(f"{where}: the number of nodes must be at least 1")
    names = (host,) if nodes == 1 else tuple(f"{host}{i}" for i in range(nodes))
    return ClusterModel(
        name=host,
        node_names=names,
        sockets=sockets,
        cores=cores,
        source=where if nodes == 1 else f"{where}, x{nodes} nodes",
    )


def model_from_hwloc_file(path: str | Path, nodes: int = 1) -> ClusterModel:
    """:func:`model_from_hwloc` on a recorded XML file (``lstopo --of xml FILE``)."""
    try:
        text = Path(path).read_text("utf-8")
    except OSError as err:
        raise PredictError(f"{path}: cannot read the hwloc XML ({err.strerror})") from None
    return model_from_hwloc(text, nodes, str(path))


def model_from_vcluster(
    node_names: Sequence[str], rate: str, xml_text: str | None = None
) -> ClusterModel:
    """A model of the virtual cluster: its nodes, this machine's sockets and cores each.

    Args:
        node_names: the virtual cluster's nodes, in order.
        rate: the tbf rate of every node's link, in tc's syntax (``1gbit``).
        xml_text: hwloc XML of this machine; None runs hwloc.
    """
    _, sockets, cores = topology_from_xml(hwloc_xml() if xml_text is None else xml_text, "hwloc")
    # tc rates are bits per second, applied to each direction of a node's link.
    nic = Link(bandwidth_Bps=parse_tc_rate(rate) / 8.0)
    return ClusterModel(
        name="vcluster",
        node_names=tuple(node_names),
        sockets=sockets,
        cores=cores,
        nic=nic,
        source=f"virtual cluster, tbf rate {rate}",
    )
