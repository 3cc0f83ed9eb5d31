"""MPI settings reach the engine's MPI and are recorded with the run, with the eager limits.

Open MPI: ``--mca btl_vader_eager_limit 8192`` is recorded as the intra-node limit and moves
the ping-pong step from 4 KiB to 8 KiB. MPICH: ``--cvar`` and inherited ``MPIR_CVAR_``
variables are stored, MPI_T (mpivars) reads the given value, and a value MPICH refuses stops
the engine's MPI_Init, so the ranks really saw it.
"""

from __future__ import annotations

import json
import subprocess

import numpy as np
import pytest

from commscope.data.mpi_config import RUN_DATA_KIND
from commscope.data.store import Store
from tests.conftest import have_mpi, need

pytestmark = pytest.mark.mpi
# Either side of Open MPI's default vader limit (4 KiB) and of the 8 KiB one given below.
SIZES = "1K,2K,3K,3900,4000,4100,5K,6K,7K,7900,8000,8100,9K,10K,12K,16K"
CVAR = "MPIR_CVAR_BCAST_INTRA_ALGORITHM"


def run_p2p(cli, family, *extra):
    out = cli(
        "run", "p2p", "--mpi", family, "--np", "2", "--ops", "pingpong", "--sizes", SIZES,
        "--json", *extra, check=True,
    )  # fmt: skip
    run_id = json.loads(out.stdout)["run"]
    with Store.open(cli.store) as store:
        run = store.get_run(run_id)
        limits = store.run_data(run_id, RUN_DATA_KIND)
        times = {p.bytes: np.array(p.kept_samples_s) for p in store.points(run_id)}
    return run, limits, times


def step(times, below, above):
    """t(above) / t(below) and that ratio's noise (relative standard errors of both medians)."""

    def median_and_error(samples):
        mad = np.median(np.abs(samples - np.median(samples)))
        return float(np.median(samples)), float(1.4826 * mad / np.sqrt(len(samples)))

    (lo, e_lo), (hi, e_hi) = median_and_error(times[below]), median_and_error(times[above])
    return hi / lo, (hi / lo) * (e_lo / lo + e_hi / hi)


def test_open_mpi_records_the_vader_limit_a_given_parameter_sets_and_the_step_follows(cli):
    need(have_mpi("openmpi"), "openmpi is not installed")
    run, default, t4 = run_p2p(cli, "openmpi")
    intra = [x for x in default["limits"] if x["scope"] == "intra-node"]
    assert [(x["path"], x["bytes"], x["set_by"]) for x in intra] == [("vader", 4096, "default")]
    run, given, t8 = run_p2p(cli, "openmpi", "--mca", "btl_vader_eager_limit=8192")
    assert run.request["mca"] == {"btl_vader_eager_limit": "8192"}
    intra = [x for x in given["limits"] if x["scope"] == "intra-node"]
    assert [(x["setting"], x["bytes"], x["set_by"]) for x in intra] == [
        ("btl_vader_eager_limit", 8192, "--mca")
    ]
    assert given["settings"]["btl_vader_eager_limit"] == "8192"
    shown = cli("show", str(run.id), check=True).stdout
    assert "--mca btl_vader_eager_limit=8192" in shown
    assert "intra-node vader 8192 B (btl_vader_eager_limit, --mca)" in shown
    # The switch moved: across 4 KiB the default run changes protocol and the other does
    # not; across 8 KiB the reverse. Each ratio is compared beyond the noise of its medians.
    at4 = {"default": step(t4, 4000, 4100), "8192": step(t8, 4000, 4100)}
    at8 = {"default": step(t4, 8100, 9216), "8192": step(t8, 8100, 9216)}
    print(f"t(4100)/t(4000): {at4}; t(9216)/t(8100): {at8}")
    differs = [
        abs(a[0] - b[0]) > 2 * (a[1] + b[1])
        for a, b in ((at4["default"], at4["8192"]), (at8["default"], at8["8192"]))
    ]
    assert all(differs), (at4, at8)


def test_mpich_gets_given_and_inherited_cvars_and_records_them(cli):
    need(have_mpi("mpich"), "mpich is not installed")
    cli.env["MPIR_CVAR_CTXID_EAGER_SIZE"] = "2"  # inherited from the environment
    run, limits, times = run_p2p(cli, "mpich", "--cvar", "BCAST_INTRA_ALGORITHM=binomial")
    assert run.status == "complete" and times
    assert run.request["cvar"] == {CVAR: "binomial", "MPIR_CVAR_CTXID_EAGER_SIZE": "2"}
    # MPI_T, under the run's environment, read the given value (binomial is 1; auto is 0).
    assert limits["mpi"] == "MPICH" and limits["settings"][CVAR] == "1"
    device = subprocess.run(["mpichversion"], capture_output=True, text=True, check=True).stdout
    if "ch4:ucx" in device and "--with-ch4-shmmods" not in device:
        assert not limits["limits"] and "UCX_RNDV_THRESH" in limits["unknown"][0]
    else:
        assert limits["limits"] or limits["unknown"]
    shown = cli("show", str(run.id), check=True).stdout
    assert f"--cvar {CVAR}=binomial" in shown and "eager limits (recorded):" in shown
    as_json = json.loads(cli("show", str(run.id), "--json", check=True).stdout)
    assert as_json["protocol_limits"] == limits


def test_mpich_ranks_see_the_cvar_a_value_mpich_refuses_stops_them(cli):
    need(have_mpi("mpich"), "mpich is not installed")
    out = cli("run", "p2p", "--mpi", "mpich", "--np", "2", "--sizes", "8", "--ops", "pingpong",
              "--cvar", "BCAST_INTRA_ALGORITHM=bogus", "--json")  # fmt: skip
    assert out.returncode != 0
    with Store.open(cli.store) as store:
        (run,) = store.list_runs()
    assert run.status == "incomplete" and run.request["cvar"] == {CVAR: "bogus"}
    assert f"Invalid {CVAR} value (bogus)" in (run.message or "") + out.stderr, run.message
