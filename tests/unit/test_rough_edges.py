"""Rough edges found by fuzzing: each ends with one line naming the fix, and leaves no file."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys

from commscope.data.store import APPLICATION_ID
from tests import synthetic_runs


def _one_line(out: subprocess.CompletedProcess[str], code: int = 1) -> str:
    assert out.returncode == code, out.stderr
    assert len(out.stderr.strip().splitlines()) == 1, out.stderr
    return out.stderr


def test_reading_commands_refuse_a_store_that_does_not_exist(cli, tmp_path):
    typo = tmp_path / "no" / "such.sqlite"
    for command in (["runs"], ["show", "latest"], ["report", "latest", "-o", "-"]):
        out = cli("--store", str(typo), *command)
        text = _one_line(out)
        assert f"no store at {typo}" in text and "--store" in text
    assert not (tmp_path / "no").exists()


def test_a_character_device_is_refused_and_nothing_is_left_beside_it(cli):
    for command in (["runs"], ["run", "p2p", "--sizes", "8"]):
        text = _one_line(cli("--store", os.devnull, *command))
        assert "not a regular file" in text and "choose another --store" in text
    assert not os.path.exists(os.devnull + "-journal")


def test_a_store_marked_ours_without_tables_says_so(cli, tmp_path):
    path = tmp_path / "cut.sqlite"
    with sqlite3.connect(path) as conn:
        conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
        conn.execute("PRAGMA user_version = 1")  # writes the header
    text = _one_line(cli("--store", str(path), "runs"))
    assert "none of its tables" in text and "remove it" in text
    assert "nothing," not in text


def test_report_to_standard_output(cli, tmp_path):
    synthetic_runs.store_run(cli.store, "to stdout", with_colls=False)
    out = cli("report", "latest", "-o", "-", check=True, cwd=str(tmp_path))
    assert out.stdout.startswith("<!doctype html>") and out.stdout.rstrip().endswith("</html>")
    assert not (tmp_path / "-").exists()


def test_a_closed_pipe_ends_show_quietly(cli):
    synthetic_runs.store_run(cli.store, "piped")
    reader = f"{sys.executable} -c 'import sys; sys.stdin.readline()'"
    shown = " ".join(cli.argv("show", "latest", "--full"))
    # The shell builds the pipe of fixed words; nothing in it comes from input.
    out = subprocess.run(
        ["bash", "-c", f"set -o pipefail; {shown} | {reader}"],
        capture_output=True,
        text=True,
        env=cli.env,
        timeout=120,
    )
    assert out.returncode == 0 and out.stderr == "", out.stderr


def test_ranks_past_the_cores_are_refused_unless_oversubscribed(cli):
    cores = len(os.sched_getaffinity(0))
    cli.env.pop("COMMSCOPE_OVERSUBSCRIBE")
    text = _one_line(cli("run", "p2p", "--np", "99999"), 2)
    assert f"--np 99999: this machine offers {cores} cores" in text and "--oversubscribe" in text
    assert not cli.store.exists()  # refused before the store


def test_the_default_timeout_fits_the_request():
    from commscope.cli import build_parser, run_request

    def request(*argv: str) -> float:
        args = build_parser().parse_args(["run", *argv])
        return run_request.build_request(args).timeout_s

    small = request("p2p", "--sizes", "8", "--ops", "pingpong")
    assert small < 600 and request("p2p") <= run_request.DEFAULT_TIMEOUT_S
    assert request("p2p", "--sizes", "8", "--timeout", "5") == 5
