"""Every --json output is strict JSON: figures that are not finite are null, never NaN.

Each command is run through the CLI on a stored run that yields NaN or Infinity somewhere
(samples with a zero time, as stores kept before the input rules; a fit or median with
nothing in it; cells so large their sum overflows), and its output is parsed by a reader
that refuses ``NaN``, ``Infinity`` and ``-Infinity``.
"""

from __future__ import annotations

import json
import math
import re
import sqlite3
from pathlib import Path
from types import SimpleNamespace
from typing import Any
from unittest import mock

import numpy as np
import pytest

import commscope
from commscope.cli import json_text
from commscope.data import store_schema, store_seal
from commscope.data.record_parse import record_from_dict
from commscope.data.request import RunRequest
from commscope.data.store import Store
from commscope.errors import LaunchError
from tests import synthetic_contention, synthetic_runs
from tests.fuzz.harness import Outcome, call

SOURCE = Path(commscope.__file__).parent


def _refuse(name: str) -> None:
    raise AssertionError(f"not strict JSON: {name}")


def strict(text: str) -> Any:
    """``text`` parsed as strict JSON (NaN, Infinity and -Infinity raise)."""
    return json.loads(text, parse_constant=_refuse)


def ok(outcome: Outcome) -> Any:
    assert outcome.code == 0, outcome
    return strict(outcome.out)


def test_non_finite_numbers_become_null_at_any_depth():
    data = {
        "a": math.nan,
        "b": [1.5, math.inf, (-math.inf, np.float64("nan"))],
        "c": {"d": {"e": float("nan")}, "f": 0, "g": True, "h": None, "i": "NaN"},
    }
    assert strict(json_text.text(data)) == {
        "a": None,
        "b": [1.5, None, [None, None]],
        "c": {"d": {"e": None}, "f": 0, "g": True, "h": None, "i": "NaN"},
    }


def test_stored_records_are_refused_not_changed():
    assert strict(json_text.record_line({"samples_s": [1e-6]})) == {"samples_s": [1e-6]}
    with pytest.raises(ValueError):
        json_text.record_line({"samples_s": [math.nan]})


def test_no_output_bypasses_the_strict_helper():
    # json.dump(s) writes NaN by default: every output must come through cli/json_text.py.
    found = [
        f"{path.relative_to(SOURCE)}:{n}"
        for path in sorted((SOURCE / "cli").glob("*.py"))
        if path.name != "json_text.py"
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if re.search(r"\bjson\.dumps?\(", line)
    ]
    assert not found, found


def _point(op: str, size: int, samples: list[float], pair: str = "inter-node") -> dict[str, Any]:
    return {
        "type": "point",
        "op": op,
        "pair": pair,
        "ranks": [0, 1],
        "bytes": size,
        "bytes_per_sample": size * (1 if op == "pingpong" else 64),
        "iters_per_sample": 1,
        "warmup": 0,
        "samples_s": samples,
        "stop": "imported",
    }


def _old_run(store: Path, records: list[dict[str, Any]], kind: str = "import") -> int:
    """A run as a store kept before the input rules: records not checked against them."""
    with Store.open(store) as s:
        run_id = s.create_run(kind, "old", None, None, 4, {})
        segment = s.start_segment(run_id, ["commscope", kind])
        for raw in records:
            s.add_point(run_id, segment, record_from_dict(raw, "test", validate=False))
        s.finish_segment(segment, "complete")
        s.set_run_status(run_id, "complete")
    return run_id


def _reseal(db: sqlite3.Connection, table: str) -> None:
    """Checksum rows changed by hand again, as a store written by commscope has them."""
    for (rowid,) in db.execute(f"SELECT rowid FROM {table}").fetchall():
        store_seal.seal(db, table, rowid, store_schema.COLUMNS[table])


def _zero_times(store: Path) -> int:
    """Ping-pong and bw points measured below the timer's resolution: rates are NaN."""
    return _old_run(
        store, [_point(op, size, [0.0] * 3) for op in ("pingpong", "bw") for size in (0, 8, 1024)]
    )


def test_show_json(tmp_path):
    store = tmp_path / "s.sqlite"
    run_id = _zero_times(store)
    data = ok(call(None, store, "show", str(run_id), "--json"))
    rates = [row["bandwidth_Bps"] for row in data["sizes"] if row["bytes"] > 0]
    assert rates and all(rate is None for rate in rates)


def test_compare_json(tmp_path):
    store = tmp_path / "s.sqlite"
    a, b = _zero_times(store), _zero_times(store)
    data = ok(call(None, store, "compare", str(a), str(b), "--json"))
    assert data["rows"]


def test_runs_json(tmp_path):
    store = tmp_path / "s.sqlite"
    _zero_times(store)
    with sqlite3.connect(store) as db:  # SQLite keeps an infinity a REAL column was given
        db.execute("UPDATE runs SET created_unix = 9e999")
        _reseal(db, "runs")
    data = ok(call(None, store, "runs", "--json"))
    assert data[0]["created_unix"] is None


def test_export_json(tmp_path):
    store = tmp_path / "s.sqlite"
    run_id = _zero_times(store)
    nan_run = _old_run(store, [_point("pingpong", 8, [math.nan, 1e-6])])
    outcome = call(None, store, "export", str(nan_run), "--format", "json")
    assert outcome.code == 1 and outcome.out == "" and "not finite" in outcome.err
    lines = call(None, store, "export", str(run_id), "--format", "json").out.splitlines()
    assert len(lines) == 6 and all(strict(line)["samples_s"] == [0.0] * 3 for line in lines)


def test_export_json_holds_every_record_and_csv_names_what_it_leaves_out(tmp_path):
    store = tmp_path / "s.sqlite"
    coll = {
        "type": "coll", "op": "alltoall", "group": "world", "nranks": 4, "bytes": 8,
        "root": None, "method": "window", "times_s": [1e-6, 2e-6], "flags": [0, 0],
        "stage": [0, 0], "windows_s": [1e-5], "stop": "budget",
    }  # fmt: skip
    run_id = _old_run(store, [_point("pingpong", 8, [1e-6, 1e-6]), coll], "coll")
    lines = call(None, store, "export", str(run_id), "--format", "json").out.splitlines()
    assert sorted(strict(line)["type"] for line in lines) == ["coll", "point"]
    csv_out = call(None, store, "export", str(run_id), "--format", "csv")
    assert csv_out.code == 0 and len(csv_out.out.splitlines()) == 3  # heading, two samples
    assert "1 other records" in csv_out.err and "--format json" in csv_out.err


MODEL = "nodes: [n0, n1]\nsockets: 1\ncores: 2\n"


def test_predict_json(tmp_path):
    store = tmp_path / "s.sqlite"
    model = tmp_path / "m.yaml"
    model.write_text(MODEL)
    # Cells of 1e308 s: twice one of them, the exchange time, overflows to infinity.
    huge = synthetic_contention.records("nic", lambda m, cf: 1e308, [1024, 1 << 20], [1, 2])
    memory = synthetic_contention.records(
        "memory", lambda m, cf: 1e-6 * cf, [1024, 1 << 20], [1, 2]
    )
    run_id = _old_run(store, [r.raw for r in huge + memory], "contention")
    argv = ["predict", "alltoall", "--np", "4", "--tables", str(run_id), "--cluster", str(model)]
    with np.errstate(all="ignore"):
        data = ok(call(None, store, *argv, "--json"))
    assert None in [p["time_s"] for p in data["predictions"]]


def _store_points(store: Any, request: RunRequest, records: list[dict[str, Any]]) -> int:
    stored = request.to_json()
    run_id: int = store.create_run(stored["benchmark"], "sim", "smpi", "smpirun", 2, stored)
    segment = store.start_segment(run_id, ["smpirun"])
    for raw in records:
        store.add_point(run_id, segment, record_from_dict(raw, "test", validate=False))
    store.finish_segment(segment, "complete")
    store.set_run_status(run_id, "complete")
    return run_id


def _simulated(*runs: list[dict[str, Any]]):
    """Stand-in for the SMPI job: each call stores the next list of records as a run."""
    queue = list(runs)

    def simulate(store, request, label, quiet):
        return _store_points(store, request, queue.pop(0))

    return simulate


def _simulate(tmp_path: Path, store: Path, *argv: str, runs: list[list[dict[str, Any]]]):
    model = tmp_path / "m.yaml"
    model.write_text(MODEL + "channels: {nic: {bandwidth: 1e9, latency: 1us}}\n")
    with (
        mock.patch("commscope.cli.simulate_run.simulate_into", _simulated(*runs)),
        mock.patch("commscope.simulate.smpi.version", lambda: "3.32"),
    ):
        return call(None, store, "simulate", argv[0], "--cluster", str(model), *argv[1:])


def test_simulate_sweep_json(tmp_path):
    store = tmp_path / "s.sqlite"
    zero = [_point("pingpong", 8, [0.0] * 3)]  # a time of 0: the change from it is NaN
    later = [_point("pingpong", 8, [2e-6] * 3)]
    argv = ("run", "--sweep", "nic-latency=1us,2us", "--json", "--", "p2p")
    data = ok(_simulate(tmp_path, store, *argv, runs=[zero, later]))
    assert [p["change"] for p in data["points"]] == [None]


def test_simulate_validate_json(tmp_path):
    store = tmp_path / "s.sqlite"
    run_id = synthetic_runs.store_run(store, "measured", with_colls=False)
    request = {"benchmark": "p2p", "np": 4, "engine": {"ops": "pingpong"}}
    with sqlite3.connect(store) as db:
        db.execute("UPDATE runs SET request_json = ?", (json.dumps(request),))
        _reseal(db, "runs")
    elsewhere = [_point("pingpong", 123457, [1e-6] * 3)]  # no point in common: no median error
    data = ok(_simulate(tmp_path, store, "validate", str(run_id), "--json", runs=[elsewhere]))
    assert data["median_abs_error"] is None and data["points"] == []


class _MPI(SimpleNamespace):
    """An MPI as the validate commands use it, without one installed."""

    def __init__(self) -> None:
        super().__init__(choice="openmpi", family="openmpi", tag="openmpi-test", launcher="mpirun")


def _validate(store: Path, runner_run: Any, *argv: str) -> Outcome:
    with (
        mock.patch("commscope.measure.mpi.resolve", lambda choice: _MPI()),
        mock.patch("commscope.measure.hosts.probe_cores", lambda mpi, hosts: {"localhost": 2}),
        mock.patch("commscope.measure.launch.check_mca", lambda mpi, mca: None),
        mock.patch("commscope.measure.runner.run", runner_run),
    ):
        return call(None, store, "validate", *argv, "--hosts", "localhost", "--json")


def test_validate_timers_json(tmp_path):
    def unavailable(store, run_id, request, mpi):
        raise LaunchError("the timer is not available here")

    data = ok(_validate(tmp_path / "s.sqlite", unavailable, "timers", "--timers", "tsc"))
    assert data and all(v["null_s"] is None for v in data)


def test_validate_predict_json(tmp_path):
    store = tmp_path / "s.sqlite"
    memory = synthetic_contention.records("memory", lambda m, cf: 1e-6 * cf, [1024, 8192], [1, 2])
    tables = _old_run(store, [r.raw for r in memory], "contention")

    def no_valid_launch(s, run_id, request, mpi):
        size = request.engine.sizes[0]
        segment = s.start_segment(run_id, ["mpirun"])
        raw = {
            "type": "coll",
            "op": "alltoall_block",
            "group": "world",
            "nranks": request.np,
            "bytes": size,
            "root": None,
            "method": "window",
            "buffers": "cold",
            "times_s": [1e-3] * 3,
            "flags": [1] * 3,  # every launch started late: no valid one
            "stage": [1] * 3,
            "windows_s": [1e-3],
            "stop": "budget",
        }
        s.add_point(run_id, segment, record_from_dict(raw, "test"))
        s.finish_segment(segment, "complete")

    argv = ("predict", "--tables", str(tables), "--np", "2", "--sizes", "1K")
    data = ok(_validate(store, no_valid_launch, *argv))
    assert data["sizes"][0]["kendall_tau"] is None
    assert data["placements"][0]["measured_s"] is None
