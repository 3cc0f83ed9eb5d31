"""What a simulated run needs: its model and parameters, placement, request and model file."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from commscope import safe_write
from commscope.data.request import RunRequest
from commscope.data.store import RunInfo
from commscope.errors import PredictError, SimulateError, UsageError
from commscope.predict.model import ClusterModel, Link
from commscope.predict.model_yaml import load_document, model_from_dict
from commscope.predict.placement import Placement, regular
from commscope.predict.topologies import FatTree
from commscope.simulate import platform, smpi
from commscope.simulate.params import SimParams
from commscope.simulate.params import params_for as params_for  # for the CLI, beside load()

STAMPEDE_NOTE = (
    "uncalibrated: SimGrid's default SMPI factors (calibrated on TACC's Stampede)"
    " are in use; run 'commscope simulate calibrate RUN' for this cluster's own"
)


def load(path: str | Path) -> tuple[ClusterModel, SimParams]:
    """A model file and its simulation parameters (one-line errors naming file and field)."""
    data = load_document(path)
    model = model_from_dict(data, str(path))
    platform.check_model(model)  # before anything is built from it
    return model, params_for(model, data.get("simulation"), str(path))


def model_of_run(info: RunInfo) -> ClusterModel:
    """The cluster a measured run ran on.

    Its nodes and ranks per node, and the virtual cluster's link rate when it ran there.
    """
    header = info.header or {}
    ranks = header.get("ranks") or []
    if not ranks:
        raise SimulateError(
            f"run {info.id} has no engine header (it never started); give --cluster FILE instead"
        )
    names: list[str] = []
    for r in ranks:
        if r["node"] not in names:
            names.append(str(r["node"]))
    per_node = max(sum(1 for r in ranks if r["node"] == n) for n in names)
    nic = Link()
    vc = info.request.get("vcluster")
    if vc and vc.get("rate"):
        from commscope.units import parse_tc_rate

        nic = Link(bandwidth_Bps=parse_tc_rate(vc["rate"]) / 8.0)
    source = f"run {info.id}" + (f" on the virtual cluster at {vc['rate']}" if vc else "")
    return ClusterModel(
        name=f"run{info.id}",
        node_names=tuple(names),
        sockets=1,
        cores=per_node,
        nic=nic,
        source=source,
    )


def placement_of_run(model: ClusterModel, info: RunInfo) -> Placement:
    """The measured run's placement: nodes used, ranks per node, block or cyclic order."""
    ranks = (info.header or {}).get("ranks") or []
    index = {n: i for i, n in enumerate(model.node_names)}
    order = [index.get(str(r["node"])) for r in ranks]
    if any(i is None for i in order):
        raise SimulateError(
            f"run {info.id} ran on nodes the model does not have; give a model"
            " whose node names match the run's (commscope show RUN)"
        )
    nodes = len(set(order))
    per_node = len(order) // nodes
    cyclic = len(order) > 1 and order[0] != order[1] and per_node > 1
    return regular(model, nodes, per_node, "cyclic" if cyclic else "block")


def simulated_request(
    base: RunRequest,
    model: ClusterModel,
    params: SimParams,
    placement: Placement,
    extra_cfg: list[str],
    neutral: bool = False,
    netload: bool = False,
) -> RunRequest:
    """The request of a simulated run: ``base``'s benchmark on ``placement`` of ``model``.

    Clocks and pinning mean nothing in a simulation: the timer is MPI_Wtime (SMPI's
    simulated clock), ranks are not pinned, and result checks are refused (buffers shared).
    The caller has checked that the engine measures ``base``'s benchmark over MPI.
    """
    if netload:
        platform.check_netload(model)
    engine = base.engine
    if engine.check:
        raise SimulateError(
            "--check: simulated ranks share their buffers, so results cannot"
            " be checked; leave --check out"
        )
    engine = engine.replace(timer="mpi_wtime", pin=0)
    if engine.sync == "drift":
        engine = engine.replace(sync="linear")  # one simulated clock: there is no drift to fit
    if engine.pairs not in (None, "auto"):
        kept = [p for p in str(engine.pairs).split(",") if p in ("intra-node", "inter-node")]
        engine = engine.replace(pairs=",".join(kept) or "auto")
    config = smpi.config(params, list(extra_cfg) + (smpi.neutral_factors() if neutral else []))
    simulate = {
        "np": placement.p,
        "simgrid": smpi.version(),
        "config": config,
        "model": model.to_json(),
        "params": params.to_json(),
        "model_file": model_document(model, params),
        "netload": netload,
        "rank_node": [int(n) for n in placement.node],
        "placement": placement.to_json(model),
        "factors": "neutral (0:1)"
        if neutral
        else (f"calibrated from {params.calibrated_from}" if params.calibrated else STAMPEDE_NOTE),
        "platform_xml": platform.platform_xml(model, params),
        "hostfile": platform.hostfile(model, placement),
    }
    return base.replace(
        mpi="simgrid",
        launcher="smpirun",
        np=placement.p,
        engine=engine,
        vcluster=None,
        simulate=simulate,
    )


def with_taper(model: ClusterModel, params: SimParams, taper: float, flag: str) -> ClusterModel:
    """The model with its fat tree's leaf switches at ``taper``:1 (down links over up links).

    A leaf keeps its nodes and its links per uplink; it links up to fewer (or more) switches
    of the level above, so a level-2 switch count follows. The tree is checked as a model
    file is (ports, whole counts); ``flag`` names the sweep value in errors.
    """
    topology = model.topology
    if not isinstance(topology, FatTree) or topology.levels < 2:
        raise UsageError(
            f"{flag}: taper is a fat tree's; give a model with a topology of kind fat_tree"
            " and two levels or more"
        )
    down_links = topology.down[0] * topology.links[0]
    up = down_links / (taper * topology.links[1])
    if not taper > 0 or up < 1 or abs(up - round(up)) > 1e-9:
        raise UsageError(
            f"{flag}: a leaf has {down_links} down link(s) and {topology.links[1]} link(s) per"
            " uplink; give a taper that leaves a whole number of uplinks, e.g. 1, 2 or 4"
        )
    doc = model_document(model, params)
    doc["topology"]["up"][1] = round(up)
    try:
        return model_from_dict(doc, f"{model.source or model.name} at taper {taper:g}:1")
    except PredictError as err:
        raise UsageError(f"{flag}: {err}") from err


def model_document(model: ClusterModel, params: SimParams) -> dict[str, Any]:
    """A model file's content (readable by ``predict.load_model``) with ``simulation:``."""

    def link(ch: Link) -> dict[str, Any] | None:
        d = {}
        if ch.bandwidth_Bps:
            d["bandwidth"] = f"{ch.bandwidth_Bps:.6g}B/s"
        if ch.latency_s is not None:
            d["latency"] = f"{ch.latency_s * 1e6:.6g}us"
        return d or None

    doc: dict[str, Any] = {
        "name": model.name,
        "nodes": model.nodes if model.topology is not None else list(model.node_names),
        "sockets": model.sockets,
        "cores": model.cores,
    }
    channels = {
        k: link(v)
        for k, v in (("memory", model.memory), ("socket", model.socket_link), ("nic", model.nic))
    }
    channels = {k: v for k, v in channels.items() if v}
    if channels:
        doc["channels"] = channels
    if model.topology is not None:
        doc["topology"] = model.topology.to_yaml()
    elif model.switches:
        doc["switches"] = [
            {"name": sw.name, "nodes": list(sw.nodes), "uplink": link(sw.uplink)}
            for sw in model.switches
        ]
    doc["simulation"] = params.to_yaml()
    return doc


def write_model(
    path: str | Path, model: ClusterModel, params: SimParams, flag: str | None = None
) -> None:
    """Write the model file atomically: a failed write leaves the old file whole.

    Raises:
        UsageError: ``path`` is not a place for a regular file or the write failed
            (see :mod:`commscope.safe_write`); ``flag`` names the option that gave it.
    """
    text = (
        "# Cluster model for commscope predict and simulate; 'simulation' written by\n"
        "# commscope simulate calibrate.\n"
        + yaml.safe_dump(model_document(model, params), sort_keys=False, default_flow_style=None)
    )
    safe_write.write_text(path, text, flag)


def burst_of_run(info: RunInfo) -> int | None:
    """The token-bucket size of the links a run crossed: the virtual cluster's tbf, if any."""
    vc = info.request.get("vcluster")
    if not vc or not vc.get("rate"):
        return None
    from commscope.measure.vcluster import burst_bytes
    from commscope.units import parse_tc_rate

    return burst_bytes(int(parse_tc_rate(vc["rate"])))
