"""The predictor's cost for SMPI's platform: SimGrid's factor segments and route latency."""

from __future__ import annotations

import numpy as np
import pytest

from commscope.simulate.params import SimParams
from commscope.simulate.predict_cost import STAMPEDE_LAT_FACTOR, factor_at, smpi_cost

FACTORS = ((0, 0.5), (1024, 0.8), (65536, 0.9))


@pytest.mark.parametrize(
    ("nbytes", "want"),
    [(0, 1.0), (1, 0.5), (1024, 0.5), (1025, 0.8), (65536, 0.8), (65537, 0.9), (1 << 30, 0.9)],
)
def test_a_segment_covers_sizes_above_its_start(nbytes: int, want: float) -> None:
    assert factor_at(FACTORS, nbytes) == want


def params(**kw: object) -> SimParams:
    base = dict(
        nic_bw_Bps=1.25e9,
        nic_lat_s=2e-6,
        memory_bw_Bps=1e10,
        memory_lat_s=0.3e-6,
        switch_lat_s=1e-6,
        lat_factor=((0, 1.5), (4096, 3.0)),
        bw_factor=((0, 0.4), (65536, 0.9)),
        calibrated_from="run 7",
    )
    base.update(kw)
    return SimParams(**base)  # type: ignore[arg-type]


@pytest.mark.parametrize("nbytes", [100, 4096, 4097, 65536, 65537, 1 << 20])
@pytest.mark.parametrize("cf", [1.0, 7.0])
def test_inter_node_time_is_smpi_closed_form(nbytes: int, cf: float) -> None:
    p = params()
    lat = 1.5 if nbytes <= 4096 else 3.0
    bw = 0.4 if nbytes <= 65536 else 0.9
    want = lat * (2 * 2e-6 + 1e-6) + cf * nbytes / (bw * 1.25e9)
    got = smpi_cost(p).time_s("nic", np.array([nbytes]), np.array([cf]))
    assert got[0] == pytest.approx(want, rel=1e-12)
    mem = smpi_cost(p).time_s("memory", np.array([nbytes]), np.array([cf]))
    assert mem[0] == pytest.approx(lat * 0.3e-6 + cf * nbytes / (bw * 1e10), rel=1e-12)


def test_missing_factors_are_simgrid_defaults_and_neutral_is_plain() -> None:
    p = params(lat_factor=(), bw_factor=())
    m = np.array([1 << 20])
    stampede = smpi_cost(p).time_s("nic", m, np.array([1.0]))[0]
    lat = factor_at(STAMPEDE_LAT_FACTOR, 1 << 20)
    assert stampede == pytest.approx(lat * 5e-6 + (1 << 20) / (0.940694 * 1.25e9))
    plain = smpi_cost(p, neutral=True).time_s("nic", m, np.array([2.0]))[0]
    assert plain == pytest.approx(5e-6 + 2 * (1 << 20) / 1.25e9)
    assert "Stampede" in smpi_cost(p).sources()["nic"]
    assert "run 7" in smpi_cost(params()).sources()["memory"]
