"""The store's tables, version by version, and the migrations from versions 1, 2 and 3.

Version 4 adds the ``run_figures`` table: each complete run's figure values (the figures a
check judges, :mod:`commscope.kinds.figures`), one row per run and figure name, so that a
history reads figures rather than raw points (:mod:`commscope.data.store_figures`).
Version 3 adds the ``baselines`` table (one row per named baseline, its figures as JSON:
``commscope baseline``). Version 2 adds to ``points`` the record's ``kind`` (its JSON
``type``: point, coll, contention, stream, linpack, loggp), so one kind is read without
decoding the others, and to every table a ``crc`` column sealing the row
(:mod:`commscope.data.store_seal`). Columns appended by ``ALTER TABLE`` land last, so a
migrated store and a new one have the same layout.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from commscope.data.record_parse import record_from_dict
from commscope.data.records import RECORD_TYPES, End, Header
from commscope.data.store_seal import damaged, seal
from commscope.errors import RecordError

SCHEMA_VERSION = 4
READABLE_VERSIONS = (1, 2, 3, 4)
# Records a point row may hold: every record type but the run's header and end.
MEASUREMENT_KINDS = tuple(t for t in RECORD_TYPES if t not in ("header", "end"))

# Each table's columns and declared types in file order, as version 4 has them.
COLUMNS: dict[str, tuple[tuple[str, str], ...]] = {
    "runs": (
        ("id", "INTEGER"),
        ("created_unix", "REAL"),
        ("kind", "TEXT"),
        ("label", "TEXT"),
        ("status", "TEXT"),
        ("mpi", "TEXT"),
        ("launcher", "TEXT"),
        ("nranks", "INTEGER"),
        ("request_json", "TEXT"),
        ("header_json", "TEXT"),
        ("message", "TEXT"),
        ("crc", "INTEGER"),
    ),
    "segments": (
        ("id", "INTEGER"),
        ("run_id", "INTEGER"),
        ("started_unix", "REAL"),
        ("ended_unix", "REAL"),
        ("status", "TEXT"),
        ("argv_json", "TEXT"),
        ("header_json", "TEXT"),
        ("message", "TEXT"),
        ("end_json", "TEXT"),
        ("crc", "INTEGER"),
    ),
    "points": (
        ("id", "INTEGER"),
        ("run_id", "INTEGER"),
        ("segment_id", "INTEGER"),
        ("op", "TEXT"),
        ("pair", "TEXT"),
        ("bytes", "INTEGER"),
        ("n_samples", "INTEGER"),
        ("median_s", "REAL"),
        ("record_json", "TEXT"),
        ("kind", "TEXT"),
        ("crc", "INTEGER"),
    ),
    "run_data": (
        ("run_id", "INTEGER"),
        ("kind", "TEXT"),
        ("data_json", "TEXT"),
        ("crc", "INTEGER"),
    ),
    "baselines": (
        ("name", "TEXT"),
        ("created_unix", "REAL"),
        ("body_json", "TEXT"),
        ("crc", "INTEGER"),
    ),
    "run_figures": (
        ("run_id", "INTEGER"),
        ("name", "TEXT"),
        ("unit", "TEXT"),
        ("figures_json", "TEXT"),
        ("crc", "INTEGER"),
    ),
}
# The tables of a run's data (each row belongs to a run); version 3 adds the baselines,
# version 4 the run_figures (a run's too, but only from version 4: not in RUN_TABLES).
RUN_TABLES = ("runs", "segments", "points", "run_data")
TABLES = ("schema_version", *COLUMNS)
# Columns version 1 lacks (end_json and run_data came within version 1: a store may lack them).
_V2_ONLY = {"runs": {"crc"}, "segments": {"crc"}, "points": {"kind", "crc"}, "run_data": {"crc"}}
_V1_OPTIONAL = {"segments": {"end_json"}}

_RUNS_DDL = """CREATE TABLE runs (
    id INTEGER PRIMARY KEY, created_unix REAL, kind TEXT, label TEXT,
    status TEXT CHECK (status IN ('running', 'complete', 'incomplete')),
    mpi TEXT, launcher TEXT, nranks INTEGER, request_json TEXT, header_json TEXT,
    message TEXT, crc INTEGER)"""
_SEGMENTS_DDL = """CREATE TABLE segments (
    id INTEGER PRIMARY KEY, run_id INTEGER REFERENCES runs(id), started_unix REAL,
    ended_unix REAL, status TEXT, argv_json TEXT, header_json TEXT, message TEXT,
    end_json TEXT, crc INTEGER)"""
_POINTS_DDL = """CREATE TABLE points (
    id INTEGER PRIMARY KEY, run_id INTEGER REFERENCES runs(id),
    segment_id INTEGER REFERENCES segments(id), op TEXT, pair TEXT, bytes INTEGER,
    n_samples INTEGER, median_s REAL, record_json TEXT, kind TEXT, crc INTEGER,
    UNIQUE (run_id, op, pair, bytes))"""
_RUN_DATA_DDL = """CREATE TABLE run_data (
    run_id INTEGER REFERENCES runs(id), kind TEXT, data_json TEXT, crc INTEGER,
    UNIQUE (run_id, kind))"""
_BASELINES_DDL = """CREATE TABLE baselines (
    name TEXT PRIMARY KEY, created_unix REAL, body_json TEXT, crc INTEGER)"""
_RUN_FIGURES_DDL = """CREATE TABLE run_figures (
    run_id INTEGER REFERENCES runs(id), name TEXT, unit TEXT, figures_json TEXT, crc INTEGER,
    UNIQUE (run_id, name))"""
# A history of one figure name reads its rows through this index, run by run.
_RUN_FIGURES_INDEX = "CREATE INDEX IF NOT EXISTS run_figures_name ON run_figures (name, run_id)"
# Indexes: integrity_check compares each with its table, so the counts they answer
# (points per run, per segment) cannot drift from the rows unnoticed.
_INDEXES = (
    "CREATE INDEX IF NOT EXISTS points_key ON points (run_id, op, pair, bytes)",
    "CREATE INDEX IF NOT EXISTS points_kind ON points (run_id, kind)",
    "CREATE INDEX IF NOT EXISTS points_segment ON points (segment_id)",
)


def create(c: sqlite3.Connection) -> None:
    """Create the version 4 tables in an empty file (inside the caller's transaction)."""
    c.execute("CREATE TABLE schema_version (version INTEGER NOT NULL)")
    tables = (_RUNS_DDL, _SEGMENTS_DDL, _POINTS_DDL, _RUN_DATA_DDL, _BASELINES_DDL)
    for ddl in (*tables, _RUN_FIGURES_DDL, *_INDEXES, _RUN_FIGURES_INDEX):
        c.execute(ddl)
    c.execute("INSERT INTO schema_version (version) VALUES (?)", (SCHEMA_VERSION,))


def table_columns(conn: sqlite3.Connection) -> dict[str, list[str]]:
    """Every table in the file and its column names, in file order."""
    names = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
    # PRAGMA takes no parameters; the names come from the file, so they are quoted.
    return {
        name: [r[1] for r in conn.execute(f'PRAGMA table_info("{name.replace(chr(34), "")}")')]
        for name in names
    }


def structure_problems(have: dict[str, list[str]], version: int) -> list[str]:
    """What the file's tables lack for ``version``: "no points table", "runs lacks crc"."""
    problems = []
    for table in TABLES:
        if table not in have:
            if not _added_later(table, version):
                problems.append(f"no {table} table")
            continue
        missing = missing_columns(table, have[table], version)
        if missing:
            problems.append(f"{table} lacks column {', '.join(missing)}")
    return problems


def _added_later(table: str, version: int) -> bool:
    """Whether a store of ``version`` may lack ``table`` (a later version added it)."""
    since = {"run_data": 2, "baselines": 3, "run_figures": 4}.get(table, 1)
    return version < since


def missing_columns(table: str, have: list[str], version: int) -> list[str]:
    """The columns ``table`` should have in ``version`` but lacks."""
    expected = {name for name, _ in COLUMNS.get(table, (("version", "INTEGER"),))}
    if version == 1:
        expected -= _V2_ONLY.get(table, set()) | _V1_OPTIONAL.get(table, set())
    return [name for name in sorted(expected) if name not in have]


def migrate(c: sqlite3.Connection, path: Path, version: int) -> None:
    """Bring a version 1, 2 or 3 store to version 4 inside the caller's transaction.

    The run_figures table starts empty: each run's figures are kept when it is first read.

    Raises:
        StoreError: a row of a version 1 store is damaged; the caller rolls back.
    """
    if version == 1:
        migrate_v1(c, path)
    if version < 3:
        c.execute(_BASELINES_DDL)
    c.execute(_RUN_FIGURES_DDL)
    c.execute(_RUN_FIGURES_INDEX)
    c.execute("UPDATE schema_version SET version = ?", (SCHEMA_VERSION,))


def migrate_v1(c: sqlite3.Connection, path: Path) -> None:
    """Bring a version 1 store to version 2 inside the caller's transaction.

    Every row is decoded before it is sealed: a damaged row must not gain a checksum that
    would vouch for it.

    Raises:
        StoreError: a row is damaged; the caller rolls back, the file stays version 1.
    """
    have = table_columns(c)
    if "end_json" not in have["segments"]:  # stores from before end records
        c.execute("ALTER TABLE segments ADD COLUMN end_json TEXT")
    if "run_data" not in have:
        c.execute(_RUN_DATA_DDL.replace("data_json TEXT, crc INTEGER", "data_json TEXT"))
    for table in RUN_TABLES:
        for column in ("kind", "crc") if table == "points" else ("crc",):
            c.execute(f"ALTER TABLE {table} ADD COLUMN {column} {dict(COLUMNS[table])[column]}")
    for ddl in _INDEXES:
        c.execute(ddl)
    for run_id, request, header in c.execute("SELECT id, request_json, header_json FROM runs"):
        _v1_json(path, f"run {run_id} request_json", request, dict)
        _v1_record(path, f"run {run_id} header_json", header, Header)
    rows = c.execute("SELECT id, run_id, argv_json, header_json, end_json FROM segments")
    for seg_id, run_id, argv, header, end in rows.fetchall():
        where = f"run {run_id} segment {seg_id}"
        _v1_json(path, f"{where} argv_json", argv, list)
        _v1_record(path, f"{where} header_json", header, Header)
        _v1_record(path, f"{where} end_json", end, End)
    for point_id, run_id, text in c.execute(
        "SELECT id, run_id, record_json FROM points"
    ).fetchall():
        data = _v1_json(path, f"run {run_id} point {point_id} record_json", text, dict)
        kind = data.get("type") if isinstance(data, dict) else None
        if kind not in MEASUREMENT_KINDS:
            raise damaged(path, f"run {run_id} point {point_id} record_json is not a measurement")
        c.execute("UPDATE points SET kind = ? WHERE id = ?", (kind, point_id))
    for table in RUN_TABLES:
        for (rowid,) in c.execute(f"SELECT rowid FROM {table}").fetchall():
            seal(c, table, rowid, COLUMNS[table])
    c.execute("UPDATE schema_version SET version = 2")


def _v1_json(path: Path, where: str, text: object, shape: type) -> object:
    if text is None:
        return None
    try:
        data = json.loads(str(text))
    except (ValueError, RecursionError):
        raise damaged(path, f"{where} is not JSON", migrating=True) from None
    if not isinstance(data, shape):
        raise damaged(path, f"{where} is not a JSON {shape.__name__}", migrating=True)
    return data


def _v1_record(path: Path, where: str, text: object, cls: type) -> None:
    data = _v1_json(path, where, text, dict)
    if data is None:
        return
    try:
        record = record_from_dict(data, where)
    except RecordError as err:
        raise damaged(path, f"{where}: {err.one_line()}", migrating=True) from None
    if not isinstance(record, cls):
        raise damaged(path, f"{where} is not a {cls.__name__.lower()} record", migrating=True)
