"""MPI settings and eager limits on the virtual cluster: the vcluster's own MCA parameters
(pml ob1, btl self,vader,tcp) and the user's both reach the recorded limits (root)."""

from __future__ import annotations

import json

import pytest

from commscope.data.mpi_config import RUN_DATA_KIND
from commscope.data.store import Store
from tests.conftest import have_mpi, need

pytestmark = pytest.mark.cluster


def _run(cli, family, *extra):
    out = cli(
        "run", "p2p", "--vcluster", "--ranks-per-node", "2", "--mpi", family, "--sizes", "8,64K",
        "--ops", "pingpong", "--json", *extra, timeout=900,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    run_id = json.loads(out.stdout)["run"]
    with Store.open(cli.store) as store:
        return store.get_run(run_id), store.run_data(run_id, RUN_DATA_KIND), store.points(run_id)


@pytest.mark.parametrize("cluster", [(2, "1gbit")], indirect=True)
def test_vcluster_runs_record_both_paths_limits_and_the_settings_given(cli, cluster):
    for family in ("openmpi", "mpich"):
        need(have_mpi(family), f"{family} is not installed")
    run, limits, points = _run(cli, "openmpi", "--mca", "btl_tcp_eager_limit=32768")
    assert {p.pair for p in points} >= {"inter-node"}
    assert run.request["mca"] == {"btl_tcp_eager_limit": "32768"}
    found = {(x["scope"], x["path"], x["bytes"], x["set_by"]) for x in limits["limits"]}
    assert found == {
        ("intra-node", "vader", 4096, "default"),
        ("inter-node", "tcp", 32768, "--mca"),
    }
    assert limits["settings"]["pml"] == "ob1" and limits["settings"]["btl"] == "self,vader,tcp"
    shown = cli("show", str(run.id), check=True).stdout
    assert "inter-node tcp 32768 B (btl_tcp_eager_limit, --mca)" in shown

    run, limits, points = _run(cli, "mpich", "--cvar", "BCAST_INTRA_ALGORITHM=binomial")
    assert run.status == "complete" and {p.pair for p in points} >= {"inter-node"}
    assert run.request["cvar"] == {"MPIR_CVAR_BCAST_INTRA_ALGORITHM": "binomial"}
    assert limits["settings"]["MPIR_CVAR_BCAST_INTRA_ALGORITHM"] == "1"  # as MPI_T read it
