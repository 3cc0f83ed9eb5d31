"""One rule for every number commscope takes in: the worst inputs, each refused in one line."""

from __future__ import annotations

import json
import math
import subprocess
from pathlib import Path

import pytest

from commscope import limits, strict
from commscope.data.record_parse import record_from_dict
from commscope.data.store import Store
from commscope.errors import UsageError
from commscope.measure.compute import hpcc
from commscope.measure.tcp import program
from tests.fuzz.harness import assert_one_line_refusal, call

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.mark.parametrize(
    ("text", "lo", "hi", "value"),
    [
        ("8", 1, 10, 8),
        (" 8 ", 1, 10, 8),
        ("+8", 1, 10, 8),
        ("0", 0, 0, 0),
    ],
)
def test_whole_numbers_in_ascii_digits_pass(text, lo, hi, value):
    assert strict.whole(text, lo, hi) == value


@pytest.mark.parametrize(
    "text",
    [
        "8\u00b2",
        "\u0661\u0662",
        "\uff18",
        "1_0",
        "0x10",
        "1e3",
        "8.0",
        "",
        " ",
        "inf",
        "9" * 5000,
        "11",
        "-1",
    ],
)
def test_whole_numbers_refuse_anything_else_saying_the_bounds(text):
    with pytest.raises(strict.NumberError, match="give a whole number from 0 to 10"):
        strict.whole(text, 0, 10)


@pytest.mark.parametrize(
    "text",
    [
        "inf",
        "-inf",
        "nan",
        "Infinity",
        "1e999",
        "1_0.5",
        "\u0661.5",
        "0x1p3",
        "5e-324x",
        "0",
        "1e-400",
    ],
)
def test_real_numbers_must_be_finite_ascii_and_above_the_bound(text):
    with pytest.raises(strict.NumberError):
        strict.real(text, 0, 100, above=True)
    assert strict.real("1.5e-6", 0, 1, above=True) == 1.5e-6


def test_checked_values_from_files_refuse_bools_huge_ints_and_nan():
    for value in (True, 10**400, math.nan, math.inf, "3", None):
        with pytest.raises(strict.NumberError):
            strict.check_real(value, 0, 1e300)
    with pytest.raises(strict.NumberError):
        strict.check_whole(2**63, 1, limits.MAX_MODEL_NODES)


# The command lines that used to run, hang or store garbage; now each is one line, exit 2.
REFUSED = [
    (
        ["run", "--np", "9223372036854775808"],
        "argument --np: 9223372036854775808 is out of range; give a whole number from 1 to 1048576",
    ),
    (["run", "--np", "8\u00b2"], "argument --np: '8\u00b2' is not a whole number in ASCII digits"),
    (["run", "--timeout", "inf"], "argument --timeout: 'inf' is not a number in ASCII digits"),
    (["run", "--timeout", "1e9"], "argument --timeout: '1e9' is out of range"),
    (["run", "coll", "--window-margin", "inf"], "argument --window-margin: 'inf' is not a number"),
    (["run", "coll", "--window-margin", "0.5"], "give a number from 1 to 100"),
    (["run", "coll", "--block=-1"], "argument --block: -1 is out of range"),
    (
        ["run", "p2p", "--sizes", "16GiB"],
        "--sizes: size '16GiB' is 17179869184 bytes, above the limit of 2147483647 bytes",
    ),
    (["run", "p2p", "--sizes", "17179869185"], "above the limit of 2147483647 bytes"),
    (["run", "p2p", "--sizes", ""], "--sizes: size list '' is empty"),
    (["run", "coll", "--sizes", ""], "--sizes: size list '' is empty"),
    (["run", "p2p", "--max-size", "3GiB"], "--max-size: size '3GiB'"),
    (["run", "coll", "--stop", "rse:inf"], "--stop 'rse:inf': give a, b or rse:X"),
    (["run", "--label", "a\x1b[2Jb"], "argument --label: holds the control character \\x1b"),
    (["run", "--label", ""], "argument --label: is empty"),
    (["run", "coll", "--test-distort", "1:inf:0"], "--test-distort '1:inf:0'"),
    (
        ["show", "99999999999999999999"],
        "run '99999999999999999999' is neither 'latest' nor a run id",
    ),
    (["export", "1\u00b2"], "is neither 'latest' nor a run id"),
    (
        ["predict", "alltoall", "--np", "99999999999999999999"],
        "argument --np: 99999999999999999999 is out of range; give a whole number from 1 to 65536",
    ),
    (["predict", "alltoall", "--np", "4", "--root", "4"], "--root 4: give a rank below"),
    (
        ["import", "osu", str(FIXTURES / "osu_latency.txt"), "--label", "x", "--nranks", "0"],
        "argument --nranks: 0 is out of range",
    ),
    (["vcluster", "up", "--nodes", "1e3"], "argument --nodes: '1e3' is not a whole number"),
    (["tcp", "serve", "--port", "65536"], "argument --port: 65536 is out of range"),
]


@pytest.fixture
def no_spawn(monkeypatch):
    """Refused before any work: starting a process (MPI, a compiler, a helper) fails the test."""

    def spawned(*args, **kwargs):
        raise AssertionError(f"a process was started before the refusal: {args[:1]}")

    monkeypatch.setattr(subprocess, "Popen", spawned)


@pytest.mark.parametrize(("argv", "message"), REFUSED)
def test_bad_values_are_one_line_naming_the_option_and_the_fix(tmp_path, no_spawn, argv, message):
    outcome = call(None, tmp_path / "store.sqlite", *argv)
    assert_one_line_refusal(outcome)
    assert message in outcome.err
    assert not (tmp_path / "store.sqlite").exists() or _no_runs(tmp_path / "store.sqlite")


def _no_runs(store: Path) -> bool:
    with Store.open(store) as s:
        return s.list_runs() == []


def test_1000_nodes_behind_listed_switches_are_refused_before_their_platform(tmp_path, no_spawn):
    # Listed switches take N^2 routes; a flat model or a topology of that size is written.
    model = tmp_path / "big.yaml"
    model.write_text(
        "nodes: 1000\nsockets: 1\ncores: 2\nchannels: {nic: {bandwidth: 1e9}}\n"
        "switches: [{nodes: 0-499, uplink: {bandwidth: 1e9}},"
        " {nodes: 500-999, uplink: {bandwidth: 1e9}}]\n"
    )
    outcome = call(
        None, tmp_path / "s.sqlite", "simulate", "run", "--cluster", str(model), "--", "p2p"
    )
    assert_one_line_refusal(outcome)
    assert "switches: 1000 nodes behind listed switches" in outcome.err
    assert "kind: fat_tree" in outcome.err


def test_predict_at_the_stated_limit_of_processes_is_refused_for_fit_not_hung(tmp_path, no_spawn):
    # A hang would meet pytest-timeout's limit (pyproject.toml), not a wall-clock assert here.
    model = tmp_path / "small.yaml"
    model.write_text("nodes: 4\nsockets: 1\ncores: 2\nchannels: {nic: {bandwidth: 1e9}}\n")
    outcome = call(
        None,
        tmp_path / "s.sqlite",
        "predict",
        "alltoall",
        "--np",
        str(limits.MAX_PREDICT_PROCS),
        "--cluster",
        str(model),
    )
    assert_one_line_refusal(outcome)
    assert "fit no n x c placement" in outcome.err


def test_export_json_never_writes_infinity_a_store_may_hold(tmp_path):
    store = tmp_path / "s.sqlite"
    raw = {
        "type": "point",
        "op": "bw",
        "pair": "unknown",
        "ranks": [0, 1],
        "bytes": 8,
        "bytes_per_sample": 512,
        "iters_per_sample": 1,
        "warmup": 0,
        "samples_s": [math.inf],
        "stop": "imported",
    }
    with Store.open(store) as s:  # as an import before this rule stored IMB's 5e-324 Msg/sec
        run_id = s.create_run("import", "old", None, None, 2, {})
        segment = s.start_segment(run_id, ["commscope", "import"])
        s.add_point(run_id, segment, record_from_dict(raw, "test", validate=False))
    outcome = call(None, store, "export", str(run_id), "--format", "json")
    assert_one_line_refusal(outcome, codes=(1,))
    assert outcome.out == "" and "not finite (NaN or Infinity)" in outcome.err
    good = call(None, store, "import", "osu", str(FIXTURES / "osu_latency.txt"), "--label", "x")
    assert good.code == 0
    lines = call(None, store, "export", "latest", "--format", "json").out.splitlines()
    assert lines and all(json.loads(line, parse_constant=_no_constant) for line in lines)


def _no_constant(name: str) -> None:
    raise AssertionError(name)


@pytest.mark.parametrize(
    "line",
    [
        "n0 slots=8\u00b2",
        "n0 slots=" + "9" * 5000,
        "n0:99999999999",
        "rank 99999999999=n0 slot=0",
        "n0 slots=1e3",
    ],
)
def test_hostfile_and_rankfile_counts_are_refused_in_one_line(tmp_path, line):
    model = tmp_path / "m.yaml"
    model.write_text("nodes: [n0, n1]\nsockets: 1\ncores: 2\nchannels: {nic: {bandwidth: 1e9}}\n")
    hosts = tmp_path / "hosts"
    hosts.write_text(line + "\n")
    flag = "--rankfile" if line.startswith("rank") else "--hostfile"
    outcome = call(
        None,
        tmp_path / "s.sqlite",
        "predict",
        "alltoall",
        "--np",
        "2",
        "--cluster",
        str(model),
        flag,
        str(hosts),
    )
    assert_one_line_refusal(outcome)
    assert f"{hosts} line 1" in outcome.err


def test_run_hostfile_slots_beyond_int_digits_are_refused(tmp_path):
    hosts = tmp_path / "hosts"
    hosts.write_text("localhost slots=" + "9" * 5000 + "\n")
    outcome = call(None, tmp_path / "s.sqlite", "run", "p2p", "--hostfile", str(hosts))
    assert_one_line_refusal(outcome)
    assert "slots" in outcome.err and "must be a whole number from 1 to 4096" in outcome.err


@pytest.mark.parametrize(
    ("parse", "text"),
    [
        (program.parse_peer, "host:\u00b2"),
        (program.parse_peer, "host:" + "9" * 5000),
        (hpcc.parse_grid, "2x\u00b2"),
        (hpcc.parse_grid, "2x" + "9" * 5000),
    ],
)
def test_ports_and_grids_take_ascii_digits_only(parse, text):
    with pytest.raises(UsageError):
        parse(text)
