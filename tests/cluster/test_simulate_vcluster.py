"""A SimGrid model calibrated on the virtual cluster reproduces its measured p2p curve (root)."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

from tests.conftest import have_mpi, need

pytestmark = pytest.mark.cluster


@pytest.mark.parametrize("cluster", [(2, "1gbit")], indirect=True)
def test_calibrated_model_of_the_vcluster_matches_its_pingpong(cli, cluster, tmp_path):
    need(have_mpi("openmpi"), "openmpi is not installed")
    need(shutil.which("smpirun") is not None, "SimGrid's smpirun (apt-get install libsimgrid-dev)")
    out = cli(
        "run",
        "p2p",
        "--vcluster",
        "--ranks-per-node",
        "2",
        "--ops",
        "pingpong",
        "--max-size",
        "4MiB",
        "--json",
        timeout=900,
        check=True,
    )
    run = json.loads(out.stdout)["run"]
    model = tmp_path / "vcluster.yaml"
    cal = json.loads(
        cli(
            "simulate", "calibrate", str(run), "-o", str(model), "--json", timeout=900, check=True
        ).stdout
    )
    assert cal["params"]["calibrated_from"].startswith(f"run {run}")
    assert cal["params"]["nic"]["bandwidth_Bps"] == pytest.approx(1e9 / 8)
    val = json.loads(
        cli(
            "simulate",
            "validate",
            str(run),
            "--cluster",
            str(model),
            "--min-size",
            "1KiB",
            "--max-size",
            "4MiB",
            "--json",
            timeout=900,
            check=True,
        ).stdout
    )
    inter = [p for p in val["points"] if p["where"] == "inter-node"]
    assert len(inter) > 20
    errors = np.abs([p["error"] for p in inter])
    median, p90 = float(np.median(errors)), float(np.percentile(errors, 90))
    print(
        f"\ncalibrated on vcluster run {run}: inter-node ping-pong 1 KiB-4 MiB, "
        f"{len(inter)} sizes, median |error| {median:.1%}, p90 {p90:.1%}"
    )
    # The goal; four runs here gave median 2-3 % and p90 8-14 %. The sizes worst off sit
    # at 16-24 KiB, where tbf's 16 KB burst makes time grow faster than linearly (a line with
    # a negative latency, which SMPI cannot take). bench/simulate_calibration.py prints more.
    assert median <= 0.10 and p90 <= 0.25
