import json
import os
import sqlite3
import subprocess
from pathlib import Path

import pytest

from commscope.data.record_parse import parse_record
from commscope.data.records import Header, Point
from commscope.data.store import APPLICATION_ID, Store
from commscope.errors import StoreError, UsageError
from tests.conftest import need

FIXTURE = Path(__file__).parent / "fixtures" / "p2p_openmpi.jsonl"
REQUEST = {"ops": ["pingpong", "bw"], "max_bytes": 65536}


def fixture_records() -> tuple[Header, list[Point]]:
    records = [parse_record(line, "fixture") for line in FIXTURE.read_text().splitlines()]
    header = records[0]
    assert isinstance(header, Header)
    return header, [r for r in records if isinstance(r, Point)]


def new_run(store: Store) -> tuple[int, int]:
    run = store.create_run("p2p", "test", "openmpi-4.1.4", "mpirun", 2, REQUEST)
    return run, store.start_segment(run, ["mpirun", "-n", "2", "commscope-engine"])


def side_files(path: Path) -> list[str]:
    return sorted(p.name for p in path.parent.iterdir() if p != path)


def test_new_store_layout(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "dir" / "store.sqlite"
    with Store.open(path):
        pass
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA application_id").fetchone()[0] == APPLICATION_ID
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert conn.execute("SELECT version FROM schema_version").fetchall() == [(4,)]
    columns = {r[1] for r in conn.execute("PRAGMA table_info(points)")}
    assert {"kind", "crc"} <= columns
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert {"schema_version", "runs", "segments", "points", "baselines", "run_figures"} <= tables
    conn.close()
    # The id is in the file header itself, where a foreign-file check can read it.
    assert int.from_bytes(path.read_bytes()[68:72], "big") == APPLICATION_ID


def test_round_trip(tmp_path: Path) -> None:
    header, points = fixture_records()
    path = tmp_path / "store.sqlite"
    with Store.open(path) as store:
        run, seg = new_run(store)
        store.set_header(run, seg, header)
        for point in points:
            store.add_point(run, seg, point)
        store.finish_segment(seg, "complete", None)
        store.set_run_status(run, "complete")
    with Store.open(path) as store:
        info = store.get_run(run)
        assert (info.kind, info.label, info.status) == ("p2p", "test", "complete")
        assert (info.mpi, info.launcher, info.nranks) == ("openmpi-4.1.4", "mpirun", 2)
        assert info.request == REQUEST
        assert info.header == header.raw
        assert info.header_record == header
        assert info.n_points == len(points)
        stored = store.points(run)
        assert stored == sorted(points, key=lambda p: p.key)
        assert [p.raw for p in stored] == [p.raw for p in sorted(points, key=lambda p: p.key)]
        assert store.measured_keys(run) == {p.key for p in points}
        [segment] = store.segments(run)
        assert segment.status == "complete" and segment.ended_unix is not None
        assert segment.argv == ("mpirun", "-n", "2", "commscope-engine")
        assert segment.header == header.raw
        assert segment.header_record == header
        assert segment.n_points == len(points)
        assert [r.id for r in store.list_runs()] == [run]


def test_each_point_is_visible_to_another_connection_at_once(tmp_path: Path) -> None:
    _, points = fixture_records()
    path = tmp_path / "store.sqlite"
    store = Store.open(path)
    run, seg = new_run(store)
    other = sqlite3.connect(path)
    for n, point in enumerate(points, 1):
        store.add_point(run, seg, point)
        count = other.execute("SELECT COUNT(*) FROM points WHERE run_id = ?", (run,)).fetchone()
        assert count[0] == n
        row = other.execute(
            "SELECT median_s, n_samples, record_json FROM points WHERE run_id = ? AND op = ?"
            " AND pair = ? AND bytes = ?",
            (run, *point.key),
        ).fetchone()
        assert row[0] == pytest.approx(point.median_s)
        assert row[1] == point.n_samples
        assert json.loads(row[2]) == point.raw
        with Store.open(path) as reader:  # a second store, e.g. 'commscope runs' meanwhile
            assert point in reader.points(run)
    other.close()
    store.close()


def test_duplicate_point_refused(tmp_path: Path) -> None:
    _, points = fixture_records()
    with Store.open(tmp_path / "s.sqlite") as store:
        run, seg = new_run(store)
        store.add_point(run, seg, points[0])
        with pytest.raises(StoreError, match="already has a point pingpong inter-node 0 B"):
            store.add_point(run, seg, points[0])
        # The failed insert left the store usable and the first point intact.
        store.add_point(run, seg, points[1])
        assert store.measured_keys(run) == {points[0].key, points[1].key}
        # The same key in another run is fine.
        run2, seg2 = new_run(store)
        store.add_point(run2, seg2, points[0])


def test_point_needs_a_segment_of_its_run(tmp_path: Path) -> None:
    _, points = fixture_records()
    with Store.open(tmp_path / "s.sqlite") as store:
        run, _ = new_run(store)
        _, other_seg = new_run(store)
        with pytest.raises(StoreError, match="not part of run"):
            store.add_point(run, other_seg, points[0])


def test_first_header_stays_on_the_run(tmp_path: Path) -> None:
    header, _ = fixture_records()
    raw = dict(header.raw, started_unix=header.started_unix + 60)
    later = parse_record(json.dumps(raw), "resumed")
    assert isinstance(later, Header)
    with Store.open(tmp_path / "s.sqlite") as store:
        run, seg1 = new_run(store)
        store.set_header(run, seg1, header)
        store.finish_segment(seg1, "incomplete", "killed after 120 s")
        seg2 = store.start_segment(run, ["again"])
        store.set_header(run, seg2, later)
        assert store.get_run(run).header_record == header
        segments = store.segments(run)
        assert [s.header_record for s in segments] == [header, later]
        assert segments[0].message == "killed after 120 s"


def test_resolve_run(tmp_path: Path) -> None:
    with Store.open(tmp_path / "s.sqlite") as store:
        with pytest.raises(StoreError, match="no runs yet"):
            store.resolve_run("latest")
        first, _ = new_run(store)
        second, _ = new_run(store)
        assert store.resolve_run("latest") == second
        assert store.resolve_run(str(first)) == first
        assert store.resolve_run(f" {first} ") == first
        with pytest.raises(StoreError) as info:
            store.resolve_run("99")
        assert str(info.value) == f"no run 99 in {store.path}; see 'commscope runs'"
        with pytest.raises(UsageError):
            store.resolve_run("newest")
        with pytest.raises(StoreError, match="no run 99"):
            store.get_run(99)


def test_run_status(tmp_path: Path) -> None:
    with Store.open(tmp_path / "s.sqlite") as store:
        run, _ = new_run(store)
        info = store.get_run(run)
        assert info.status == "running"
        assert info.header is None and info.header_record is None
        store.set_run_status(run, "incomplete", "launcher timed out")
        info = store.get_run(run)
        assert (info.status, info.message) == ("incomplete", "launcher timed out")
        with pytest.raises(ValueError):
            store.set_run_status(run, "done")
        with pytest.raises(StoreError):
            store.set_run_status(run + 1, "complete")


def assert_refused_untouched(path: Path, fragment: str) -> None:
    before = path.read_bytes()
    files_before = side_files(path)
    with pytest.raises(StoreError) as info:
        Store.open(path)
    message = info.value.one_line()
    assert message.startswith(f"{path} is not a commscope store (")
    assert fragment in message
    assert message.endswith("; choose another --store path")
    assert path.read_bytes() == before
    assert side_files(path) == files_before


def test_random_bytes_refused_and_untouched(tmp_path: Path) -> None:
    path = tmp_path / "random.sqlite"
    path.write_bytes(os.urandom(8192))
    assert_refused_untouched(path, "file is not a database")


def test_short_text_file_refused_and_untouched(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("my notes\n")
    assert_refused_untouched(path, "file is not a database")


def test_other_applications_database_refused_and_untouched(tmp_path: Path) -> None:
    path = tmp_path / "other.sqlite"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE runs (id INTEGER PRIMARY KEY, name TEXT)")
    conn.execute("INSERT INTO runs (name) VALUES ('theirs')")
    conn.commit()
    conn.close()
    assert_refused_untouched(path, "application_id 0x0")


def test_other_application_id_refused(tmp_path: Path) -> None:
    path = tmp_path / "other.sqlite"
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA application_id = 1234")
    conn.execute("CREATE TABLE t (x)")
    conn.commit()
    conn.close()
    assert_refused_untouched(path, "application_id 0x4d2")


def test_schema_version_mismatch_refused(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite"
    Store.open(path).close()
    conn = sqlite3.connect(path)
    conn.execute("UPDATE schema_version SET version = 7")
    conn.commit()
    conn.close()
    with pytest.raises(StoreError) as info:
        Store.open(path)
    message = str(info.value)
    assert "schema version 7" in message and "versions 1, 2, 3 and 4" in message
    assert "\n" not in message


def test_empty_file_becomes_a_store(tmp_path: Path) -> None:
    path = tmp_path / "empty.sqlite"
    path.touch()
    with Store.open(path) as store:
        new_run(store)
    with Store.open(path) as store:
        assert len(store.list_runs()) == 1


def test_directory_refused(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="is a directory"):
        Store.open(tmp_path)


def test_a_row_checksum_stays_the_one_earlier_versions_wrote() -> None:
    """Stores written before are read with today's code: the checksum's definition is fixed."""
    from commscope.data.store_seal import row_crc

    columns = [("id", "INTEGER"), ("crc", "INTEGER"), ("label", "TEXT"), ("t", "REAL"),
               ("raw", "BLOB"), ("note", "TEXT")]  # fmt: skip
    row = {"id": 7, "crc": 123, "label": "nightly \u00e9", "t": 1.5e-06, "raw": b"\x00\x01{}",
           "note": None}  # fmt: skip
    assert row_crc(columns, row) == 3170229222  # as commscope 0.1 of 2026-12-01 computed it


def test_damaged_rows_are_reported(tmp_path: Path) -> None:
    from commscope.data.store_schema import COLUMNS
    from commscope.data.store_seal import row_crc

    header, points = fixture_records()
    path = tmp_path / "s.sqlite"
    with Store.open(path) as store:
        run, seg = new_run(store)
        store.add_point(run, seg, points[0])
    conn = sqlite3.connect(path)
    conn.row_factory = sqlite3.Row
    conn.execute("UPDATE runs SET header_json = ?", (json.dumps(points[0].raw),))
    conn.execute("UPDATE points SET record_json = ?", (json.dumps(header.raw),))
    conn.commit()
    with Store.open(path, write=False) as store:
        with pytest.raises(StoreError, match="run 1 .table runs. does not match its checksum"):
            store.get_run(run)
        with pytest.raises(StoreError, match="run 1 point 1 .table points. does not match"):
            store.points(run)
    # Sealed again, as if commscope had written them: the shape is still refused.
    for table in ("runs", "points"):
        for row in conn.execute(f"SELECT rowid AS r, * FROM {table}").fetchall():
            crc = row_crc(COLUMNS[table], row)
            conn.execute(f"UPDATE {table} SET crc = ? WHERE rowid = ?", (crc, row["r"]))
    conn.commit()
    conn.close()
    with Store.open(path, write=False) as store:
        with pytest.raises(StoreError, match="header_json holds a point record, not a header"):
            store.get_run(run)
        with pytest.raises(StoreError, match="holds a header record, not a point"):
            store.points(run)


# What a command reads is checked as it is read; opening reads no row.


def _two_runs(path: Path) -> list[Point]:
    header, points = fixture_records()
    with Store.open(path) as store:
        for _ in range(2):
            run, seg = new_run(store)
            store.set_header(run, seg, header)
            for point in points:
                store.add_point(run, seg, point)
    return points


def _unseal(path: Path, sql: str) -> None:
    conn = sqlite3.connect(path)
    conn.execute(sql)  # a change that leaves the row's checksum as it was
    conn.commit()
    conn.close()


def test_a_damaged_row_is_reported_when_read_and_nothing_is_written_into_its_run(
    tmp_path: Path,
) -> None:
    path = tmp_path / "s.sqlite"
    points = _two_runs(path)
    _unseal(path, "UPDATE points SET median_s = median_s * 2 WHERE run_id = 1 AND bytes = 8")
    before = path.read_bytes()
    with Store.open(path, write=False) as store:  # opening and listing read no point
        assert [r.n_points for r in store.list_runs()] == [len(points)] * 2
        assert store.get_run(1).label == "test"
        assert len(store.points(2)) == len(points)
        with pytest.raises(StoreError, match=r"run 1 point \d+ .table points. does not match"):
            store.points(1)
    with Store.open(path) as store:
        # Every write into run 1 is refused, whole; a new run and run 2 are written.
        for write in (
            lambda: store.add_point(1, 1, points[0]),
            lambda: store.start_segment(1, ["again"]),
            lambda: store.finish_segment(1, "complete"),
            lambda: store.set_run_status(1, "complete"),
            lambda: store.set_run_data(1, "note", {}),
            lambda: store.close_running_segments(1, "closed"),
        ):
            with pytest.raises(StoreError, match="does not match its checksum; nothing was"):
                write()
        assert path.read_bytes() == before
        store.set_run_status(2, "complete")
        run, seg = new_run(store)
        store.add_point(run, seg, points[0])
    with Store.open(path, write=False) as store:
        assert [(r.id, r.status) for r in store.list_runs()] == [
            (1, "running"),
            (2, "complete"),
            (3, "running"),
        ]


def test_listing_runs_decodes_no_json(tmp_path: Path) -> None:
    from commscope.data.store_schema import COLUMNS
    from commscope.data.store_seal import row_crc

    path = tmp_path / "s.sqlite"
    _two_runs(path)
    conn = sqlite3.connect(path)
    conn.row_factory = sqlite3.Row
    conn.execute("UPDATE runs SET header_json = '[1]' WHERE id = 1")
    row = conn.execute("SELECT * FROM runs WHERE id = 1").fetchone()
    conn.execute("UPDATE runs SET crc = ? WHERE id = 1", (row_crc(COLUMNS["runs"], row),))
    conn.commit()
    conn.close()
    with Store.open(path, write=False) as store:
        first, second = store.list_runs()  # sealed, so the rows are sound; no header read
        assert second.header is not None and first.request == REQUEST
        with pytest.raises(StoreError, match="run 1 header_json is not a JSON object"):
            _ = first.header
        with pytest.raises(StoreError, match="run 1 header_json is not a JSON object"):
            store.get_run(1)  # decodes both at once


def test_a_runs_points_are_read_through_one_index_and_counted_through_another(
    tmp_path: Path,
) -> None:
    from commscope.data import store as store_module
    from commscope.data import store_rows

    path = tmp_path / "s.sqlite"
    _two_runs(path)
    conn = sqlite3.connect(path)

    def index(sql: str, *params: object) -> str:
        plan = " ".join(r[3] for r in conn.execute(f"EXPLAIN QUERY PLAN {sql}", params))
        return next(word for word in plan.split() if word.startswith(("points_", "sqlite_")))

    read = store_module._POINTS_QUERY
    assert index(read.format(""), 1) in ("points_key", "sqlite_autoindex_points_1")
    assert index(read.format(" AND kind = ?"), 1, "point") in (
        "points_key",
        "sqlite_autoindex_points_1",
    )
    assert index(store_rows._COUNT, 1) == "points_kind"
    assert index(f"{store_rows._COUNT} AND kind = ?", 1, "point") == "points_kind"
    conn.close()


def test_points_written_while_a_run_is_read_are_not_taken_for_damage(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite"
    points = _two_runs(path)
    extra = parse_record(
        json.dumps(dict(points[0].raw, bytes=12345, bytes_per_sample=12345)), "test"
    )
    with Store.open(path, write=False) as reader, Store.open(path) as writer:
        agree = reader._points_agree

        def meanwhile(*args: object) -> None:
            writer.add_point(1, 1, extra)  # between reading the points and counting them
            agree(*args)  # type: ignore[arg-type]

        reader._points_agree = meanwhile  # type: ignore[method-assign]
        assert len(reader.points(1)) == len(points)  # one snapshot: the count agrees
        reader._points_agree = agree  # type: ignore[method-assign]
        assert len(reader.points(1)) == len(points) + 1


def test_root_s_default_store_under_sudo_is_refused_with_the_user_s_own(cli, tmp_path):
    """`sudo commscope run matrix --drain` must not measure into root's store unnoticed."""
    need(os.geteuid() == 0, "root, as sudo gives, is needed")
    env = {k: v for k, v in cli.env.items() if k not in ("COMMSCOPE_STORE", "XDG_DATA_HOME")}
    env |= {"HOME": "/root", "SUDO_USER": "nobody"}
    out = subprocess.run(cli.argv("runs"), env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode != 0 and "under sudo the store would be root's" in out.stderr
    assert "--store /nonexistent/.local/share/commscope/store.sqlite" in out.stderr  # nobody's
    assert len(out.stderr.strip().splitlines()) == 1
    # Named on purpose, root's store is used.
    mine = tmp_path / "s.sqlite"
    Store.open(mine).close()
    ok = subprocess.run(
        cli.argv("--store", str(mine), "runs"), env=env, capture_output=True, text=True, timeout=60
    )
    assert ok.returncode == 0, ok.stderr
