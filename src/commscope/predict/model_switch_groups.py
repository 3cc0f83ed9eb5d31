"""A cluster model (the YAML ``predict`` and ``simulate`` read) from measured switch groups.

The model holds one level of switches: each leaf switch of the measured tree with its nodes,
its uplink at the median bandwidth its nodes measured to nodes of other leaves, and every
node's NIC at the median bandwidth and latency between nodes of one leaf. Sockets and cores
are what the run recorded (one socket; as many cores as it had ranks per node): edit them to
the nodes' real counts.
"""

from __future__ import annotations

from typing import Any

from commscope.analysis.switch_groups import SwitchGrouping
from commscope.predict.model_yaml import model_from_dict


def model_document(grouping: SwitchGrouping, name: str, cores: int) -> dict[str, Any]:
    """The YAML document of the model (checked by the reader ``predict`` uses)."""
    leaves = grouping.leaves
    nodes = [n for leaf in leaves for n in leaf.nodes]
    nic: dict[str, Any] = {}
    within = [s.bandwidth_Bps for s in leaves if s.bandwidth_Bps]
    if within:
        nic["bandwidth"] = float(sorted(within)[len(within) // 2])
    delays = [s.latency_s for s in leaves if s.latency_s]
    if delays:
        nic["latency"] = float(sorted(delays)[len(delays) // 2])
    doc: dict[str, Any] = {"name": name, "nodes": nodes, "sockets": 1, "cores": max(1, cores)}
    if nic:
        doc["channels"] = {"nic": nic}
    if len(leaves) > 1:
        uplinks = {s.name: s.bandwidth_Bps for s in grouping.switches if s.switches}
        doc["switches"] = []
        for leaf in leaves:
            above = next((s for s in grouping.switches if leaf.name in s.switches), None)
            entry: dict[str, Any] = {"name": leaf.name, "nodes": list(leaf.nodes)}
            rate = uplinks.get(above.name) if above else None
            if rate:
                entry["uplink"] = {"bandwidth": float(rate)}
            doc["switches"].append(entry)
    model_from_dict(doc, f"the model of {name}")  # what predict will read must hold
    return doc
