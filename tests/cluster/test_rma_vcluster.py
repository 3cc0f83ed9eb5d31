"""One-sided put across the virtual cluster: the shaped link bounds its bandwidth (root)."""

from __future__ import annotations

import json

import pytest

from commscope.data.store import Store
from tests.conftest import have_mpi, need

pytestmark = pytest.mark.cluster
RATE_BPS = 100e6 / 8  # the link's rate: 100 mbit, far below what the host's CPU can push
SIZE = 65536
COMMON = ("--vcluster", "--ranks-per-node", "1", "--sizes", str(SIZE), "--window", "8",
          "--warmup", "2", "--point-budget", "1", "--json")  # fmt: skip


def _run(cli, family: str, *args: str) -> list:
    out = cli("run", *args, "--mpi", family, *COMMON, timeout=900)
    assert out.returncode == 0, out.stderr
    with Store.open(cli.store) as store:
        run_id = json.loads(out.stdout)["run"]
        mca = store.get_run(run_id).request.get("mca")
        points = store.points(run_id)
    # Open MPI 4.1 has no one-sided path over TCP of its own (osc/rdma wants RDMA): a
    # one-sided run across nodes takes osc/ucx by itself and records it.
    one_sided_ucx = family == "openmpi" and args[0] == "rma"
    assert mca == ({"osc": "ucx"} if one_sided_ucx else None), mca
    return points


@pytest.mark.parametrize("cluster", [(2, "100mbit")], indirect=True)
@pytest.mark.parametrize("family", ["mpich", "openmpi"])
def test_inter_node_put_bandwidth_is_bounded_by_the_link(cli, cluster, family):
    need(have_mpi(family), f"{family} is not installed")
    rma = _run(cli, family, "rma", "--ops", "put", "--rma-sync", "fence,lock", "--check")
    bw = _run(cli, family, "p2p", "--ops", "bw")
    two_sided = next(p for p in bw if p.pair == "inter-node")
    for op in ("put_bw_fence", "put_bw_lock"):
        (p,) = [p for p in rma if p.op == op]
        assert p.pair == "inter-node" and p.bytes_per_sample == 8 * SIZE
        rate = p.bandwidth_Bps
        # The slowest and fastest samples give the run's own spread of the rate.
        spread = p.bytes_per_sample / min(p.samples_s) / rate - 1
        print(f"{family} {op}: {rate / RATE_BPS:.0%} of the link, p2p bw"
              f" {two_sided.bandwidth_Bps / RATE_BPS:.0%}, spread {spread:.1%}")  # fmt: skip
        # No faster than the link (plus what the samples themselves scatter by), and a
        # one-sided put carries the data at the rate two-sided messages reach on the same link.
        assert rate <= RATE_BPS * (1 + spread) * 1.02, (op, rate)
        assert rate >= 0.5 * two_sided.bandwidth_Bps, (op, rate, two_sided.bandwidth_Bps)
    lat = {p.op: p for p in rma if "_lat_" in p.op}
    assert set(lat) == {"put_lat_fence", "put_lat_lock"}
