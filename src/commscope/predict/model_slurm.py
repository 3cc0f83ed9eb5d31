"""A cluster model from Slurm's own view: ``scontrol show nodes`` and ``scontrol show topology``.

Slurm knows each node's sockets and cores, and (with a topology plugin) which switch each node
is behind, but not the rates of NICs or uplinks: those come from the caller (measured runs
price the levels; ``nic_Bps`` and ``uplink_Bps`` are needed only to model switches).
"""

from __future__ import annotations

from collections.abc import Callable

from commscope.errors import PredictError
from commscope.predict.model import ClusterModel, Link, Switch

WHERE = "--cluster slurm"


def _records(text: str) -> list[dict[str, str]]:
    """``KEY=VALUE`` records of ``scontrol -o show ...`` output, one per line."""
    records = []
    for line in text.splitlines():
        fields = dict(word.split("=", 1) for word in line.split() if "=" in word)
        if fields:
            records.append(fields)
    return records


def _count(record: dict[str, str], key: str) -> int:
    value = record.get(key, "")
    if not (value.isascii() and value.isdigit()) or int(value) < 1:
        raise PredictError(
            f"{WHERE}: node {record.get('NodeName', '?')} has {key}={value!r};"
            " write a cluster YAML file instead"
        )
    return int(value)


def model_from_scontrol(
    nodes_text: str,
    topology_text: str | None,
    expand: Callable[[str], tuple[str, ...]],
    nic_Bps: float | None = None,
    uplink_Bps: float | None = None,
) -> tuple[ClusterModel, str | None]:
    """The model of Slurm's nodes, and a note on what it left out (None when nothing).

    Args:
        nodes_text: ``scontrol -o show nodes`` output.
        topology_text: ``scontrol -o show topology`` output, None without a topology plugin.
        expand: turns a Slurm node list (``n[1-4]``) into names.
        nic_Bps: each node's NIC rate, bytes/s; switches are modelled only with it.
        uplink_Bps: each switch's uplink rate, bytes/s [default: ``nic_Bps``].

    Raises:
        PredictError: no nodes, or nodes with different sockets or cores.
    """
    records = [r for r in _records(nodes_text) if "NodeName" in r]
    if not records:
        raise PredictError(f"{WHERE}: scontrol lists no nodes; is slurmctld up (scontrol ping)?")
    shapes = {(_count(r, "Sockets"), _count(r, "CoresPerSocket")) for r in records}
    if len(shapes) != 1:
        raise PredictError(
            f"{WHERE}: nodes differ in sockets x cores {sorted(shapes)}; the "
            "model needs alike nodes: write a cluster YAML file of one kind"
        )
    ((sockets, cores),) = shapes
    names = tuple(r["NodeName"] for r in records)
    nic = Link(bandwidth_Bps=nic_Bps)
    leaves = [r for r in _records(topology_text or "") if r.get("Level") == "0" and "Nodes" in r]
    switches: tuple[Switch, ...] = ()
    note = None
    if leaves and nic_Bps:
        index = {name: i for i, name in enumerate(names)}
        switches = tuple(
            Switch(
                r["SwitchName"],
                tuple(index[n] for n in expand(r["Nodes"]) if n in index),
                Link(bandwidth_Bps=uplink_Bps or nic_Bps),
            )
            for r in leaves
        )
    elif leaves:
        note = (
            f"Slurm's topology lists {len(leaves)} switch(es); give --nic-rate to model "
            "them (and --uplink-rate when uplinks differ)"
        )
    model = ClusterModel(
        name="slurm",
        node_names=names,
        sockets=sockets,
        cores=cores,
        nic=nic,
        switches=switches,
        source="scontrol show nodes" + (", topology" if switches else ""),
    )
    return model, note
