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


def _leaves(prefix: list[str], parser):
    """Every command's (argv prefix, parser), actions and kinds included."""
    import argparse

    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subs:
        yield prefix, parser
        return
    for name, child in subs[0].choices.items():
        yield from _leaves([*prefix, name], child)


def test_an_option_given_as_double_dash_gets_that_text_never_an_empty_list():
    # argparse before Python 3.13 drops '--' from an option's value (--label=--) and hands
    # the option an empty list, which its checks then index or strip: a traceback.
    import argparse

    from commscope.cli import build_parser

    checked = 0
    for prefix, parser in _leaves([], build_parser()):
        for action in parser._actions:
            if not action.option_strings or action.nargs not in (None, "?"):
                continue
            if action.option_strings[0] in ("-h", "--help", "--version"):
                continue
            try:
                args, _ = parser.parse_known_args([f"{action.option_strings[-1]}=--"])
            except SystemExit:
                continue  # refused by the option's own check, in one line (its type)
            value = getattr(args, action.dest)
            if isinstance(action, argparse._AppendAction):  # --mca: a list of what was given
                value = value[-1]
            assert not isinstance(value, list), (prefix, action.option_strings, value)
            checked += 1
    assert checked > 100  # every command's options, not a few


@pytest.mark.parametrize(
    "argv",
    [
        ["show", "latest", "--trim=--"],
        ["baseline", "create", "x", "1", "--max-detection-limit=--"],
        ["check", "--baseline", "x", "1", "--prometheus=--"],
        ["history", "--last=--", "p2p_latency_seconds"],
    ],
)
def test_double_dash_values_are_refused_in_one_line(tmp_path, argv):
    from tests.fuzz.harness import assert_one_line_refusal, call
    from tests.synthetic_runs import store_run

    store = tmp_path / "s.sqlite"
    store_run(store, "a", with_colls=False)
    out = call(None, store, *argv)
    assert_one_line_refusal(out, codes=(3,) if argv[0] == "check" else (2,))
    assert "'--'" in out.err or " --:" in out.err, out


def test_an_argument_holding_a_nul_byte_is_refused_before_anything_runs(tmp_path):
    # No shell passes a NUL, but a caller's list can; every path, name and value refuses it.
    from commscope import safe_write
    from commscope.errors import UsageError
    from tests.fuzz.harness import assert_one_line_refusal, call

    store = tmp_path / "s.sqlite"
    for argv in (
        ("report", "latest", "-o", "a\x00b.html"),
        ("check-store", "--store", "x\x00"),
        ("run", "p2p", "--hostfile", "hosts\x00"),
        ("--store", "s\x00", "runs"),
    ):
        out = call(None, store, *argv)
        # check-store is read by monitoring: its refusals are UNKNOWN (3).
        assert_one_line_refusal(out, codes=(3,) if "check-store" in argv else (2,))
        assert "holds a NUL byte" in out.err and "\\x00" in out.err, out
    with pytest.raises(UsageError, match="holds a NUL byte"):
        safe_write.check_target("a\x00b", "-o")
    assert list(tmp_path.iterdir()) == []
