"""The all-pairs matrix under SMPI measures the modelled network, and nothing else.

On a homogeneous model every link is alike, so every link's latency and bandwidth must come
out alike, at what the model implies: a route of two 40 us NIC links at 125 MB/s gives an
8-byte message 80 us + 8 / B, and a window of w messages of m bytes w m / (80 us + w m / B).
What the engine does between messages (polling, yielding, a barrier's skew) must not become
simulated time: before it was fixed, 2 us links read 75-425 us, in steps of 25 us.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from commscope.data.store import Store
from tests.conftest import CLI
from tests.simgrid.conftest import GIGE, ROUTE_S, model

pytestmark = pytest.mark.simgrid


@pytest.mark.parametrize("nodes", [4, 16])
def test_a_homogeneous_model_gives_every_link_the_same_figure(cli: CLI, tmp_path: Path, nodes):
    path = model(
        tmp_path,
        f"nodes: {nodes}\nsockets: 1\ncores: 1\n"
        "channels: {nic: {bandwidth: 125MB/s, latency: 40us}}\n",
    )
    out = cli("simulate", "run", "--cluster", str(path), "--nodes", str(nodes), "--neutral",
              "--json", "--", "matrix", "--sizes", "128KiB",
              "--samples", "2", check=True, timeout=900)  # fmt: skip
    run = json.loads(out.stdout)["run"]
    with Store.open(cli.store) as store:
        points = store.measurements(run)
    lat = [p for p in points if getattr(p, "op", "") == "matrix_lat"]
    bw = [p for p in points if getattr(p, "op", "") == "matrix_bw"]
    assert len(lat) == len(bw) == nodes * (nodes - 1)
    one_way = ROUTE_S + 8 / GIGE
    for p in lat:
        assert one_way <= p.median_s <= one_way * 1.01, (p.pair, p.median_s)
    for p in bw:
        expected = p.bytes_per_sample / (ROUTE_S + p.bytes_per_sample / GIGE)
        assert p.bandwidth_Bps == pytest.approx(expected, rel=0.01), (p.pair, p.bandwidth_Bps)
    shown = json.loads(cli("show", str(run), "--json", check=True).stdout)
    assert all(not m["outliers"] for m in shown["matrix"])
