"""A store made from the fixture run, damaged at random, then read, checked and written to.

Damage: bytes flipped anywhere in the file, the file cut short, a page overwritten, a table
dropped, random text written into a JSON column (with or without a matching checksum). No
command but check-store reads the whole file, so damage is met by the commands that read
it. The property: never a traceback; a reading command either exits 0 printing exactly what
the undamaged store printed, or refuses in one line, and it never changes the file;
check-store says ok only when nothing it can see is damaged; a writing command refuses in
one line and leaves the file as it was, or writes: an import (a new run) changes nothing the
old runs read or what check-store finds in them, and a write into run 1 is refused whenever
check-store finds a row of run 1 that does not match its checksum.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from commscope.data.store import Store
from commscope.errors import StoreError
from tests.damaged_stores import PAGE, fixture_store, set_column
from tests.fuzz import harness

OSU = Path(__file__).parents[1] / "unit" / "fixtures" / "osu_latency.txt"
READERS = (
    ("runs", "--json"),
    ("show", "1"),
    ("show", "2", "--json"),
    ("export", "1"),
    ("compare", "1", "2"),
)
CHECK = ("check-store", "--json")
IMPORT = ("import", "osu", str(OSU), "--label", "new", "--nranks", "2")
INTO_RUN_1 = ("(Store.set_run_data into run 1)",)  # no command writes into a complete run
JSON_COLUMNS = (
    ("runs", "request_json", 2),
    ("runs", "header_json", 2),
    ("segments", "argv_json", 2),
    ("segments", "header_json", 1),
    ("segments", "end_json", 2),
    ("points", "record_json", 3),
    ("points", "record_json", 9),
    ("run_data", "data_json", 1),
)
TABLES = ("schema_version", "runs", "segments", "points", "run_data")
_TEMPLATES: dict[Path, tuple[bytes, dict[tuple[str, ...], str]]] = {}


def _template(folder: Path) -> tuple[bytes, dict[tuple[str, ...], str]]:
    """The undamaged store's bytes and what each command printed from it, made once."""
    if folder not in _TEMPLATES:  # made where the damaged copies go: outputs name the path
        store = fixture_store(folder / "work" / "store.sqlite")
        printed = {argv: harness.call(None, store, *argv).out for argv in (*READERS, CHECK)}
        _TEMPLATES[folder] = (store.read_bytes(), printed)
    return _TEMPLATES[folder]


def _damaged_copy(folder: Path) -> Path:
    work = folder / "work"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir()
    store = work / "store.sqlite"  # the template's name, so outputs can be compared
    store.write_bytes(_template(folder)[0])
    return store


def _flip(store: Path, flips: list[tuple[float, int]]) -> None:
    data = bytearray(store.read_bytes())
    for where, mask in flips:
        data[int(where * len(data))] ^= mask
    store.write_bytes(bytes(data))


def _structural(store: Path, damage: tuple[str, Any, Any]) -> None:
    kind, a, b = damage
    data = store.read_bytes()
    if kind == "truncate":  # at least a byte stays: an empty file is a new store, not damage
        store.write_bytes(data[: max(1, int(a * len(data)))])
    elif kind == "page":
        page = int(a * (len(data) // PAGE)) * PAGE
        store.write_bytes(data[:page] + (b * PAGE)[:PAGE] + data[page + PAGE :])
    else:
        conn = sqlite3.connect(store)
        conn.execute(f"DROP TABLE {a}")
        conn.commit()
        conn.close()


def _run(name: str, store: Path, argv: tuple[str, ...], exact: bool = True) -> None:
    """Run one command on the damaged ``store`` and check what it may do.

    ``exact``: a reader that exits 0 prints what the undamaged store printed. Not so for a
    value sealed with a matching checksum, as if commscope had written it: that is what the
    store holds, and readers refuse it only when it has the wrong shape.
    """
    before = store.read_bytes()
    printed = _template(store.parents[1])[1]
    if argv == INTO_RUN_1:
        _write_into_run_1(name, store)
        return
    if argv == IMPORT:
        _check_import(name, store)
        return
    outcome = harness.call(name, store, *argv)
    assert store.read_bytes() == before, (argv, outcome)  # readers never change the file
    if argv == CHECK and outcome.err == "":
        report = json.loads(outcome.out)
        assert outcome.code == (0 if report["ok"] else 2), outcome  # CRITICAL when damaged
        assert report["ok"] == (outcome.out == printed[CHECK]) or not exact, outcome
        harness.accepted(name)
    elif outcome.code == 0:
        assert outcome.err == "" and (outcome.out == printed[argv] or not exact), outcome
        harness.accepted(name)
    else:  # check-store, which monitoring reads, refuses a file it cannot read as UNKNOWN
        harness.assert_one_line_refusal(outcome, codes=(3,) if argv == CHECK else (1,))


def _found(store: Path) -> dict[Any, Any]:
    """What check-store finds in runs 1 and 2 (the file's own problems may change)."""
    outcome = harness.call(None, store, *CHECK)
    if outcome.err:  # it refused the file as a whole
        return {"refused": outcome.err}
    runs = {r["id"]: r for r in json.loads(outcome.out)["runs"]}
    return {run: runs.get(run) for run in (1, 2)}


def _check_import(name: str, store: Path) -> None:
    """An import is refused whole, or adds a run and changes nothing the others read."""
    before = store.read_bytes()
    old = {argv: harness.call(None, store, *argv) for argv in READERS[1:]}
    found = _found(store)
    outcome = harness.call(name, store, *IMPORT)
    if outcome.code != 0:
        harness.assert_one_line_refusal(outcome, codes=(1,))
        assert store.read_bytes() == before, outcome
        return
    harness.accepted(name)
    for argv, was in old.items():
        assert harness.call(None, store, *argv) == was, (argv, outcome)
    assert _found(store) == found, outcome


def _write_into_run_1(name: str, store: Path) -> None:
    """A write into run 1 is refused in one line, file unchanged, when a row of run 1 does
    not match its checksum; when it is accepted it changes nothing run 2 reads."""
    before = store.read_bytes()
    show_2 = harness.call(None, store, "show", "2", "--json")
    found = _found(store)
    run_1 = found.get(1) or {"damaged": []}
    sums = [d for d in run_1["damaged"] if "does not match its checksum" in d]
    harness.COUNTS[name] += 1
    try:
        with Store.open(store) as s:
            s.set_run_data(1, "fuzz", {"written": True})
    except StoreError as err:
        assert "\n" not in str(err) and str(store) in str(err), err
        assert store.read_bytes() == before, err
        return
    assert not sums, f"a write into run 1 was accepted past {sums}"
    harness.accepted(name)
    assert harness.call(None, store, "show", "2", "--json") == show_2


_commands = st.sampled_from((*READERS, CHECK, CHECK, IMPORT, INTO_RUN_1))
_flips = st.lists(
    st.tuples(st.floats(0, 1, exclude_max=True), st.integers(1, 255)), min_size=1, max_size=3
)
_structures = st.one_of(
    st.tuples(st.just("truncate"), st.floats(0, 1, exclude_max=True), st.none()),
    st.tuples(
        st.just("page"), st.floats(0, 1, exclude_max=True), st.binary(min_size=1, max_size=64)
    ),
    st.tuples(st.just("drop"), st.sampled_from(TABLES), st.none()),
)


def _file_damage() -> st.SearchStrategy[tuple[str, Callable[[Path], None]]]:
    """(what, how): flipped bytes, or the file cut, a page overwritten, a table dropped."""
    flips = _flips.map(lambda f: ("store: flipped bytes", lambda path: _flip(path, f)))
    parts = _structures.map(
        lambda d: ("store: cut, overwritten or dropped", lambda path: _structural(path, d))
    )
    return st.one_of(flips, flips, flips, parts)


@harness.fuzz_settings(600)
@given(damage=_file_damage(), argv=_commands)
def test_a_damaged_file_is_read_right_or_refused_in_one_line(workdir, damage, argv):
    name, apply = damage
    store = _damaged_copy(workdir)
    apply(store)
    _run(name, store, argv)


@harness.fuzz_settings(200)
@given(
    cell=st.sampled_from(JSON_COLUMNS),
    text=st.one_of(st.text(max_size=40), st.sampled_from(["[]", "{}", "null", "1", '"x"'])),
    seal=st.booleans(),
    argv=_commands,
)
def test_random_text_in_a_json_column_is_refused_in_one_line(workdir, cell, text, seal, argv):
    store = _damaged_copy(workdir)
    table, column, rowid = cell
    set_column(store, table, column, rowid, text, seal)
    _run("store: text in a JSON column", store, argv, exact=not seal)
