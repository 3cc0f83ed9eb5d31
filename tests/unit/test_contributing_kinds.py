"""CONTRIBUTING.md's "Adding a benchmark kind" table names every file a new kind touches.

The places are found in the code: each kind's module and report template, the registry, the
`commscope run` sub-commands, the summary card's lines, the option sets the CLI declares, the
request and the point counts. Each must be a file of the table (``<kind>`` standing for the
kind's name, or its name and more: ``coll_scaling_section``), and every file the table names
must exist (``<kind>`` read as the worked example, ``loggp``).
"""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import commscope
from commscope import kinds
from commscope.cli import run_kinds, run_request
from commscope.kinds import registry, run_commands
from commscope.measure import engine_options

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = Path(commscope.__file__).resolve().parent  # the installed package, or src/commscope
CONTRIBUTING = ROOT / "CONTRIBUTING.md"
EXAMPLE = "loggp"  # the worked example of the section
FILE = re.compile(r"`((?:src/commscope|engine)/[^`\s]+\.[a-z0-9]+)`")


def table_files(text: str) -> list[str]:
    """The files in the second column of the section's table, in order."""
    section = text.split("## Adding a benchmark kind", 1)[1].split("\n## ", 1)[0]
    rows = [line.split(" | ") for line in section.splitlines() if re.match(r"\| \d+ \|", line)]
    return [f for row in rows for f in FILE.findall(row[1])]


def _file(obj: object) -> str:
    """The object's file as the repository names it (the package may be installed elsewhere)."""
    source = Path(inspect.getsourcefile(obj)).resolve()  # type: ignore[arg-type]
    return f"src/commscope/{source.relative_to(PACKAGE).as_posix()}"


def touched() -> set[tuple[str, str | None]]:
    """(file, the kind it is of, or None when every kind's goes there) for each place."""
    out: set[tuple[str, str | None]] = set()
    for kind in kinds.KINDS:
        module = next(m for m in vars(kinds).values() if getattr(m, "KIND", None) is kind)
        out.add((_file(module), kind.name))
        if isinstance(kind.template, str):
            out.add((f"src/commscope/report/templates/{kind.template}", kind.name))
        for lines in (kind.card_figures, kind.card_warnings):
            if lines is not None:
                out.add((_file(lines), None))
    out |= {(_file(m), None) for m in (registry, run_commands, run_kinds)}
    out.add((_file(run_request.build_request), None))
    out.add((_file(engine_options), None))  # OP_POINTS
    return out


def missing(listed: list[str], places: set[tuple[str, str | None]]) -> list[str]:
    """The places no file of the table stands for."""
    out = []
    for path, kind in sorted(places, key=lambda p: p[0]):
        names = [re.escape(f).replace(re.escape("<kind>"), "\0") for f in listed]
        own = kind and [n.replace("\0", re.escape(kind) + "(_[a-z_]+)?") for n in names]
        if not any(re.fullmatch(n, path) for n in [*names, *(own or [])]):
            out.append(path)
    return out


def test_the_table_names_every_file_a_kind_touches():
    assert missing(table_files(CONTRIBUTING.read_text("utf-8")), touched()) == []


def test_every_file_the_table_names_exists():
    listed = table_files(CONTRIBUTING.read_text("utf-8"))
    assert len(listed) >= 10
    absent = [f for f in listed if not (ROOT / f.replace("<kind>", EXAMPLE)).exists()]
    assert absent == []


def test_a_row_left_out_is_found():
    text = CONTRIBUTING.read_text("utf-8")
    row = next(
        line for line in text.splitlines() if "`src/commscope/report/summary_card.py`" in line
    )
    listed = table_files(text.replace(row + "\n", ""))
    assert missing(listed, touched()) == ["src/commscope/report/summary_card.py"]
    kind_row = next(line for line in text.splitlines() if "`src/commscope/kinds/<kind>.py`" in line)
    listed = table_files(text.replace(kind_row + "\n", ""))
    assert f"src/commscope/kinds/{EXAMPLE}.py" in missing(listed, touched())
