"""A SimGrid model calibrated on the virtual cluster reproduces its measured p2p curve (root)."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

from commscope.measure import vcluster
from commscope.simulate.calibrate import VETH_LINE_Bps
from commscope.simulate.factor_fit import (
    BW_FACTOR_MIN,
    LAT_FACTOR_MAX,
    bw_factor_max,
    steady_curve,
)
from tests.conftest import have_mpi, need

pytestmark = pytest.mark.cluster


def pingpong_run(cli, per_node: int) -> int:
    out = cli(
        "run",
        "p2p",
        "--vcluster",
        "--ranks-per-node",
        str(per_node),
        "--ops",
        "pingpong",
        "--max-size",
        "4MiB",
        "--json",
        timeout=900,
        check=True,
    )
    return int(json.loads(out.stdout)["run"])


@pytest.mark.parametrize("cluster", [(2, "1gbit")], indirect=True)
def test_calibrated_model_of_the_vcluster_matches_its_pingpong(cli, cluster, tmp_path):
    need(have_mpi("openmpi"), "openmpi is not installed")
    need(shutil.which("smpirun") is not None, "SimGrid's smpirun (apt-get install libsimgrid-dev)")
    # Each level in its own launch, every rank on a core of its own as in the model: one rank
    # per node between nodes, then a node's pair alone on a 1-node cluster.
    inter = pingpong_run(cli, 1)
    vcluster.down()
    vcluster.up(1, "1gbit")
    intra = pingpong_run(cli, 2)
    model = tmp_path / "vcluster.yaml"
    cal = json.loads(
        cli(
            "simulate",
            "calibrate",
            str(inter),
            str(intra),
            "-o",
            str(model),
            "--json",
            timeout=900,
            check=True,
        ).stdout
    )
    assert cal["params"]["calibrated_from"].startswith(f"runs {inter}, {intra}")
    assert cal["params"]["nic"]["bandwidth_Bps"] == pytest.approx(1e9 / 8)
    assert cal["burst_bytes"] == vcluster.burst_bytes(10**9)
    line_ratio = VETH_LINE_Bps / (1e9 / 8)
    for seg in cal["segments"]:  # readable factors, whatever the noise did to the curve
        assert 1.0 <= seg["lat_factor"] <= LAT_FACTOR_MAX, seg
        bw_max = bw_factor_max(seg["start"], cal["burst_bytes"], line_ratio)
        assert seg["bw_factor_max"] == pytest.approx(bw_max)
        assert BW_FACTOR_MIN <= seg["bw_factor"] <= bw_max, seg
    for level, run in (("inter-node", inter), ("intra-node", intra)):
        val = json.loads(
            cli(
                "simulate",
                "validate",
                str(run),
                "--cluster",
                str(model),
                "--json",
                timeout=900,
                check=True,
            ).stdout
        )
        points = [p for p in val["points"] if p["where"] == level]
        assert len(points) > 100
        errors = np.abs([p["error"] for p in points])
        median, p90 = float(np.median(errors)), float(np.percentile(errors, 90))
        noise = off_group(points)
        noise_median, noise_p90 = float(np.median(noise)), float(np.percentile(noise, 90))
        print(
            f"\ncalibrated on vcluster runs {inter}, {intra}: {level} ping-pong 0 B-4 MiB, "
            f"{len(points)} sizes, median |error| {median:.1%}, p90 {p90:.1%}; the measured "
            f"points off their size group's median: median {noise_median:.1%}, p90 {noise_p90:.1%}"
        )
        # The goal is 15 % median and 30 % at the 90th percentile on both levels. A model
        # cannot agree with a curve more closely than the curve agrees with itself: sizes
        # 3 B apart cost the same, so a point's distance from its group's median (what the
        # calibration fits) is measurement noise, and it widens the bound.
        # bench/simulate_calibration.py also checks a model on a second measurement.
        assert median <= 0.15 + noise_median, (level, median, noise_median)
        assert p90 <= 0.30 + noise_p90, (level, p90, noise_p90)


def off_group(points: list[dict]) -> list[float]:
    """|measured / its size group's median - 1| per point: the noise the fit cannot follow."""
    sizes = np.asarray([p["bytes"] for p in points], dtype=np.int64)
    times = np.asarray([p["measured_s"] for p in points])
    steady_sizes, steady = steady_curve(sizes, times)
    median_of = dict(zip(steady_sizes.tolist(), steady.tolist(), strict=True))
    return [abs(p["measured_s"] / median_of[p["bytes"]] - 1) for p in points]
