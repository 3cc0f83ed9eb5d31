"""`commscope simulate calibrate` and `validate` under real SimGrid SMPI: a model fitted to a
measured curve reproduces it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from commscope.data.record_parse import parse_record
from commscope.data.store import Store
from commscope.units import netpipe_schedule
from tests.conftest import CLI
from tests.simgrid.conftest import GIGE

pytestmark = pytest.mark.simgrid


def measured_run(store_path: Path, time_of) -> int:
    """A stored 'measured' ping-pong run between two nodes whose times follow ``time_of``."""
    sizes = netpipe_schedule(1 << 22, 3)
    ranks = [
        {
            "rank": r,
            "node": n,
            "node_index": i,
            "socket": -1,
            "cpu": r,
            "pid": 100 + r,
            "affinity": [r],
        }
        for r, (n, i) in enumerate([("a", 0), ("a", 0), ("b", 1), ("b", 1)])
    ]
    header = {
        "type": "header",
        "schema_version": 1,
        "engine_version": "0.1.0",
        "mpi": {"library_version": "Open MPI v4.1.4, package: Debian", "standard": "3.1"},
        "nranks": 4,
        "ranks": ranks,
        "socket_source": "sysfs",
        "timer": {
            "name": "monotonic_raw",
            "resolution_s": 1e-9,
            "overhead_s": 2e-8,
            "frequency_hz": None,
        },
        "pairs": [
            {"label": "intra-node", "ranks": [0, 1]},
            {"label": "inter-node", "ranks": [0, 2]},
        ],
        "options": {"ops": "pingpong"},
        "started_unix": 1.0,
    }
    request = {
        "benchmark": "p2p",
        "mpi": "openmpi",
        "np": 4,
        "launcher": "auto",
        "timeout_s": 600,
        "confidence": 0.95,
        "engine": {
            "ops": "pingpong",
            "timer": "monotonic_raw",
            "sizes": sizes,
            "pairs": "auto",
            "window": 64,
            "warmup": 2,
            "min_samples": 3,
            "max_samples": 20,
            "target_rse": 0.01,
            "point_budget_s": 0.25,
        },
        "vcluster": {"nodes": 2, "ranks_per_node": 2, "rate": "1gbit", "subnet": "10.0.0.0/24"},
    }
    with Store.open(store_path) as store:
        run = store.create_run("p2p", "measured", "openmpi-4.1.4", "mpirun", 4, request)
        seg = store.start_segment(run, ["mpirun"])
        store.set_header(run, seg, parse_record(json.dumps(header), "test"))
        for pair, ab in (("intra-node", [0, 1]), ("inter-node", [0, 2])):
            for m in sizes:
                t = time_of(pair, m)
                rec = {
                    "type": "point",
                    "op": "pingpong",
                    "pair": pair,
                    "ranks": ab,
                    "bytes": m,
                    "bytes_per_sample": m,
                    "iters_per_sample": 1,
                    "warmup": 2,
                    "samples_s": [t] * 5,
                    "stop": "rse",
                }
                store.add_point(run, seg, parse_record(json.dumps(rec), "test"))
        store.finish_segment(seg, "complete", None)
        store.set_run_status(run, "complete")
    return run


def test_calibrated_model_reproduces_a_measured_curve(cli: CLI, tmp_path: Path) -> None:
    # A curve no neutral model gives: TCP-like, 30 us + m / 110 MB/s between nodes with a
    # rendezvous step of 25 us from 64 KiB, and 3 us + m / 4 GB/s within a node.
    def time_of(pair: str, m: int) -> float:
        if pair == "inter-node":
            return 30e-6 + m / 110e6 + (25e-6 if m >= 65536 else 0.0)
        return 3e-6 + m / 4e9

    run = measured_run(cli.store, time_of)
    out_model = tmp_path / "calibrated.yaml"
    cal = cli("simulate", "calibrate", str(run), "-o", str(out_model), "--json", check=True)
    params = json.loads(cal.stdout)["params"]
    assert params["nic"]["bandwidth_Bps"] == GIGE  # the virtual cluster's nominal 1gbit
    assert params["calibrated_from"].startswith(f"run {run}")
    text = out_model.read_text()
    assert "simulation:" in text and "lat_factor:" in text
    val = cli(
        "simulate",
        "validate",
        str(run),
        "--cluster",
        str(out_model),
        "--min-size",
        "1KiB",
        "--json",
        check=True,
    )
    result = json.loads(val.stdout)
    inter = sorted(abs(p["error"]) for p in result["points"] if p["where"] == "inter-node")
    assert len(inter) > 20
    median, p90 = inter[len(inter) // 2], inter[int(0.9 * len(inter)) - 1]
    print(f"calibrated on a synthetic curve: median |err| {median:.3%}, p90 {p90:.3%}")
    assert median <= 0.03 and p90 <= 0.10
