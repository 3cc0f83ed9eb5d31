"""`commscope runs` draws its table itself when it fits: the same text rich would print."""

from __future__ import annotations

import io

import pytest
from rich.console import Console
from rich.table import Table

from commscope.cli import common, runs_cmd

ROWS = [
    ("1", "2026-12-01 16:24", "p2p", "fixture [/] \x1b[31mred", "incomplete", "openmpi", "2", "5"),
    ("22", "2026-12-01 16:25", "import", "日本語のラベル", "complete", "", "None", "24"),
]
TITLE = "runs in store [b].sqlite"


def console(width: int) -> tuple[io.StringIO, Console]:
    """A console as ``common.console()`` makes one for piped output, of ``width`` columns."""
    out = io.StringIO()
    return out, common.console(file=out, width=width)


def by_rich(width: int, title: str, rows: list[tuple[str, ...]]) -> str:
    out, con = console(width)
    table = Table(title=title)
    for column in runs_cmd.COLUMNS:
        table.add_column(column)
    for row in rows:
        table.add_row(*row)
    con.print(table)
    return out.getvalue()


@pytest.mark.parametrize("rows", [ROWS, []], ids=["runs", "no runs"])
def test_a_table_that_fits_is_drawn_as_rich_draws_it(rows: list[tuple[str, ...]]) -> None:
    out, con = console(140)
    assert runs_cmd.draw_fitting(con, TITLE, rows)
    text = out.getvalue()
    assert text == by_rich(140, TITLE, rows)
    assert "\x1b" not in text
    assert "\\x1b[31mred" in text or not rows  # the label's escape is shown, not sent


@pytest.mark.parametrize(
    "width, title", [(40, TITLE), (60, TITLE), (140, f"runs in /{'long/' * 25}store.sqlite")]
)
def test_a_table_or_title_too_wide_is_left_to_rich(width: int, title: str) -> None:
    out, con = console(width)
    assert not runs_cmd.draw_fitting(con, title, ROWS)
    assert out.getvalue() == ""
