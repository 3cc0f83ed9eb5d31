"""Stores made from the fixture run, version 1 stores built by hand, and ways to damage them."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from commscope.data.record_parse import parse_record, record_from_dict
from commscope.data.records import End, Header, Point
from commscope.data.store import Store
from commscope.data.store_schema import COLUMNS
from commscope.data.store_seal import row_crc

FIXTURE = Path(__file__).parent / "unit" / "fixtures" / "p2p_openmpi.jsonl"
REQUEST = {"benchmark": "p2p", "np": 2, "ops": ["pingpong", "bw", "bibw"]}
PAGE = 4096  # SQLite's default page size, which the stores here use


def fixture_run() -> tuple[Header, list[Point], End]:
    """The fixture's header, points and end record."""
    records = [parse_record(line, "fixture") for line in FIXTURE.read_text().splitlines()]
    header, end = records[0], records[-1]
    assert isinstance(header, Header) and isinstance(end, End)
    return header, [r for r in records if isinstance(r, Point)], end


def fixture_store(path: Path, runs: int = 2) -> Path:
    """A store holding the fixture run ``runs`` times, each with a segment, end and data."""
    header, points, end = fixture_run()
    with Store.open(path) as store:
        for n in range(runs):
            run = store.create_run("p2p", f"fixture {n + 1}", "openmpi-4.1.4", "mpirun", 2, REQUEST)
            seg = store.start_segment(run, ["mpirun", "-n", "2", "commscope-engine"])
            store.set_header(run, seg, header)
            for point in points:  # each run's samples a little slower, so no two rows match
                raw = dict(point.raw, samples_s=[t * (1 + n / 64) for t in point.samples_s])
                store.add_point(run, seg, record_from_dict(raw, "fixture"))
            store.finish_segment(seg, "complete", None, end.raw)
            store.set_run_data(run, "note", {"kept": n})
            store.set_run_status(run, "complete")
    return path


# The tables of store version 1, as commscope wrote them before the kind column.
V1_TABLES = (
    "CREATE TABLE schema_version (version INTEGER NOT NULL)",
    """CREATE TABLE runs (
        id INTEGER PRIMARY KEY, created_unix REAL, kind TEXT, label TEXT,
        status TEXT CHECK (status IN ('running', 'complete', 'incomplete')),
        mpi TEXT, launcher TEXT, nranks INTEGER, request_json TEXT, header_json TEXT,
        message TEXT)""",
    """CREATE TABLE segments (
        id INTEGER PRIMARY KEY, run_id INTEGER REFERENCES runs(id), started_unix REAL,
        ended_unix REAL, status TEXT, argv_json TEXT, header_json TEXT, message TEXT,
        end_json TEXT)""",
    """CREATE TABLE points (
        id INTEGER PRIMARY KEY, run_id INTEGER REFERENCES runs(id),
        segment_id INTEGER REFERENCES segments(id), op TEXT, pair TEXT, bytes INTEGER,
        n_samples INTEGER, median_s REAL, record_json TEXT,
        UNIQUE (run_id, op, pair, bytes))""",
    "CREATE INDEX points_key ON points (run_id, op, pair, bytes)",
    """CREATE TABLE run_data (
        run_id INTEGER REFERENCES runs(id), kind TEXT, data_json TEXT,
        UNIQUE (run_id, kind))""",
)


def v1_store(path: Path, with_end_json: bool = True) -> Path:
    """A version 1 store holding the fixture run, written with raw SQL as version 1 did."""
    header, points, end = fixture_run()
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA application_id = 1668117347")  # 0x636D7363, "cmsc"
    for ddl in V1_TABLES:
        if not with_end_json:
            ddl = ddl.replace(",\n        end_json TEXT)", ")")
        conn.execute(ddl)
    conn.execute("INSERT INTO schema_version VALUES (1)")
    conn.execute(
        "INSERT INTO runs VALUES (1, 1732230000.5, 'p2p', 'old', 'complete', 'openmpi-4.1.4',"
        " 'mpirun', 2, ?, ?, NULL)",
        (json.dumps(REQUEST), json.dumps(header.raw)),
    )
    segment = [1, 1, 1732230000.5, 1732230013.0, "complete", '["mpirun"]', None, None]
    if with_end_json:
        segment.append(json.dumps(end.raw))
    conn.execute(f"INSERT INTO segments VALUES ({', '.join('?' * len(segment))})", segment)
    for n, p in enumerate(points, 1):
        conn.execute(
            "INSERT INTO points VALUES (?, 1, 1, ?, ?, ?, ?, ?, ?)",
            (n, p.op, p.pair, p.bytes, p.n_samples, p.median_s, json.dumps(p.raw)),
        )
    conn.commit()
    conn.execute("PRAGMA journal_mode = WAL")
    conn.close()
    return path


def set_column(path: Path, table: str, column: str, rowid: int, value: object, seal: bool) -> None:
    """Write ``value`` into one cell; ``seal``: give the row a matching checksum, as if
    commscope had written it, so that only the value's shape is wrong."""
    conn = sqlite3.connect(path)
    conn.row_factory = sqlite3.Row
    conn.execute(f"UPDATE {table} SET {column} = ? WHERE rowid = ?", (value, rowid))
    if seal:
        row = conn.execute(f"SELECT * FROM {table} WHERE rowid = ?", (rowid,)).fetchone()
        crc = row_crc(COLUMNS[table], row)
        conn.execute(f"UPDATE {table} SET crc = ? WHERE rowid = ?", (crc, rowid))
    conn.commit()
    conn.close()


def flip(path: Path, offset: int, mask: int = 0x01) -> None:
    """XOR one byte of the file with ``mask``."""
    data = bytearray(path.read_bytes())
    data[offset] ^= mask
    path.write_bytes(bytes(data))


def flip_text(path: Path, text: bytes, at: int, mask: int = 0x01) -> int:
    """Flip byte ``at`` of every copy of ``text`` in the file; how many copies there were.

    Every copy: SQLite leaves old copies of moved or changed rows in free space, and which
    copy is the live row is SQLite's business.
    """
    data = bytearray(path.read_bytes())
    start = data.find(text)
    copies = 0
    while start >= 0:
        data[start + at] ^= mask
        copies += 1
        start = data.find(text, start + 1)
    assert copies, f"{text!r} is not in {path}"
    path.write_bytes(bytes(data))
    return copies


def root_page(path: Path, name: str) -> int:
    """The page number of the root of table or index ``name``."""
    conn = sqlite3.connect(path)
    (page,) = conn.execute("SELECT rootpage FROM sqlite_master WHERE name = ?", (name,)).fetchone()
    conn.close()
    return int(page)


def drop_index_entry(path: Path, index: str, columns: str, rowid: int) -> None:
    """Leave row ``rowid`` of the points table out of ``index`` (on ``columns``), as a damaged
    page could: the index is built without it, then its definition says it holds every row."""
    conn = sqlite3.connect(path)
    conn.execute(f"DROP INDEX {index}")
    conn.execute(f"CREATE INDEX {index} ON points {columns} WHERE rowid != {int(rowid)}")
    conn.execute("PRAGMA writable_schema = ON")
    conn.execute(
        "UPDATE sqlite_master SET sql = ? WHERE name = ?",
        (f"CREATE INDEX {index} ON points {columns}", index),
    )
    conn.commit()
    conn.close()
