"""mbw across two rate-limited virtual nodes: k pairs share one shaped link (root)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from commscope.analysis import mbw
from commscope.data.run_data import read_run
from commscope.data.store import Store
from commscope.measure.vcluster.model import parse_rate
from tests.conftest import have_mpi, need

pytestmark = pytest.mark.cluster
RATE = "200mbit"


@pytest.mark.parametrize("cluster", [(2, RATE)], indirect=True)
def test_two_pairs_share_the_link_one_pair_fills_most_of_it(cli, cluster):
    need(have_mpi("openmpi"), "openmpi is not installed")
    # A window of 8 messages: one of 1 MiB ones takes ~0.3 s at 25 MB/s; one warm-up window
    # per point keeps the run under a minute.
    out = cli(
        "run", "mbw", "--vcluster", "--ranks-per-node", "2", "--mpi", "openmpi",
        "--sizes", "256K,1MiB", "--window", "8", "--warmup", "1", "--json", timeout=900,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    with Store.open(cli.store) as store:
        run = read_run(store, json.loads(out.stdout)["run"])
    nodes = [r["node"] for r in run.info.header["ranks"]]
    assert nodes == ["csnode1", "csnode1", "csnode2", "csnode2"]
    points = run.family("mbw")
    assert {p.pair for p in points} == {"inter-node"}
    # Rank i of the first node sends to rank i of the second.
    assert {tuple(map(tuple, p.raw["pairs"])) for p in points} == {((0, 2),), ((0, 2), (1, 3))}
    (summary,) = mbw.summarize(points)
    rate = parse_rate(RATE) / 8  # bytes per second of the shaped link
    by_k = {step.pairs: step for step in summary.steps}
    # The noise of this run: how far a sample of the two-pair points strays from its median.
    noise = max(
        float(np.ptp(p.samples_s) / np.median(p.samples_s)) for p in points if p.op == "mbw_k2"
    )
    print(
        f"\n{RATE} = {rate / 1e6:.1f} MB/s: k=1 peak {by_k[1].peak_Bps / 1e6:.2f} MB/s,"
        f" k=2 peak {by_k[2].peak_Bps / 1e6:.2f} MB/s, sample spread {noise:.1%}"
    )
    # Two pairs share one link: together no faster than it, up to the run's own noise
    # (tbf's 4 KiB burst is nothing against a window of 512 KiB and more).
    assert by_k[2].peak_Bps <= rate * (1 + noise)
    # One pair's large messages already take most of the link.
    assert by_k[1].rows[-1].aggregate_Bps >= 0.6 * rate
