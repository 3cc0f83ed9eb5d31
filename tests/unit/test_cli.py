"""CLI contract: one-line errors, exit status 2 for bad input, foreign stores refused."""

from __future__ import annotations

import os
import subprocess

import pytest


@pytest.mark.parametrize(
    "args",
    [
        ["run", "p2p", "--np", "0"],
        ["run", "p2p", "--sizes", "12 parsecs"],
        ["run", "p2p", "--max-size", "-1"],
        ["run", "p2p", "--timer", "sundial"],
        ["run", "nonsense"],
        ["show", "latest", "--format"],
        ["export", "latest", "--format", "xml"],
        ["run", "p2p", "--min-samples", "5", "--max-samples", "3"],
        ["run", "p2p", "--mca", "btl"],
        ["run", "tcp", "--mca", "btl=tcp"],
        ["run", "--resume", "latest", "--mca", "btl=tcp"],
        ["run", "p2p", "--cvar", "CH4_EAGER"],
        ["run", "p2p", "--cvar", "X=\x1b[2J"],
        ["run", "tcp", "--cvar", "X=1"],
        ["run", "--resume", "latest", "--cvar", "X=1"],
    ],
)
def test_bad_arguments_give_one_line_and_exit_2(cli, args):
    out = cli(*args)
    assert out.returncode == 2, out.stderr
    lines = [ln for ln in out.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, out.stderr
    assert "error" in lines[0]
    assert not os.path.exists(cli.store) or os.path.getsize(cli.store) > 0


def test_a_store_that_is_not_ours_is_refused_and_untouched(cli, tmp_path):
    foreign = tmp_path / "notes.sqlite"
    foreign.write_bytes(b"these are my notes, not a database\n" * 10)
    before = foreign.read_bytes()
    out = cli("--store", str(foreign), "runs")
    assert out.returncode != 0
    assert "not a commscope store" in out.stderr and len(out.stderr.strip().splitlines()) == 1
    assert foreign.read_bytes() == before


def test_unknown_run_names_the_fix(cli):
    from commscope.data.store import Store

    Store.open(cli.store).close()  # an empty store: a reading command never makes one
    cli("runs", check=True)
    out = cli("show", "42")
    assert out.returncode != 0
    assert "no run 42" in out.stderr and "commscope runs" in out.stderr


def test_every_command_has_help_with_examples(cli):
    from commscope.cli import SUBCOMMANDS

    for name in SUBCOMMANDS:
        out = cli(name, "--help", check=True)
        assert "examples:" in out.stdout, name


def test_shell_completion_comes_from_the_parser(cli, tmp_path):
    out = cli("completion", "bash", check=True)
    script = tmp_path / "commscope.bash"
    script.write_text(out.stdout)
    checked = subprocess.run(["bash", "-n", str(script)], capture_output=True, text=True)
    assert checked.returncode == 0, checked.stderr  # bash parses it
    for word in ("baseline", "check", "history", "--tolerance", "--prometheus"):
        assert word in out.stdout
    assert "compdef" in cli("completion", "zsh", check=True).stdout
    bad = cli("completion", "fish")
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1
