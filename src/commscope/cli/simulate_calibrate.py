"""`commscope simulate calibrate` and `validate`: a model fitted to, and checked on, a run."""

from __future__ import annotations

import argparse
import dataclasses
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from commscope.cli import common, simulate_options, simulate_run
from commscope.data.request import RunRequest
from commscope.data.store import Store
from commscope.units import parse_size

if TYPE_CHECKING:
    from rich.table import Table

    from commscope.predict.model import ClusterModel
    from commscope.simulate import agreement


def calibrate(args: argparse.Namespace) -> int:
    """Fit SMPI's factors to measured ping-pong runs and write them into the model."""
    from rich.table import Table

    from commscope import safe_write
    from commscope.simulate import calibrate, setup

    out_path = args.output or args.cluster or "commscope-cluster.yaml"
    out_flag = "-o" if args.output else "--cluster" if args.cluster else None
    safe_write.check_target(out_path, out_flag)  # before the calibration rounds
    with common.open_store(args, create=False) as store:
        run_ids = list(dict.fromkeys(store.resolve_run(r) for r in args.run))
        infos = [store.get_run(r) for r in run_ids]
        points = {r: store.points(r) for r in run_ids}
    for info in infos:
        common.require(
            not info.request.get("simulate"),
            f"run {info.id} is simulated; calibrate from a measured run",
        )
    # The model is the cluster of the run on the most nodes; a level measured alone (one
    # node's pair in its own launch) runs on its first nodes.
    main = max(infos, key=lambda i: len({r["node"] for r in (i.header or {}).get("ranks") or []}))
    if args.cluster:
        model, params = setup.load(args.cluster)
    else:
        models = [setup.model_of_run(info) for info in infos]
        cores = max(m.cores for m in models)  # a node's pair alone needs two cores
        model = dataclasses.replace(models[infos.index(main)], cores=cores)
        params = setup.params_for(model)
    runs_text = ", ".join(str(r) for r in run_ids)
    label = (
        f"run{'s' if len(run_ids) > 1 else ''} {runs_text}"
        f" ({main.kind}, {main.mpi}, {len(model.node_names)} nodes)"
    )
    every = [p for r in run_ids for p in points[r]]
    burst = setup.burst_of_run(main)
    cal = calibrate.calibrate(every, params, model.nic.bandwidth_Bps, label, burst)
    if args.refinements:
        placements = [setup.placement_of_run(model, info) for info in infos]
        with tempfile.TemporaryDirectory(prefix="commscope-calibrate-") as tmp:
            with Store.open(Path(tmp) / "rounds.sqlite") as scratch:
                for _ in range(args.refinements):
                    simulated = []
                    for info, placement in zip(infos, placements, strict=True):
                        base = RunRequest.from_json(info.request)
                        base = base.replace(engine=base.engine.replace(ops="pingpong"))
                        request = setup.simulated_request(base, model, cal.params, placement, [])
                        rid = simulate_run.simulate_into(scratch, request, None, True)
                        simulated += scratch.points(rid)
                    cal = calibrate.refine(cal, every, simulated)
    setup.write_model(out_path, model, cal.params, out_flag)
    if args.json:
        common.print_json(
            {
                "model": out_path,
                "params": cal.params.to_json(),
                "route_latency_s": cal.limits.route_latency_s,
                "burst_bytes": cal.limits.burst_bytes,
                "segments": [s.to_json() for s in cal.inter],
            }
        )
        return 0
    out = common.console()
    p = cal.params
    out.print(f"calibrated from {label}; written to {out_path}")
    out.print(
        f"NIC: {p.nic_bw_Bps / 1e6:.2f} MB/s, {p.nic_lat_s * 1e6:.2f} us each (route"
        f" {2 * p.nic_lat_s * 1e6:.2f} us); memory link: {p.memory_bw_Bps / 1e9:.3f} GB/s,"
        f" {p.memory_lat_s * 1e6:.3f} us"
        + ("" if cal.intra else " (not calibrated: the run has no intra-node ping-pong)")
    )
    title = "SMPI factors per size segment (inter-node" + (" and intra-node)" if cal.intra else ")")
    table = Table(title=title)
    for col in ("from", "to", "sizes", "lat-factor", "bw-factor", "bw max", "overhead", "held by"):
        table.add_column(col, justify="right")
    for seg in cal.inter:
        table.add_row(
            str(seg.start),
            str(seg.end - 1),
            str(seg.sizes),
            f"{seg.lat_factor:.3f}",
            f"{seg.bw_factor:.3f}",
            f"{seg.bw_max:.3g}",
            f"{seg.overhead_s * 1e6:.3f} us",
            ", ".join(seg.held),
        )
    out.print(table)
    out.print(
        "lat-factor stays in [1, 3] (never faster than the fastest small message; at most a"
        " rendezvous' three trips), bw-factor in [0.25, 'bw max'] (1 = nominal rate), the"
        " sender's overhead on eager messages (smpi/os) from 0 to the segment's fastest time;"
        " a segment held by a bound keeps its error, see 'commscope simulate validate'"
    )
    return 0


def validate(args: argparse.Namespace) -> int:
    """Simulate a measured run on the model and print simulated against measured."""
    from rich.table import Table

    from commscope.simulate import agreement, setup

    min_b = parse_size(args.min_size, "--min-size")
    max_b = parse_size(args.max_size, "--max-size") if args.max_size is not None else None
    with common.open_store(args, create=False) as store:
        run_id = store.resolve_run(args.run)
        info = store.get_run(run_id)
        common.require(
            not info.request.get("simulate"),
            f"run {run_id} is simulated; validate against a measured run",
        )
        model: ClusterModel
        if args.cluster:
            model, params = setup.load(args.cluster)
        else:
            model = setup.model_of_run(info)
            params = setup.params_for(model)
        placement = setup.placement_of_run(model, info)
        measured_request = RunRequest.from_json(info.request)
        simulate_options.require_simulable(measured_request.benchmark)
        request = setup.simulated_request(measured_request, model, params, placement, args.smpi_cfg)
        measured = agreement.point_times(
            store.points(run_id), store.colls(run_id), store.contentions(run_id)
        )
        # The measured times go with the simulated run, so its report can compare the two.
        request = request.replace(
            simulate={**(request.simulate or {}), **agreement.measured_record(run_id, measured)}
        )
        label = args.label or f"model of run {run_id}"
        sim_id = simulate_run.simulate_into(store, request, label, args.quiet or args.json)
        simulated = agreement.point_times(
            store.points(sim_id), store.colls(sim_id), store.contentions(sim_id)
        )
    result = agreement.agreement(measured, simulated, min_b, max_b)
    levels = agreement.by_level(result.rows)
    starts = agreement.segment_starts(
        params.to_json()["bw_factor"], [r.key[3] for r in result.rows]
    )
    segments = agreement.by_segment(result.rows, starts)
    if args.json:
        common.print_json(
            {
                "measured_run": run_id,
                "simulated_run": sim_id,
                "factors": (request.simulate or {})["factors"],
                **result.to_json(),
                "levels": [g.to_json() for g in levels],
                "segments": [g.to_json() for g in segments],
            }
        )
        return 0
    out = common.console()
    table = Table(title=f"run {run_id} measured vs simulated run {sim_id}")
    for col in ("point", "measured", "simulated", "error"):
        table.add_column(col, justify="right")
    for row in result.rows:
        table.add_row(
            simulate_run.key_text(row.key),
            simulate_run.time_text(row.measured_s),
            simulate_run.time_text(row.simulated_s),
            f"{100 * row.error:+.1f} %",
        )
    out.print(table)
    out.print(_summary_table(levels + segments))
    out.print(
        f"{len(result.rows)} points; |relative error| median {100 * result.median_abs:.1f}"
        f" %, 90th percentile {100 * result.p90_abs:.1f} %; {(request.simulate or {})['factors']}"
    )
    return 0


def _summary_table(groups: list[agreement.Group]) -> Table:
    """|relative error| per level, then per level and size segment."""
    from rich.table import Table

    from commscope.units import size_text

    table = Table(title="|relative error| of ping-pong per level and size segment")
    for col in ("level", "sizes", "points", "median", "p90"):
        table.add_column(col, justify="right")
    for g in groups:
        sizes = (
            "all"
            if g.start is None
            else f"{size_text(g.start)} -" + (f" {size_text(g.end)}" if g.end is not None else "")
        )
        table.add_row(
            g.level, sizes, str(g.points), f"{100 * g.median_abs:.1f} %", f"{100 * g.p90_abs:.1f} %"
        )
    return table
