"""A SimGrid model calibrated on the virtual cluster reproduces its measured p2p curve (root)."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

from commscope.measure import vcluster
from commscope.simulate.calibrate import VETH_LINE_Bps
from commscope.simulate.factor_fit import BW_FACTOR_MIN, LAT_FACTOR_MAX, bw_factor_max
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
    assert cal["burst_bytes"] == vcluster.burst_bytes(10**9)
    line_ratio = VETH_LINE_Bps / (1e9 / 8)
    for seg in cal["segments"]:  # readable factors, whatever the noise did to the curve
        assert 1.0 <= seg["lat_factor"] <= LAT_FACTOR_MAX, seg
        bw_max = bw_factor_max(seg["start"], cal["burst_bytes"], line_ratio)
        assert seg["bw_factor_max"] == pytest.approx(bw_max)
        assert BW_FACTOR_MIN <= seg["bw_factor"] <= bw_max, seg
    val = json.loads(
        cli(
            "simulate",
            "validate",
            str(run),
            "--cluster",
            str(model),
            "--max-size",
            "4MiB",
            "--json",
            timeout=900,
            check=True,
        ).stdout
    )
    for level in ("inter-node", "intra-node"):
        points = [p for p in val["points"] if p["where"] == level]
        assert len(points) > 100
        errors = np.abs([p["error"] for p in points])
        median, p90 = float(np.median(errors)), float(np.percentile(errors, 90))
        noise = triple_spread(points)
        noise_median, noise_p90 = float(np.median(noise)), float(np.percentile(noise, 90))
        print(
            f"\ncalibrated on vcluster run {run}: {level} ping-pong 0 B-4 MiB, "
            f"{len(points)} sizes, median |error| {median:.1%}, p90 {p90:.1%}; the measurement's "
            f"own spread within size triples: median {noise_median:.1%}, p90 {noise_p90:.1%}"
        )
        # The goal is 15 % median and 30 % at the 90th percentile on both levels. A model
        # cannot agree with a curve more closely than the curve agrees with itself: sizes 3 B
        # apart cost the same, so their spread is measurement noise (TCP's delayed
        # acknowledgements and tbf's burst make some triples differ 2-10x on a busy machine),
        # and it widens the bound. bench/simulate_calibration.py prints more.
        assert median <= 0.15 + noise_median, (level, median, noise_median)
        assert p90 <= 0.30 + noise_p90, (level, p90, noise_p90)


def triple_spread(points: list[dict]) -> list[float]:
    """(max - min) / median of the measured times of each size triple (s - 3, s, s + 3)."""
    groups: list[list[dict]] = []
    for p in sorted(points, key=lambda p: p["bytes"]):
        if groups and p["bytes"] - groups[-1][-1]["bytes"] <= 3:
            groups[-1].append(p)
        else:
            groups.append([p])
    out = []
    for g in groups:
        times = [p["measured_s"] for p in g]
        if len(times) > 1:
            out.append((max(times) - min(times)) / float(np.median(times)))
    assert out, "the p2p schedule measures sizes in triples s - 3, s, s + 3"
    return out
