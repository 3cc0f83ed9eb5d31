"""A measured run labelled with rich markup prints it as typed; control characters are refused."""

from __future__ import annotations

import json

import pytest

from tests.conftest import have_mpi, need

pytestmark = pytest.mark.mpi


def test_run_runs_and_show_print_a_markup_label_literally(cli):
    need(have_mpi("openmpi"), "openmpi is not installed")
    label = "[/]"
    run = cli(
        "run",
        "p2p",
        "--mpi",
        "openmpi",
        "--np",
        "2",
        "--sizes",
        "8,1K",
        "--ops",
        "pingpong",
        "--label",
        label,
        "--timeout",
        "120",
        check=True,
    )
    runs = cli("runs", check=True)
    show = cli("show", "latest", check=True)
    for out in (run, runs, show):
        assert "\x1b" not in out.stdout and "Traceback" not in out.stderr
    assert f"run 1 '{label}'" in run.stdout and f"run 1 '{label}'" in show.stdout
    assert label in runs.stdout


def test_a_label_with_an_escape_sequence_is_refused_before_anything_runs(cli):
    out = cli("run", "p2p", "--np", "2", "--label", "\x1b[31mred", "--timeout", "120")
    assert out.returncode == 2 and len(out.stderr.splitlines()) == 1
    assert "\x1b" not in out.stderr and "\\x1b" in out.stderr and "--label" in out.stderr
    assert not cli.store.exists() or json.loads(cli("runs", "--json").stdout) == []
