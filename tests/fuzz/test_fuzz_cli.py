"""Command-line values, run ids, labels and hostfiles, given hostile text.

`run` is stopped where it would look for MPI (no MPI is started here): what it would have
launched is checked instead.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from unittest import mock

from hypothesis import given
from hypothesis import strategies as st

from commscope import limits
from commscope.cli import run_cmd
from tests.fuzz import harness
from tests.fuzz.strategies import number_text

FIXTURE = Path(__file__).parents[1] / "unit" / "fixtures" / "osu_latency.txt"
MODEL = (
    "nodes: [n0, n1, n2, n3]\nsockets: 2\ncores: 4\n"
    "channels: {nic: {bandwidth: 10Gbit/s, latency: 1us},"
    " memory: {bandwidth: 10GB/s, latency: 0.2us}, socket: {bandwidth: 12GB/s}}\n"
)
RUN_OPTIONS = [
    "--np",
    "--perturbation",
    "--target-rse",
    "--point-budget",
    "--min-samples",
    "--max-samples",
    "--window",
    "--warmup",
    "--sync-patience",
    "--min-valid",
    "--max-launches",
    "--coll-budget",
    "--stage-launches",
    "--initial-launches",
    "--invalid-share",
    "--window-margin",
    "--root",
    "--block",
    "--iterations",
    "--cf-max",
    "--repeats",
    "--in-flight",
    "--timeout",
    "--sizes",
    "--max-size",
    "--stop",
    "--test-distort",
    "--confidence",
]
PREDICT_OPTIONS = ["--np", "--sizes", "--block", "--root", "--hwloc-nodes", "--top"]


class _Launch(Exception):
    """Raised where `run` would look for MPI, carrying the request it built."""


def _size_list() -> st.SearchStrategy[str]:
    return st.lists(number_text(), min_size=0, max_size=4).map(",".join)


# Values each option accepts, so that generated command lines are often accepted too.
VALID = {
    "--np": ["1", "2", "4"],
    "--perturbation": ["0", "3"],
    "--target-rse": ["0.05"],
    "--point-budget": ["0.1", "2"],
    "--min-samples": ["2", "10"],
    "--max-samples": ["100"],
    "--window": ["1", "64"],
    "--warmup": ["0", "5"],
    "--sync-patience": ["10"],
    "--min-valid": ["5"],
    "--max-launches": ["100"],
    "--coll-budget": ["0.5"],
    "--stage-launches": ["8"],
    "--initial-launches": ["2"],
    "--invalid-share": ["0", "0.5", "1"],
    "--window-margin": ["1", "1.5"],
    "--root": ["0", "1"],
    "--block": ["0", "2"],
    "--iterations": ["3"],
    "--cf-max": ["0", "2"],
    "--repeats": ["2"],
    "--in-flight": ["1", "4"],
    "--timeout": ["60", "0.5"],
    "--sizes": ["8,1K", "0", "2147483647", "1MiB,8"],
    "--max-size": ["64K", "1MiB"],
    "--stop": ["a", "b", "rse:0.1"],
    "--test-distort": ["1:0.001:1e-4"],
    "--confidence": ["0.95"],
    "--procs": ["2", "4"],
    "--hwloc-nodes": ["1", "2"],
    "--top": ["3"],
}


def _value(option: str) -> st.SearchStrategy[str]:
    if option == "--sizes":
        hostile = st.one_of(_size_list(), number_text())
    elif option == "--stop":
        hostile = number_text().map(lambda x: f"rse:{x}")
    elif option == "--test-distort":
        hostile = st.lists(number_text(), min_size=1, max_size=4).map(":".join)
    else:
        hostile = number_text()
    valid = st.sampled_from(VALID.get(option, ["1"]))
    return st.one_of(hostile, valid, valid)


def _options(names: list[str]) -> st.SearchStrategy[list[str]]:
    def pair(option: str) -> st.SearchStrategy[list[str]]:
        # "--flag=VALUE" lets a value that starts with '-' reach the option's own check.
        return _value(option).flatmap(lambda v: st.sampled_from([[option, v], [f"{option}={v}"]]))

    return (
        st.lists(st.sampled_from(names), min_size=1, max_size=2, unique=True)
        .flatmap(lambda chosen: st.tuples(*[pair(o) for o in chosen]))
        .map(lambda pairs: [word for p in pairs for word in p])
    )


def _check_launch(request: dict) -> None:
    """What `run` would have launched: bounded, finite numbers only."""
    assert 1 <= request["np"] <= limits.MAX_RANKS
    assert 0 < request["timeout_s"] <= limits.MAX_COMMAND_S
    assert all(math.isfinite(x) for x in harness.numbers(request)), request
    for key in ("sizes", "coll_sizes", "loggp_sizes"):
        sizes = request["engine"].get(key)
        if sizes is not None:
            assert sizes and all(0 <= s <= limits.MAX_MESSAGE_BYTES for s in sizes), request


def _run_until_launch(store: Path, name: str, argv: list[str]) -> harness.Outcome | None:
    """Run `commscope run ARGV` up to the MPI look-up; None when it got there (and passed)."""
    built: list = []
    original = run_cmd.build_request

    def keep(args):
        built.append(original(args))
        return built[-1]

    def launch(name_or_path):
        raise _Launch

    with (
        mock.patch("commscope.cli.run_cmd.build_request", keep),
        mock.patch("commscope.jobs.runs.mpi_mod.resolve", launch),
        mock.patch("commscope.measure.hosts.check_resolvable", lambda hosts, where: None),
    ):
        try:
            return harness.call(name, store, "run", *argv)
        except _Launch:
            harness.accepted(name)
            _check_launch(built[-1].to_json())
            return None


@harness.fuzz_settings(300)
@given(
    benchmark=st.sampled_from(["p2p", "coll", "contention", "loggp", "all"]),
    options=_options(RUN_OPTIONS),
)
def test_run_options_are_refused_in_one_line_or_launch_bounded(workdir, benchmark, options):
    outcome = _run_until_launch(
        harness.fresh_store(workdir), "run options", [benchmark, "--quiet", *options]
    )
    if outcome is not None:
        harness.assert_one_line_refusal(outcome)
        assert harness.run_ids(workdir / "store.sqlite") == []


@harness.fuzz_settings(150)
@given(
    op=st.sampled_from(["alltoall", "bcast", "allreduce", "gather"]),
    options=_options(PREDICT_OPTIONS),
)
def test_predict_options_are_refused_in_one_line_or_priced(workdir, op, options):
    model = workdir / "cluster.yaml"
    model.write_text(MODEL)
    argv = ["predict", op, "--cluster", str(model), "--json", *options]
    if "--np" not in " ".join(options):
        argv += ["--np", "4"]
    outcome = harness.call("predict options", harness.fresh_store(workdir), *argv)
    if outcome.code == 0:
        harness.accepted("predict options")
        result = json.loads(outcome.out)
        assert all(p["time_s"] is None or math.isfinite(p["time_s"]) for p in result["predictions"])
    else:
        harness.assert_one_line_refusal(outcome)


def _strict_json(text: str) -> object:
    def refuse(name: str) -> None:
        raise AssertionError(f"{name} in JSON output")

    return json.loads(text, parse_constant=refuse)


@harness.fuzz_settings(120)
@given(
    command=st.sampled_from(["show", "export", "compare", "runs"]),
    ref=st.one_of(number_text(), st.sampled_from(["latest", "1", "2", " 1", "01"])),
)
def test_run_ids_are_refused_in_one_line_or_shown(workdir, command, ref):
    store = workdir / "ids.sqlite"
    if not store.exists():
        harness.call(None, store, "import", "osu", str(FIXTURE), "--label", "one")
    argv = {
        "show": ["show", ref, "--json"],
        "export": ["export", ref, "--format", "json"],
        "compare": ["compare", "1", ref, "--json"],
        "runs": ["show", f"--trim={ref}"],
    }
    outcome = harness.call("run ids", store, *argv[command])
    if outcome.code == 0:
        harness.accepted("run ids")
        if command == "export":
            for line in outcome.out.splitlines():
                _strict_json(line)
    else:  # 1: a well-formed id of no stored run
        harness.assert_one_line_refusal(outcome, codes=(1, 2))


@harness.fuzz_settings(100)
@given(
    label=st.one_of(
        st.text(max_size=30),
        st.text(st.characters(codec="utf-8"), max_size=30),
        st.sampled_from(
            [
                "[/]",
                "[link=x]y[/link]",
                "\x1b[2J",
                "a\nb",
                " ",
                "\udcff",
                "x" * 201,
                ":smile:",
                "\u202e",
            ]
        ),
    )
)
def test_labels_are_refused_in_one_line_or_stored_as_typed(workdir, label):
    store = harness.fresh_store(workdir)
    outcome = harness.call("labels", store, "import", "osu", str(FIXTURE), f"--label={label}")
    if outcome.code != 0:
        harness.assert_one_line_refusal(outcome)
        assert harness.run_ids(store) == []
        return
    harness.accepted("labels")
    shown = harness.call(None, store, "show", "latest")
    assert shown.code == 0 and shown.err == "", shown
    listed = json.loads(harness.call(None, store, "runs", "--json").out)
    assert [r["label"] for r in listed] == [label]


def _hostfile_line() -> st.SearchStrategy[str]:
    name = st.one_of(
        st.sampled_from(["n0", "n1", "n2", "n3", "localhost", "-x", "a;b", ""]),
        st.sampled_from(["n0", "n1", "n2", "n3"]),
        st.text(max_size=8),
    )
    form = st.sampled_from(
        [
            "{n}",
            "{n} slots={v}",
            "{n}:{v}",
            "{n} slots={v} max_slots={v}",
            "rank {v}={n} slot={v}",
            "{n} {v}",
            "# {n}",
        ]
    )
    value = st.one_of(number_text(), st.integers(min_value=0, max_value=9).map(str))
    valid = st.sampled_from(
        ["n0 slots=1", "n1:1", "n2", "rank 0=n0 slot=0", "rank 1=n1 slot=1", "localhost slots=2"]
    )
    hostile = st.tuples(form, name, value).map(lambda t: t[0].format(n=t[1], v=t[2]))
    return st.one_of(hostile, valid, valid)


@harness.fuzz_settings(120)
@given(
    lines=st.lists(_hostfile_line(), min_size=0, max_size=5),
    use=st.sampled_from(["run", "predict --hostfile", "predict --rankfile"]),
)
def test_hostfiles_are_refused_in_one_line_or_used(workdir, lines, use):
    hostfile = workdir / "hosts"
    hostfile.write_text("\n".join(lines) + "\n", errors="surrogateescape")
    store = harness.fresh_store(workdir)
    if use == "run":
        outcome = _run_until_launch(store, "hostfiles", ["p2p", "--hostfile", str(hostfile)])
        if outcome is not None:
            harness.assert_one_line_refusal(outcome)
        return
    model = workdir / "cluster.yaml"
    model.write_text(MODEL)
    flag = use.split()[1]
    outcome = harness.call(
        "hostfiles",
        store,
        "predict",
        "alltoall",
        "--procs",
        "2",
        "--cluster",
        str(model),
        flag,
        str(hostfile),
        "--json",
    )
    if outcome.code == 0:
        harness.accepted("hostfiles")
    else:
        harness.assert_one_line_refusal(outcome)


def _newer_argv(value: str) -> st.SearchStrategy[list[str]]:
    """Where a hostile value goes in the newer commands: a run, a name, an option, a path."""
    return st.sampled_from(
        [
            ["baseline", "create", "b", value],
            ["baseline", "create", "b", "1", f"--max-detection-limit={value}"],
            ["baseline", "delete", value],
            ["check", "--baseline", "nightly", "1", f"--tolerance={value}"],
            ["check", "--baseline", "nightly", "1", f"--junit={value}"],
            ["check", "--baseline", "nightly", "1", f"--prometheus={value}"],
            ["check", "--baseline", "nightly", "1", f"--label={value}"],
            ["topology", value],
            ["topology", "1", "--partial", f"--output={value}"],
            ["topology", "1", "--output=t.conf", f"--merge={value}"],
            ["topology", "1", f"--model={value}"],
            ["report", "1", f"--output={value}"],
            ["compare", "1", "1", f"--output={value}"],
            ["check-store", f"--store={value}"],
            ["undrain", "--dry-run", value],
            ["history", value],
            ["history", value, "--json"],
            ["history", "--changes", value],
            ["history", f'p2p_latency_seconds{{pair="{value}"}}'],
            ["undrain", "--dry-run", f"--recheck-wait={value}"],
        ]
    )


@harness.fuzz_settings(150)
@given(data=st.data())
def test_newer_commands_refuse_hostile_values_in_one_line_and_keep_the_store(
    workdir, monkeypatch, data
):
    from tests.unit.test_switch_groups import NAMES, point, rates, store_run

    monkeypatch.chdir(workdir)  # an accepted relative output lands in the test's folder

    store = workdir / "newer.sqlite"
    if not store.exists():  # a matrix run and a baseline of it, made once
        bw = rates(6, lambda i: i // 3, 100e6, lambda i, j: 25e6)
        points = [point("matrix_bw", a, b, bw[a, b]) for a in range(6) for b in range(6) if a != b]
        store_run(store, points, NAMES)
        store_run(store, points, NAMES)
        harness.call(None, store, "baseline", "create", "nightly", "1", "2")
        harness.call(None, store, "history", "--changes")  # keeps the runs' figures: read-only next
    special = st.sampled_from(
        ["--", "", " ", "\x00", "a\nb", "\x1b[2J", str(store), f"{store}-wal", f"{store}-shm"]
    )
    value = data.draw(st.one_of(special, special, st.text(max_size=12)))
    argv = data.draw(_newer_argv(value))
    before = store.read_bytes()
    outcome = harness.call("newer commands", store, *argv)
    # check's verdicts are 0 to 2 (and kept with the run), its refusals 3 (UNKNOWN); a
    # baseline made or deleted changes the store too. Nothing else may.
    if argv[0] in ("check", "baseline") and outcome.code < (3 if argv[0] == "check" else 1):
        harness.accepted("newer commands")
        return
    if outcome.code == 0:
        harness.accepted("newer commands")
        assert "\x1b" not in outcome.out, (argv, outcome)  # an echo shows ESC escaped
    else:
        harness.assert_one_line_refusal(outcome, codes=(1, 2, 3))
    assert store.read_bytes() == before, (argv, outcome)
