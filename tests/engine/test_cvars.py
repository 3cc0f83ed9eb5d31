"""MPI settings reach the engine's MPI and are recorded with the run, with the eager limits.

Open MPI: ``--mca btl_vader_eager_limit 8192`` is recorded as the intra-node limit and moves
the ping-pong step from 4 KiB to 8 KiB. MPICH: ``--cvar`` and inherited ``MPIR_CVAR_``
variables are stored, MPI_T (mpivars) reads the given value, and a value MPICH refuses stops
the engine's MPI_Init, so the ranks really saw it.
"""

from __future__ import annotations

import json
import math
import subprocess

import numpy as np
import pytest
from scipy.stats import mannwhitneyu

from commscope.data.mpi_config import RUN_DATA_KIND
from commscope.data.store import Store
from tests.conftest import have_mpi, need

pytestmark = pytest.mark.mpi
# Either side of Open MPI's default vader limit (4 KiB) and of the 8 KiB one given below.
SIZES = "4000,4100,8100,8300"  # pairs 2.5 % apart: without a switch, hardly a step
MIN_SAMPLES = "300"  # a step's median of 10 samples moved 12 % with no switch there
ROUNDS = 7  # runs of each setting, alternated
ALPHA = 0.01  # how unlikely the leans' order must be if the setting changed nothing
CVAR = "MPIR_CVAR_BCAST_INTRA_ALGORITHM"


def run_p2p(cli, family, *extra):
    out = cli(
        "run", "p2p", "--mpi", family, "--np", "2", "--ops", "pingpong", "--sizes", SIZES,
        "--min-samples", MIN_SAMPLES, "--json", *extra, check=True,
    )  # fmt: skip
    run_id = json.loads(out.stdout)["run"]
    with Store.open(cli.store) as store:
        run = store.get_run(run_id)
        limits = store.run_data(run_id, RUN_DATA_KIND)
        times = {p.bytes: np.array(p.kept_samples_s) for p in store.points(run_id)}
    return run, limits, times


def steps(times):
    """How far t(4100)/t(4000) and t(8300)/t(8100) are from no step: |log| of each ratio.

    From each size's median. Where a size pair straddles the protocol switch, the ratio moves
    away from 1: up by the extra handshake, or down where the copy beyond the limit is
    the faster one (seen here beside a busy core: 0.72-0.82 at 8 KiB).
    """
    med = {size: float(np.median(samples)) for size, samples in times.items()}
    return abs(math.log(med[4100] / med[4000])), abs(math.log(med[8300] / med[8100]))


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
    # The step moved from 4 KiB to 8 KiB. Each setting runs ROUNDS times, alternated; a run's
    # lean is its 4 KiB step less its 8 KiB step (above 0: the step stands at 4 KiB). The
    # default's leans are set against those under 8192 by a one-sided Mann-Whitney test,
    # exact for 7 against 7, at ALPHA. Both steps are needed: in this machine's slow state
    # (2 KiB ping-pong 1.5-2 us, not 0.5) a switch may cost nothing at one of the sizes (CI
    # saw 8 KiB steps under 8192 of .02 beside .09 under the default; here, default 4 KiB
    # steps of .006 beside .15).
    rounds = [(steps(t4), steps(t8))]
    for _ in range(ROUNDS - 1):
        rounds.append(
            (
                steps(run_p2p(cli, "openmpi")[2]),
                steps(run_p2p(cli, "openmpi", "--mca", "btl_vader_eager_limit=8192")[2]),
            )
        )
    print(f"|log step| at 4 KiB and 8 KiB, default and 8192 per round: {rounds}")
    default_lean = [d4 - d8 for (d4, d8), _ in rounds]
    given_lean = [g4 - g8 for _, (g4, g8) in rounds]
    test = mannwhitneyu(default_lean, given_lean, alternative="greater", method="exact")
    assert test.pvalue < ALPHA, (test, rounds)


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
