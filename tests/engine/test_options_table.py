"""The engine was built from the table Python reads, and every option in it round-trips.

Python's argument list -> the engine's parser -> the header record's ``options``: a value set
on one side and lost, renamed or rounded on the other fails here.
"""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from commscope.data.request import EngineOptions
from commscope.measure import engine, engine_options
from commscope.measure import mpi as mpi_mod
from tests.conftest import have_mpi, need

pytestmark = pytest.mark.mpi

# A value other than the default for every option, chosen so the job still runs quickly:
# two ranks, one barrier, a handful of launches.
NOT_DEFAULT = {
    "ops": "barrier",
    "pairs": "intra-node",
    "timer": "mpi_wtime",
    "sizes": (8, 16),
    "coll_sizes": (8,),
    "loggp_sizes": (4,),
    "skip": "bcast:world:8",
    "window": 8,
    "recv_buffers": "each,one",
    "window_bytes_cap": 1048576,
    "warmup": 2,
    "min_samples": 3,
    "max_samples": 5,
    "target_rse": 0.5,
    "point_budget_s": 0.5,
    "sample_min_s": 0.0001,
    "sync": "ring",
    "resync": "run",
    "sync_d": 10,
    "sync_rounds": 3,
    "sync_span_s": 0.1,
    "k": 3,
    "k0": 2,
    "g": 0.5,
    "gamma": 1.5,
    "stop": "rse:0.5",
    "min_valid": 2,
    "max_launches": 6,
    "coll_budget_s": 0.5,
    "naive_iters": 3,
    "root": 1,
    "buffers": "cold",
    "check": 1,
    "levels": "memory",
    "cf_max": 1,
    "nruns": 2,
    "reps": 2,
    "in_flight": 2,
    "idle_s": 0.25,
    "pin": 1,
    "block": 1,
    "test_distort": "1:0.001:0.0001",
    "procs": "2",
    "matrix_sizes": (1024,),
    "matrix_window": 4,
    "matrix_samples": 2,
    "matrix_schedule": "serial",
    "matrix_plan": "shift:1",
    "matrix_prefix": "c1/",
    "matrix_per": "socket",
    "bisection_reps": 2,
    "bisection_seed": 7,
    "rma_ops": "put",
    "rma_sync": "lock",
    "mbw_pairs": "1",
}


@pytest.fixture(scope="module")
def engine_path(tmp_path_factory) -> str:
    need(have_mpi("openmpi"), "openmpi is not installed")
    home = os.environ.get("COMMSCOPE_TEST_HOME", "/tmp/commscope-test-home")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("COMMSCOPE_HOME", home)
        return str(engine.find(mpi_mod.resolve("openmpi")).path)


def test_the_engine_prints_the_table_python_uses(engine_path):
    out = subprocess.run(
        [engine_path, "--options-json"], capture_output=True, text=True, check=True, timeout=60
    )
    assert json.loads(out.stdout)["options"] == [s.to_json() for s in engine_options.table()]


def test_every_option_round_trips_into_the_header(engine_path):
    assert set(NOT_DEFAULT) == {s.name for s in engine_options.table()}, "give the new row a value"
    for s in engine_options.table():
        assert NOT_DEFAULT[s.name] != s.default, s.name
    options = EngineOptions(**NOT_DEFAULT)
    engine_options.check(options)
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    argv = ["mpirun.openmpi", "--oversubscribe", "-np", "2", engine_path]
    out = subprocess.run(
        [*argv, *engine_options.argv(options)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr
    header = json.loads(out.stdout.splitlines()[0])
    assert header["type"] == "header"
    assert header["options"] == engine_options.recorded(options)


def test_the_engine_refuses_what_the_table_bounds(engine_path):
    for flag, value in (
        ("--window", "0"),
        ("--window", "1.5"),
        ("--recv-buffers", "one,one"),
        ("--sizes", "8,2147483648"),  # above an int count (commscope.limits.MAX_MESSAGE_BYTES)
        ("--coll-sizes", "18446744073709551615"),
    ):
        env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
        out = subprocess.run(
            ["mpirun.openmpi", "-np", "1", engine_path, flag, value],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
        )
        assert out.returncode != 0 and f"{flag} {value}: expected" in out.stderr
