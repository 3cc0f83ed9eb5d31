"""A measured run labelled with rich markup or an escape sequence prints it as typed."""

from __future__ import annotations

import pytest

from tests.conftest import have_mpi, need

pytestmark = pytest.mark.mpi


@pytest.mark.parametrize("label", ["[/]", "\x1b[31mred"])
def test_run_runs_and_show_print_the_label_literally(cli, label):
    need(have_mpi("openmpi"), "openmpi is not installed")
    shown = label.replace("\x1b", "\\x1b")
    run = cli("run", "p2p", "--mpi", "openmpi", "--np", "2", "--sizes", "8,1K", "--ops",
              "pingpong", "--label", label, "--timeout", "120", check=True)
    runs = cli("runs", check=True)
    show = cli("show", "latest", check=True)
    for out in (run, runs, show):
        assert "\x1b" not in out.stdout and "Traceback" not in out.stderr
    assert f"run 1 '{shown}'" in run.stdout and f"run 1 '{shown}'" in show.stdout
    assert shown in runs.stdout
