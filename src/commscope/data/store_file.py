"""The store's SQLite file: recognising it, creating its tables and running write transactions.

A file that is not a commscope store is refused before SQLite touches it: the application id
in the file's header marks ours, and the ``schema_version`` table says which layout it has.
:class:`commscope.data.store.Store` opens the file through :func:`connect` and writes through
:func:`write_transaction`; this module knows nothing about runs and points beyond the tables.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from commscope.errors import StoreError

APPLICATION_ID = 0x636D7363  # "cmsc"
SCHEMA_VERSION = 1
BUSY_TIMEOUT_MS = 5000
_SQLITE_MAGIC = b"SQLite format 3\x00"

# Derived data kept with a run (e.g. a simulated run's network load), one JSON per kind.
RUN_DATA_TABLE = """CREATE TABLE IF NOT EXISTS run_data (
        run_id INTEGER REFERENCES runs(id), kind TEXT, data_json TEXT,
        UNIQUE (run_id, kind))"""

_TABLES = (
    "CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)",
    """CREATE TABLE IF NOT EXISTS runs (
        id INTEGER PRIMARY KEY, created_unix REAL, kind TEXT, label TEXT,
        status TEXT CHECK (status IN ('running', 'complete', 'incomplete')),
        mpi TEXT, launcher TEXT, nranks INTEGER, request_json TEXT, header_json TEXT,
        message TEXT)""",
    """CREATE TABLE IF NOT EXISTS segments (
        id INTEGER PRIMARY KEY, run_id INTEGER REFERENCES runs(id), started_unix REAL,
        ended_unix REAL, status TEXT, argv_json TEXT, header_json TEXT, message TEXT,
        end_json TEXT)""",
    """CREATE TABLE IF NOT EXISTS points (
        id INTEGER PRIMARY KEY, run_id INTEGER REFERENCES runs(id),
        segment_id INTEGER REFERENCES segments(id), op TEXT, pair TEXT, bytes INTEGER,
        n_samples INTEGER, median_s REAL, record_json TEXT,
        UNIQUE (run_id, op, pair, bytes))""",
    "CREATE INDEX IF NOT EXISTS points_key ON points (run_id, op, pair, bytes)",
    RUN_DATA_TABLE,
)


def _not_ours(path: Path, why: str) -> StoreError:
    return StoreError(f"{path} is not a commscope store ({why}); choose another --store path")


def probe(path: Path) -> bool:
    """Return True when ``path`` is absent or empty; refuse files that are not our store.

    Reads the SQLite header directly, so a foreign file is never opened by SQLite (which
    could leave journal files behind or switch its journal mode).

    Raises:
        StoreError: ``path`` is a directory, cannot be read, or is not a commscope store.
    """
    if path.is_dir():
        raise _not_ours(path, "it is a directory")
    try:
        with path.open("rb") as handle:
            head = handle.read(100)
    except FileNotFoundError:
        return True
    except OSError as err:
        raise StoreError(f"{path} cannot be read ({err.strerror}); check its permissions") from None
    if not head:
        return True
    if len(head) < 100 or not head.startswith(_SQLITE_MAGIC):
        raise _not_ours(path, "file is not a database")
    app = int.from_bytes(head[68:72], "big")
    if app != APPLICATION_ID:
        raise _not_ours(path, f"SQLite application_id {app:#x}, expected {APPLICATION_ID:#x}")
    return False


def connect(path: Path) -> sqlite3.Connection:
    """Open the store file at ``path``, creating it (and its directory) when absent.

    The connection runs in autocommit mode with rows as :class:`sqlite3.Row`; write through
    :func:`write_transaction`.

    Raises:
        StoreError: the file is not a commscope store, has another schema version, or
            cannot be created.
    """
    new = probe(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(path, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None)
    except (OSError, sqlite3.Error) as err:
        raise StoreError(f"{path} cannot be opened ({err}); choose another --store path") from None
    conn.row_factory = sqlite3.Row
    try:
        _setup(conn, path, new)
    except sqlite3.DatabaseError as err:
        conn.close()
        raise _not_ours(path, str(err)) from None
    except BaseException:
        conn.close()
        raise
    return conn


@contextmanager
def write_transaction(
    conn: sqlite3.Connection, path: Path, what: str
) -> Iterator[sqlite3.Connection]:
    """Run the block as one transaction on ``conn``, committed before returning.

    Args:
        conn: an autocommit connection from :func:`connect`.
        path: the store file, named in the error.
        what: what the block does, for the error ("store a point").

    Raises:
        StoreError: SQLite failed; the transaction was rolled back.
    """
    try:
        conn.execute("BEGIN IMMEDIATE")
        yield conn
        conn.execute("COMMIT")
    except BaseException as err:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        if not isinstance(err, sqlite3.Error):
            raise
        raise StoreError(
            f"{path}: cannot {what} ({err}); check free space and that no other"
            " program locks the store"
        ) from None


def _setup(conn: sqlite3.Connection, path: Path, new: bool) -> None:
    # PRAGMAs take no parameters; the values are constants of this module.
    conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    conn.execute("PRAGMA foreign_keys = ON")
    if new:
        with write_transaction(conn, path, "initialise the store") as c:
            app = c.execute("PRAGMA application_id").fetchone()[0]
            if app == 0:  # another process may have initialised it since the probe
                # Set while still in rollback-journal mode, so the id lands in the main
                # file's header where probe() reads it.
                c.execute(f"PRAGMA application_id = {APPLICATION_ID}")
                for statement in _TABLES:
                    c.execute(statement)
                c.execute("INSERT INTO schema_version (version) VALUES (?)", (SCHEMA_VERSION,))
            elif app != APPLICATION_ID:
                raise _not_ours(path, f"SQLite application_id {app:#x}")
    try:
        rows = conn.execute("SELECT version FROM schema_version").fetchall()
    except sqlite3.OperationalError:
        raise _not_ours(path, "no schema_version table") from None
    versions = sorted({row[0] for row in rows})
    if versions != [SCHEMA_VERSION]:
        found = ", ".join(str(v) for v in versions) or "none"
        raise StoreError(
            f"{path} has store schema version {found}, this commscope"
            f" reads version {SCHEMA_VERSION}; use a matching commscope or another --store path"
        )
    conn.execute("PRAGMA journal_mode = WAL")
    _add_missing_columns(conn, path)


def _add_missing_columns(conn: sqlite3.Connection, path: Path) -> None:
    # Columns added within schema version 1 (nullable, so old rows stay valid).
    have = {row[1] for row in conn.execute("PRAGMA table_info(segments)")}
    if "end_json" not in have:
        with write_transaction(conn, path, "add the segments.end_json column") as c:
            c.execute("ALTER TABLE segments ADD COLUMN end_json TEXT")
    tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    if "run_data" not in tables:  # added within schema version 1
        with write_transaction(conn, path, "add the run_data table") as c:
            c.execute(RUN_DATA_TABLE)
