"""User strings reach the terminal as typed: no rich markup, no raw control characters."""

from __future__ import annotations

from pathlib import Path

import pytest

from commscope.cli import common
from commscope.data.store import Store
from tests import synthetic_runs

FIXTURES = Path(__file__).parent / "fixtures"
MARKUP = "[/]"
ESCAPE = "\x1b[31mred\x1b]0;title\x07\x9b2J"
SHOWN = r"\x1b[31mred\x1b]0;title\x07\x9b2J"


def test_terminal_text_neutralises_c0_c1_and_del_but_keeps_tab_and_newline():
    assert common.terminal_text(ESCAPE) == SHOWN
    assert common.terminal_text("a\tb\nc\x7f\x00\r") == "a\tb\nc\\x7f\\x00\\x0d"
    assert common.terminal_text("ünï €ode [b]") == "ünï €ode [b]"


def test_the_console_prints_markup_and_emoji_codes_literally(capsys):
    from rich.table import Table

    out = common.console()
    out.print(f"label {MARKUP} [bold]x[/bold] :smile: {ESCAPE}")
    table = Table(title=f"runs in {MARKUP}")
    table.add_column(MARKUP)
    table.add_row(ESCAPE)
    out.print(table)
    text = capsys.readouterr().out
    assert f"label {MARKUP} [bold]x[/bold] :smile: {SHOWN}" in text
    assert f"runs in {MARKUP}" in text and SHOWN in text and "\x1b" not in text


@pytest.mark.parametrize("colour", [False, True])
def test_runs_show_and_compare_print_hostile_labels_literally(cli, colour):
    if colour:  # rich then writes its own escape codes: the label's must still be neutralised
        cli.env.update(FORCE_COLOR="1", COLUMNS="400")
    synthetic_runs.store_run(cli.store, MARKUP, with_colls=False)
    synthetic_runs.store_run(cli.store, ESCAPE, with_colls=False)
    outputs = [
        cli("runs", check=True),
        cli("show", "1", check=True),
        cli("show", "2", check=True),
        cli("compare", "1", "2", check=True),
    ]
    for out in outputs:
        assert "\x1b[31m" not in out.stdout and "\x07" not in out.stdout
        assert "\x9b" not in out.stdout and out.stderr == ""
    if not colour:
        assert all("\x1b" not in out.stdout for out in outputs)
    runs, show1, show2, compare = (out.stdout for out in outputs)
    assert MARKUP in runs and "\\x1b[31mred" in runs
    assert f"run 1 '{MARKUP}'" in show1
    assert f"run 2 '{SHOWN}'" in show2
    assert MARKUP in compare and "\\x1b[31mred" in compare


def test_import_and_errors_neutralise_control_characters(cli, tmp_path):
    # A label is refused for its control characters (labels are printable text), and the
    # refusal, naming it, prints none of them raw.
    out = cli("import", "osu", str(FIXTURES / "osu_latency.txt"), "--label", ESCAPE)
    assert out.returncode == 2 and "\x1b" not in out.stderr and "\\x1b" in out.stderr
    assert len(out.stderr.splitlines()) == 1
    out = cli("import", "osu", str(FIXTURES / "osu_latency.txt"), "--label", MARKUP, check=True)
    assert f"'{MARKUP}'" in out.stdout
    missing = tmp_path / "no\x1b[2Jsuch.txt"
    out = cli("import", "osu", str(missing), "--label", "x")
    assert out.returncode != 0 and "\x1b" not in out.stderr
    assert "no\\x1b[2Jsuch.txt" in out.stderr and len(out.stderr.splitlines()) == 1


def test_a_stored_message_is_printed_literally(cli):
    run_id = synthetic_runs.store_run(cli.store, "m", with_colls=False)
    with Store.open(cli.store) as store:
        store.set_run_status(run_id, "incomplete", f"lost [bold]rank[/] 1 {ESCAPE}")
    out = cli("show", str(run_id), check=True)
    assert f"lost [bold]rank[/] 1 {SHOWN}" in out.stdout
