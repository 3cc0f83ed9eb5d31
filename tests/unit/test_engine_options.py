"""One declaration per engine option: the table, the typed request, and what is built from them."""

from __future__ import annotations

import argparse
import dataclasses
import json
import typing
from pathlib import Path

import pytest

from commscope.cli import run_cmd, run_options, run_request
from commscope.data.request import EngineOptions, RunRequest
from commscope.errors import InputError, StoreError
from commscope.measure import engine_options, runner
from commscope.measure.engine_options import TYPES, spec, table

BENCHMARKS = {"p2p", "loggp", "coll", "contention", "matrix", "bisection", "rma", "mbw"}
PYTHON_TYPES = {
    "int": int,
    "switch": int,
    "number": float,
    "sizes": tuple[int, ...],
    "names": str,
    "choice": str,
    "text": str,
    "stop": str,
    "distort": str,
}


def test_the_table_is_well_formed():
    names = [s.name for s in table()]
    assert len(set(names)) == len(names)
    assert len({s.flag for s in table()}) == len(names)
    assert len({s.record for s in table()}) == len(names)
    for s in table():
        assert s.type in TYPES, s.name
        assert set(s.benchmarks) <= BENCHMARKS, s.name
        assert s.help and "%" not in s.help, s.name
        if s.type in ("int", "number", "switch"):
            assert s.min is not None and s.max is not None and s.min <= s.max, s.name
        if s.type == "choice":
            assert s.choices, s.name
        if s.same_as is not None:  # the engine copies an earlier size list
            assert s.type == "sizes" and names.index(s.same_as) < names.index(s.name)
            assert spec(s.same_as).type == "sizes"
        if s.default is not None:
            engine_options.check_value(s, tuple(s.default) if s.type == "sizes" else s.default)
        else:
            assert s.type == "distort" or s.same_as, s.name


def test_engine_options_has_one_field_per_row_of_its_type():
    hints = typing.get_type_hints(EngineOptions)
    fields = [f.name for f in dataclasses.fields(EngineOptions)]
    assert fields == [s.name for s in table()]
    for s in table():
        assert hints[s.name] == PYTHON_TYPES[s.type] | None, s.name


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser()
    run_cmd.setup_parser(parser)
    return parser


def test_run_declares_every_run_row_with_its_default_and_help():
    parser = _parser()
    kinds = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    declared = set()
    for kind, sub in kinds.choices.items():
        actions = {a.dest: a for a in sub._actions}
        for s in run_options.rows_of(kind):
            declared.add(s.name)
            action = actions[s.name]
            assert action.option_strings == [s.run_flag]
            if action.help != argparse.SUPPRESS:  # hidden: testing, or listed by run coll
                assert s.help.split(": ", 1)[-1] in (action.help or "")
            if s.type != "switch":
                assert action.default == s.default, s.name
    assert declared == {s.name for s in table() if s.run}
    defaults = parser.parse_args([])
    request = run_request.build_request(defaults).engine
    for name, value in request.given().items():
        if spec(name).run:
            assert value == spec(name).default or spec(name).type == "switch", name


def test_a_value_the_table_refuses_is_one_line_naming_the_flag():
    cases = [
        ("window", 0, "--window 0 is out of range; give a whole number from 1 to 4096"),
        ("target_rse", 0.0, "--target-rse 0.0 is out of range; give a number above 0"),
        ("recv_buffers", "one,one", "--recv-buffers 'one,one': give a comma list of one, each"),
        ("levels", "disk", "--levels 'disk': give a comma list of memory, socket, nic"),
        ("buffers", "warm", "--buffers 'warm': give one of hot, cold"),
        ("stop", "rse:1", "--stop 'rse:1': give a, b or rse:X with 0 < X < 1"),
        ("test_distort", "1:2:0", "--test-distort '1:2:0': give RANK:OFFSET_S:DRIFT"),
        ("sizes", (), "--sizes '': give sizes from 0 to 2147483647 bytes"),
    ]
    for name, value, message in cases:
        with pytest.raises(InputError) as err:
            engine_options.check_value(spec(name), value)
        assert message in err.value.one_line() and "\n" not in str(err.value)
    with pytest.raises(InputError, match="--max-samples 3: must be >= --min-samples 5"):
        engine_options.check(EngineOptions(min_samples=5, max_samples=3))


def test_argv_follows_the_table_with_lists_joined_and_unset_options_left_out():
    options = EngineOptions(ops="bw", sizes=(0, 8), target_rse=0.02, check=1)
    argv = engine_options.argv(options, {("bw", "intra-node", 8), ("bw", "intra-node", 0)})
    assert argv == [
        "--ops",
        "bw",
        "--sizes",
        "0,8",
        "--skip",
        "bw:intra-node:0,bw:intra-node:8",
        "--recv-buffers",
        "each",  # a request from before the option: its own policy
        "--target-rse",
        "0.02",
        "--check",
        "1",
    ]


def test_argv_leaves_out_empty_defaults_that_smpirun_would_drop():
    # smpirun's script loses an empty argument, so "--procs ''" read the next flag as its value.
    assert engine_options.argv(EngineOptions(ops="bcast", procs="", skip="")) == ["--ops", "bcast"]
    argv = engine_options.argv(EngineOptions(ops="bcast", procs="2,4"))
    assert argv[argv.index("--procs") + 1] == "2,4"


def test_the_header_options_the_engine_records_fill_in_defaults():
    recorded = engine_options.recorded(EngineOptions(ops="barrier", sizes=(8,)))
    assert list(recorded) == [s.record for s in table() if s.type != "distort"]
    assert recorded["coll_sizes"] == recorded["loggp_sizes"] == [8]
    assert recorded["window"] == 64 and recorded["buffers"] == "hot"
    distorted = engine_options.recorded(EngineOptions(test_distort="1:0.001:1e-4"))
    assert distorted["test_distort"] == {"rank": 1, "offset_s": 0.001, "drift": 1e-4}


# Requests exactly as the code before the typed request stored them.
STORED_P2P = {
    "benchmark": "p2p",
    "mpi": None,
    "np": 2,
    "launcher": "auto",
    "timeout_s": 3600.0,
    "confidence": 0.95,
    "engine": {
        "timer": "monotonic_raw",
        "sizes": [0, 8, 1024],
        "pairs": "auto",
        "window": 64,
        "recv_buffers": "one",
        "warmup": 10,
        "min_samples": 10,
        "max_samples": 1000,
        "target_rse": 0.01,
        "point_budget_s": 0.25,
        "ops": "pingpong,bw,bibw",
    },
    "mca": {"btl": "self,tcp"},
    "placement": {"hosts": [["n1", 1], ["n2", 1]], "cores": [2, 2]},
}
STORED_COLL = {
    "benchmark": "coll",
    "mpi": "openmpi",
    "np": 4,
    "launcher": "srun",
    "timeout_s": 60.0,
    "confidence": 0.99,
    "engine": {
        "timer": "tsc",
        "coll_sizes": [8, 64],
        "sizes": [8, 64],
        "sync": "ring",
        "resync": "point",
        "sync_d": 100,
        "stop": "rse:0.01",
        "min_valid": 100,
        "max_launches": 1000,
        "coll_budget_s": 1.0,
        "k": 8,
        "k0": 4,
        "g": 0.25,
        "gamma": 1.1,
        "buffers": "hot",
        "root": 0,
        "check": 0,
        "block": 0,
        "naive_iters": 10,
        "test_distort": None,
        "ops": "alltoall,bcast",
    },
    "slurm": {"job": "77", "nodes": ["a", "b"], "ntasks": 4, "own": False, "plugin": "pmix"},
}
STORED_OLD_BW = {"benchmark": "p2p", "np": 2, "engine": {"ops": "pingpong,bw", "sizes": [8]}}


@pytest.mark.parametrize("stored", [STORED_P2P, STORED_COLL])
def test_stored_requests_read_and_write_back_unchanged(stored):
    request = RunRequest.from_json(json.loads(json.dumps(stored)))
    back = request.to_json()
    expected = dict(stored, engine={k: v for k, v in stored["engine"].items() if v is not None})
    assert back == expected
    assert json.loads(json.dumps(back)) == back
    assert RunRequest.from_json(back) == request


def test_a_stored_request_resumes_with_its_own_options_and_parts():
    coll = RunRequest.from_json(STORED_COLL)
    assert coll.engine.sizes == (8, 64) and coll.engine.test_distort is None
    assert coll.slurm is not None and coll.slurm["job"] == "77" and coll.launcher == "srun"
    argv = runner.engine_argv("/x/e", coll.engine, {("bcast", "world", 8)})
    assert argv[argv.index("--sync") + 1] == "ring" and "--test-distort" not in argv
    assert argv[argv.index("--skip") + 1] == "bcast:world:8"
    old = RunRequest.from_json(STORED_OLD_BW)  # lacks fields added since: their old defaults
    assert (old.launcher, old.timeout_s, old.mpi, old.confidence) == ("auto", 3600.0, None, None)
    argv = runner.engine_argv("/x/e", old.engine, set())
    assert argv[argv.index("--recv-buffers") + 1] == "each"


def test_unknown_stored_fields_are_kept_and_unknown_engine_options_refused():
    request = RunRequest.from_json({**STORED_P2P, "future": {"x": 1}})
    assert request.to_json()["future"] == {"x": 1}
    with pytest.raises(StoreError, match="engine option 'warp' is unknown"):
        RunRequest.from_json({**STORED_P2P, "engine": {"warp": 9}})
    with pytest.raises(StoreError, match="not an MPI run's request"):
        RunRequest.from_json({"imported": {"format": "osu"}})


def test_the_table_is_read_from_the_engine_sources():
    from commscope.measure import engine

    path = engine.engine_sources() / "options.json"
    assert json.loads(path.read_text())["options"][0]["name"] == table()[0].name
    assert (Path(engine.engine_sources()) / "cmake" / "options.cmake").is_file()


def test_run_options_group_every_run_row_once():
    groups = {run_options.group_of(s) for s in table() if s.run}
    assert groups == {"p2p", "coll", "contention", "matrix"}


def test_the_table_agrees_with_the_limits_the_schema_and_the_analysis():
    from commscope import limits
    from commscope.analysis import recv_buffers
    from commscope.data import record_parse

    assert spec("root").max == limits.MAX_RANKS - 1 and spec("block").max == limits.MAX_RANKS
    assert spec("recv_buffers").choices == recv_buffers.POLICIES
    schema = record_parse.load_schema()
    recorded = schema["$defs"]["header"]["properties"]["options"]["properties"]
    for value in recorded["recv_buffers"]["enum"]:
        engine_options.check_value(spec("recv_buffers"), value)
