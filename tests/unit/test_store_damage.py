"""Damaged, read-only and version 1 stores through the real CLI: one line, never a traceback.

Damage is reported by the command that reads it, whatever the store's size: a reader of the
damaged run refuses in one line naming it, a reader of anything else prints what it printed
before, a write into the damaged run is refused with the file left as it was, a new run is
written beside the damage, and ``check-store`` finds it all.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import sqlite3
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from commscope.cli import main
from commscope.data.store import Store
from tests.conftest import need
from tests.damaged_stores import (
    PAGE,
    drop_index_entry,
    fixture_run,
    fixture_store,
    flip_text,
    root_page,
    set_column,
    v1_store,
)

OSU = Path(__file__).parent / "fixtures" / "osu_latency.txt"
IMPORT = ("import", "osu", str(OSU), "--label", "x", "--nranks", "2")
RESUME = ("run", "--resume", "1")  # a write into run 1 (the store fixture stops it first)
READERS = (
    ("runs",),
    ("runs", "--json"),
    ("show", "1"),
    ("export", "1"),
    ("compare", "1", "2"),
)
WRITERS = (IMPORT, RESUME)
OF_RUN_1 = (("show", "1"), ("export", "1"), ("compare", "1", "2"))  # they read run 1's rows
LISTING = (("runs",), ("runs", "--json"))  # they read every run's row, no segment or point
OF_RUN_2 = (("show", "2"), ("export", "2"))


def commscope(store: Path, *argv: str) -> tuple[int, str, str]:
    """Run the CLI in this process; an exception other than SystemExit escapes."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["--store", str(store), *argv])
    return code, out.getvalue(), err.getvalue()


def assert_one_line(err: str, *fragments: str) -> str:
    lines = err.splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    return lines[0]


def printed(store: Path) -> dict[tuple[str, ...], tuple[int, str, str]]:
    """What each reader prints from the store as it is."""
    return {argv: commscope(store, *argv) for argv in (*LISTING, *OF_RUN_1, *OF_RUN_2)}


def damaged_runs(store: Path) -> dict[int | str, list[str]]:
    """What ``check-store`` finds damaged, run by run and in the file (key "file")."""
    code, out, _ = commscope(store, "check-store", "--json")
    report = json.loads(out)
    assert code == 2 and not report["ok"], out
    return {"file": report["problems"], **{run["id"]: run["damaged"] for run in report["runs"]}}


def assert_refused_by_all(store: Path, *fragments: str) -> None:
    """Damage every command meets: each refuses in one line, and nothing changes the file."""
    before = store.read_bytes()
    for argv in READERS + WRITERS:
        code, _, err = commscope(store, *argv)
        assert code == 1, (argv, err)
        assert_one_line(err, str(store), *fragments)
        assert store.read_bytes() == before, argv
    code, out, _ = commscope(store, "check-store")
    assert code == 2 and "damaged: " in out, out
    assert store.read_bytes() == before


def assert_reported_where_read(
    store: Path,
    sound: dict[tuple[str, ...], tuple[int, str, str]],
    refused: dict[tuple[str, ...], str],
    write: str,
) -> None:
    """Damage in run 1: refused by the readers in ``refused`` and by a write into run 1.

    Each reader in ``refused`` exits 1 with one line naming the damage (its fragment), a
    write into run 1 likewise (``write``) and changes nothing. ``sound``: what the readers
    printed before the damage, which every other reader still prints. A new run is written
    beside the damage and changes nothing the others read; check-store finds run 1 damaged.
    """
    before = store.read_bytes()
    for argv, fragment in (*refused.items(), (RESUME, write)):
        code, _, err = commscope(store, *argv)
        assert code == 1, (argv, err)
        assert_one_line(err, f"{store} is damaged: ", fragment)
    assert store.read_bytes() == before  # the write was refused whole
    for argv in sound.keys() - refused.keys():
        assert commscope(store, *argv) == sound[argv], argv
    assert store.read_bytes() == before
    found = damaged_runs(store)
    assert (found[1] or found["file"]) and not found[2], found
    code, out, err = commscope(store, *IMPORT)
    assert (code, err) == (0, ""), err
    assert "as run 3 " in out, out
    for argv in OF_RUN_2:
        assert commscope(store, *argv) == sound[argv], argv
    for argv in refused:
        assert commscope(store, *argv)[0] == 1, argv
    assert damaged_runs(store) == found | {3: []}


@pytest.fixture
def store(tmp_path: Path) -> Path:
    """The fixture store with run 1 stopped, so that resuming it writes into it."""
    path = fixture_store(tmp_path / "store.sqlite")
    with Store.open(path) as s:
        s.set_run_status(1, "incomplete", "stopped by the test")
    return path


def test_a_sound_store_reads_and_checks_ok(store: Path) -> None:
    for argv in READERS:
        code, out, err = commscope(store, *argv)
        assert code == 0 and err == "", (argv, err)
    code, out, _ = commscope(store, "check-store")
    assert code == 0, out
    assert "run 1 (fixture 1): rows ok; readable: 1 run row, 1 segment, 5 points, 1 data" in out
    assert out.splitlines()[-1] == "ok: nothing is damaged"
    code, out, _ = commscope(store, "check-store", "--json")
    report = json.loads(out)
    assert code == 0 and report["ok"] and report["schema_version"] == 4
    assert [r["readable"] for r in report["runs"]] == [
        {"run row": 1, "segment": 1, "point": 5, "data": 1}
    ] * 2


# Run 1's first point (run 2's samples differ); "rse" -> "rsd" is still JSON, and only the
# checksum can tell (the stop reason is not checked when a record is read back).
FIRST_POINT = b'"samples_s": [1.7e-05, 1.6e-05, 1.8e-05], "stop": "rse"'


def test_a_flipped_byte_in_a_record_is_caught_by_its_checksum(store: Path) -> None:
    sound = printed(store)
    flip_text(store, FIRST_POINT, len(FIRST_POINT) - 2)
    code, out, _ = commscope(store, "check-store", "--json")
    report = json.loads(out)
    damaged = [r for r in report["runs"] if r["damaged"]]
    assert code == 2 and len(damaged) == 1 and damaged[0]["readable"]["point"] == 4
    assert "(table points) does not match its checksum" in damaged[0]["damaged"][0]
    what = "run 1 point 1 (table points) does not match its checksum"
    assert_reported_where_read(
        store,
        sound,
        {argv: f"{what}; the other runs can still be read" for argv in OF_RUN_1},
        f"{what}; nothing was written to run 1",
    )


def test_an_index_that_lost_a_point_is_caught_by_the_other_index(store: Path) -> None:
    # Run 1's points are read through the key index and counted through the kind index;
    # the listing counts them per run through the kind index and in all through another.
    sound = printed(store)
    drop_index_entry(store, "points_kind", "(run_id, kind)", rowid=3)
    run_1 = "disagree with the index that counts them (5 read, 4 counted)"
    listing = "the indexes of its points disagree (9 counted run by run, 10 in all)"
    assert_reported_where_read(
        store,
        sound,
        {**dict.fromkeys(OF_RUN_1, run_1), **dict.fromkeys(LISTING, listing)},
        run_1,
    )
    code, out, _ = commscope(store, "check-store")
    assert "SQLite integrity check: row 3 missing from index points_kind" in out, out


@pytest.mark.parametrize("table", ["runs", "points"])
def test_a_page_of_garbage_is_refused_by_the_commands_that_read_it(store: Path, table: str) -> None:
    sound = printed(store)
    page = root_page(store, table)
    data = bytearray(store.read_bytes())
    data[(page - 1) * PAGE : page * PAGE] = bytes(range(256)) * (PAGE // 256)
    store.write_bytes(bytes(data))
    if table == "runs":  # every command reads the runs
        assert_refused_by_all(store, "is damaged", "malformed")
    else:  # listing counts points through an index and reads none
        for argv in LISTING:
            assert commscope(store, *argv) == sound[argv], argv
        before = store.read_bytes()
        for argv in (*OF_RUN_1, *OF_RUN_2, *WRITERS):
            code, _, err = commscope(store, *argv)
            assert code == 1, (argv, err)
            assert_one_line(err, f"{store} is damaged", "malformed")
        assert store.read_bytes() == before
    code, out, _ = commscope(store, "check-store")
    assert "SQLite integrity check: " in out, out
    assert "restore it from a backup" in out.splitlines()[-1]


def test_a_dropped_table_is_named(store: Path) -> None:
    conn = sqlite3.connect(store)
    conn.execute("DROP TABLE segments")
    conn.commit()
    conn.close()
    assert_refused_by_all(store, "is damaged: no segments table")


@pytest.mark.parametrize("seal", [False, True], ids=["unsealed", "sealed"])
@pytest.mark.parametrize(
    "table, column, rowid, value, fragment",
    [
        ("points", "record_json", 3, '{"type": "point", "op": ', "point 3 record_json is not JSON"),
        ("runs", "request_json", 1, "[1, 2", "run 1 request_json is not JSON"),
        ("runs", "header_json", 1, "{'a': 1}", "run 1 header_json is not JSON"),
        ("segments", "end_json", 1, "{}}", "segment 1 end_json is not JSON"),
        ("runs", "request_json", 1, "[1, 2]", "request_json is not a JSON object"),
        ("segments", "argv_json", 1, '{"a": 1}', "argv_json is not a JSON array"),
        ("segments", "end_json", 1, '{"type": "end"}', "end_json is not a valid record"),
        ("segments", "end_json", 1, "NaN", "end_json is not a JSON object"),
        ("points", "record_json", 2, '{"type": "end", "points": 1, "elapsed_s": 1}', "holds a"),
    ],
)
def test_bad_json_is_one_line_naming_the_row(
    store: Path, table: str, column: str, rowid: int, value: str, fragment: str, seal: bool
) -> None:
    sound = printed(store)
    set_column(store, table, column, rowid, value, seal)
    # Unsealed, the checksum catches it first; sealed, only decoding the value can.
    expected = fragment if seal else f"(table {table}) does not match its checksum"
    code, out, _ = commscope(store, "check-store")
    assert code == 2 and expected in out, out
    assert "run 2 (fixture 2): rows ok" in out
    if not seal:
        # A run's row is read by every command naming the run and by the listing.
        readers = {"runs": (*LISTING, *OF_RUN_1), "segments": (("show", "1"),)}
        refused = dict.fromkeys(readers.get(table, OF_RUN_1), expected)
        assert_reported_where_read(store, sound, refused, expected)
        return
    # A sealed row is vouched for by its checksum: writers check checksums, they do not
    # decode the rows (reading commands and check-store do).
    code, _, err = commscope(store, "show", "1")
    assert code == 1
    assert_one_line(err, f"{store} is damaged: run 1", expected, "other runs can still be read")
    assert commscope(store, "show", "2") == sound[("show", "2")]  # the other run is intact


def test_a_traceback_never_reaches_a_real_process(store: Path, cli) -> None:
    flip_text(store, FIRST_POINT, len(FIRST_POINT) - 2)
    for argv in (("show", "1"), ("report", "1", "-o", str(store.parent / "r.html"))):
        out = cli("--store", str(store), *argv)
        assert out.returncode == 1, out.stderr
        assert_one_line(out.stderr, "is damaged")
    assert not (store.parent / "r.html").exists()


# Read-only stores: root ignores file modes, so root makes them immutable instead.


@contextlib.contextmanager
def read_only(path: Path) -> Iterator[None]:
    """Make ``path`` (a file or a folder) unwritable for the duration of the block."""
    if os.geteuid() == 0:
        need(shutil.which("chattr") is not None, "chattr, to make a file immutable as root")
        done = subprocess.run(["chattr", "+i", str(path)], capture_output=True, text=True)
        need(done.returncode == 0, f"chattr +i on {path}'s file system: {done.stderr.strip()}")
        try:
            yield
        finally:
            subprocess.run(["chattr", "-i", str(path)], check=True)
    else:
        mode = path.stat().st_mode
        path.chmod(0o555 if path.is_dir() else 0o444)
        try:
            yield
        finally:
            path.chmod(mode)


@pytest.mark.parametrize("what", ["file", "folder"])
def test_a_read_only_store_is_read_and_writers_say_how_to_fix_it(tmp_path: Path, what: str):
    store = fixture_store(tmp_path / "ro" / "store.sqlite")
    expected = {argv: commscope(store, *argv)[1] for argv in READERS}
    before = store.read_bytes()
    with read_only(store if what == "file" else store.parent):
        for argv in READERS:
            code, out, err = commscope(store, *argv)
            assert (code, err) == (0, "") and out == expected[argv], argv
        assert commscope(store, "check-store")[0] == 0
        for argv in WRITERS:
            code, _, err = commscope(store, *argv)
            assert code == 1
            line = assert_one_line(err, f"{store} is read-only (")
            assert "chattr -i" in line and "reading commands work as it is" in line
    assert store.read_bytes() == before
    if what == "folder":  # immutable=1 left no -wal or -shm behind
        assert sorted(p.name for p in store.parent.iterdir()) == ["store.sqlite"]


def test_unmerged_writes_in_a_read_only_folder_are_named(tmp_path: Path) -> None:
    folder = tmp_path / "ro"
    store = fixture_store(tmp_path / "store.sqlite")
    folder.mkdir()
    conn = sqlite3.connect(store)  # an uncheckpointed write stays in store.sqlite-wal
    conn.execute("PRAGMA wal_autocheckpoint = 0")
    conn.execute("UPDATE runs SET label = 'changed' WHERE id = 2")
    conn.commit()
    for suffix in ("", "-wal"):
        shutil.copy(f"{store}{suffix}", folder / f"store.sqlite{suffix}")
    conn.close()
    with read_only(folder):
        code, _, err = commscope(folder / "store.sqlite", "runs")
    assert code == 1
    assert_one_line(err, "writes not yet merged from store.sqlite-wal", "folder is read-only")


# Version 1 stores: read as they are, brought to version 2 by the first writing command.


@pytest.mark.parametrize("with_end_json", [True, False], ids=["v1", "v1-before-end-records"])
def test_a_version_1_store_is_read_as_it_is_then_migrated_by_a_writer(
    tmp_path: Path, with_end_json: bool
) -> None:
    store = v1_store(tmp_path / "old.sqlite", with_end_json)
    _, points, end = fixture_run()
    before = store.read_bytes()
    code, out, err = commscope(store, "export", "1")
    assert (code, err) == (0, ""), err
    with Store.open(store, write=False) as s:
        assert s.points(1) == sorted(points, key=lambda p: p.key)
        assert s.records(1, "coll") == []
        assert s.segments(1)[0].end == (end.raw if with_end_json else None)
    assert store.read_bytes() == before  # reading changed nothing
    code, _, err = commscope(store, *WRITERS[0])
    assert (code, err) == (0, ""), err
    conn = sqlite3.connect(store)
    assert conn.execute("SELECT version FROM schema_version").fetchall() == [(4,)]
    kinds = conn.execute("SELECT run_id, kind, COUNT(*) FROM points GROUP BY 1, 2").fetchall()
    conn.close()
    assert kinds == [(1, "point", 5), (2, "point", 24)]
    with Store.open(store, write=False) as s:
        assert s.points(1) == sorted(points, key=lambda p: p.key)
        assert s.get_run(1).label == "old"
    assert commscope(store, "export", "1")[1] == out
    code, report, _ = commscope(store, "check-store", "--json")
    assert code == 0, report


def test_a_damaged_version_1_store_is_not_migrated(tmp_path: Path) -> None:
    store = v1_store(tmp_path / "old.sqlite")
    conn = sqlite3.connect(store)
    conn.execute('UPDATE points SET record_json = \'{"type": "po\' WHERE id = 4')
    conn.commit()
    conn.close()
    before = store.read_bytes()
    code, _, err = commscope(store, *WRITERS[0])
    assert code == 1
    assert_one_line(
        err, "cannot be brought to the current store version: run 1 point 4 record_json"
    )
    assert store.read_bytes() == before
    code, out, _ = commscope(store, "check-store")
    assert code == 2 and "run 1 point 4 record_json is not JSON" in out, out


@pytest.mark.parametrize(
    "damage",
    [
        "DELETE FROM runs WHERE id = 1",  # the row lost, its points kept
        "UPDATE runs SET id = 7 WHERE id = 1",  # its id changed: it fails its checksum
        "DELETE FROM runs",  # every run's row lost
    ],
)
def test_a_run_whose_row_is_lost_is_named_as_damage_not_as_absent(
    store: Path, tmp_path: Path, damage: str
) -> None:
    assert commscope(store, "baseline", "create", "nightly", "2")[0] == 0
    conn = sqlite3.connect(store)
    conn.execute(damage)
    conn.commit()
    conn.close()
    before = store.read_bytes()
    for argv, status in (
        (("show", "1"), 1),
        (("export", "1"), 1),
        (("report", "1", "-o", str(tmp_path / "r.html")), 1),
        (("compare", "1", "2"), 1),
        (("baseline", "create", "b", "1"), 1),
        (("check", "--baseline", "nightly", "1"), 3),
    ):
        code, _, err = commscope(store, *argv)
        assert code == status, (argv, err)
        assert_one_line(err, f"{store} is damaged: the runs table has no row for run 1")
    assert store.read_bytes() == before and not (tmp_path / "r.html").exists()
    # check-store names the lost row once, not once for each of its rows.
    code, out, _ = commscope(store, "check-store")
    lines = out.splitlines()
    assert code == 2 and len(lines) == len(set(lines)), out
    lost = [line for line in lines if line.startswith("  damaged: rows of run")]
    assert lost[0].startswith(
        "  damaged: rows of run 1 (1 in segments, 5 in points, 1 in run_data)"
    )
    assert len(lost) == (2 if damage == "DELETE FROM runs" else 1), out
