"""`run hpl` on this machine under Open MPI and MPICH: HPL built with each MPI's mpicc solves,
passes its residual check, and is stored as a measured run of kind hpl."""

from __future__ import annotations

import json

import pytest

from commscope.data.store import Store
from tests.conftest import CLI, have_mpi, need
from tests.simgrid.test_simulate_app import HPL_SOURCE


@pytest.mark.parametrize("family", ["openmpi", "mpich"])
def test_run_hpl_solves_each_grid_and_stores_measured_runs(cli: CLI, family: str) -> None:
    need(have_mpi(family), f"{family} is not installed")
    need(HPL_SOURCE.exists(), f"HPC Challenge source at {HPL_SOURCE} (apt-get source hpcc)")
    out = cli(
        "run",
        "hpl",
        "--mpi",
        family,
        "--grid",
        "1x2,2x1",
        "--matrix-order",
        "600",
        "--nb",
        "32",
        "--source",
        str(HPL_SOURCE),
        "--json",
        timeout=900,
    )
    assert out.returncode == 0, out.stderr
    runs = json.loads(out.stdout)["runs"]
    assert [(r["p"], r["q"], r["n"], r["nb"]) for r in runs] == [(1, 2, 600, 32), (2, 1, 600, 32)]
    for r in runs:
        assert r["passed"] and 0 < r["residual"] < 16.0, r  # HPL's own threshold is 16
        assert r["gflops"] > 0 and 0 < r["hpl_time_s"] < r["wall_s"], r
        assert r["measured"] and r["mpi"].startswith(family) and r["local"]
    with Store.open(cli.store) as store:
        for r in runs:
            info = store.get_run(r["run"])
            assert (info.kind, info.status, info.nranks) == ("hpl", "complete", 2)
            assert info.mpi is not None and info.mpi.startswith(family)
    shown = json.loads(cli("show", str(runs[0]["run"]), "--json", check=True).stdout)
    assert json.dumps(shown).count('"measured": true') >= 1
