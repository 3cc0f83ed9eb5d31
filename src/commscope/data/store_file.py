"""The store's SQLite file: recognising it, opening it to read or to write.

A file that is not a commscope store is refused before SQLite touches it: the application id
in the file's header marks ours, and the ``schema_version`` table says which layout it has.
Opening checks only that the tables and their columns are there, so it costs the same for a
store of one run as for one of a million points: nothing else is read until a command asks
for it. What a command reads is checked as it is read (every row against its checksum,
:mod:`commscope.data.store_seal`; SQLite reports a damaged page it walks through), and a
writing command checks every row of a run before its first write into that run
(:class:`commscope.data.store_write.StoreWrites`). SQLite's integrity check and the check of
every row are ``commscope check-store``'s (:mod:`commscope.data.store_integrity`). Reading
commands open the file read-only: they never change it, so they work on a read-only file or
folder and while a run is writing. Writing commands bring an older store to the current
version first (:mod:`commscope.data.store_schema`). :class:`commscope.data.store.Store`
opens the file through :func:`connect` and writes through :func:`write_transaction`.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from commscope.data import store_schema as schema
from commscope.data.store_seal import damaged
from commscope.errors import StoreError

APPLICATION_ID = 0x636D7363  # "cmsc"
SCHEMA_VERSION = schema.SCHEMA_VERSION
BUSY_TIMEOUT_MS = 5000
_SQLITE_MAGIC = b"SQLite format 3\x00"
_INTEGRITY_LINES = 20  # problems integrity_check lists at most
_READ_ONLY_FIX = (
    "make it writable (chmod u+w, chattr -i, or mount it read-write) or copy it and pass"
    " --store COPY; reading commands work as it is"
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
    if path.exists() and not path.is_file():  # a device or FIFO: SQLite journals beside it
        raise _not_ours(path, "it is not a regular file")
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


def failure(path: Path, err: sqlite3.Error | UnicodeDecodeError, what: str) -> StoreError:
    """The one-line error for SQLite failing to ``what`` ("read run 3's points")."""
    text = " ".join(str(err).split())[:200]
    if "readonly" in text or "read-only" in text:
        return StoreError(f"{path} is read-only ({text}); {_READ_ONLY_FIX}")
    damage = ("malformed", "not a database", "corrupt", "no such", "decode", "UTF-8")
    if isinstance(err, UnicodeDecodeError) or any(word in text for word in damage):
        return damaged(path, f"SQLite cannot {what} ({text})", "no table can be trusted")
    return StoreError(
        f"{path}: cannot {what} ({text}); check free space and that no other program locks"
        " the store"
    )


@contextmanager
def reading(path: Path, what: str) -> Iterator[None]:
    """Turn SQLite failures inside the block into one-line errors naming ``what``."""
    try:
        yield
    except (sqlite3.Error, UnicodeDecodeError) as err:  # the latter: text that is not UTF-8
        raise failure(path, err, what) from None


def open_file(path: Path, write: bool) -> tuple[sqlite3.Connection, bool]:
    """Connect to the store file without checking its contents; True when it is new.

    Reading a store that is read-only opens a ``mode=ro`` URI, plus ``immutable=1`` when
    the folder is not writable: a store in WAL mode needs its -shm file, which SQLite could
    not create there.

    Raises:
        StoreError: not a commscope store, read-only when ``write``, or cannot be opened.
    """
    new = probe(path)
    folder = path.parent
    why = _read_only(path, new)
    # A reading command never creates a store: a typo in --store would leave an empty one.
    # On a writable file it opens read-write with query_only set: closing then removes the
    # -wal and -shm files, which a read-only connection would leave behind.
    if new and not write:
        raise StoreError(
            f"no store at {path}; give the --store path of an existing store (env"
            " COMMSCOPE_STORE), or run 'commscope run' to make one there"
        )
    if new and why:
        raise StoreError(f"{path} cannot be created ({why}); choose another --store path")
    if write or new or not why:
        if why:
            raise StoreError(f"{path} is read-only ({why}); {_READ_ONLY_FIX}")
        target, uri = str(path), False
    else:
        query = "mode=ro"
        if not os.access(folder, os.W_OK):
            wal = Path(f"{path}-wal")
            if wal.exists() and wal.stat().st_size > 0:
                raise StoreError(
                    f"{path} has writes not yet merged from {wal.name} and its folder is"
                    " read-only; open it once where the folder is writable, or copy the"
                    " store with its -wal file and pass --store COPY"
                )
            query += "&immutable=1"
        target, uri = f"{path.absolute().as_uri()}?{query}", True
    try:
        folder.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(
            target, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None, uri=uri
        )
    except (OSError, sqlite3.Error) as err:
        raise StoreError(f"{path} cannot be opened ({err}); choose another --store path") from None
    conn.row_factory = sqlite3.Row
    if not write and not new:
        conn.execute("PRAGMA query_only = ON")
    return conn, new


def _read_only(path: Path, new: bool) -> str:
    folder = path.parent
    while new and not folder.exists() and folder != folder.parent:
        folder = folder.parent  # the folders up to the store are created
    if not new and not os.access(path, os.W_OK):
        return "the file is not writable"
    if folder.exists() and not os.access(folder, os.W_OK):
        return f"its folder {folder} is not writable, and SQLite keeps its -wal file there"
    return ""


def connect(path: Path, write: bool = True) -> tuple[sqlite3.Connection, int]:
    """Open and check the store at ``path``; the connection and the store's schema version.

    ``write``: for a writing command (the file is created when absent, an older store is
    brought to the current version). Otherwise the file is opened read-only and an older
    store is read as it is (see :class:`Store`). Only the tables and their columns are
    checked: the rows are checked as they are read. The connection runs in autocommit mode
    with rows as :class:`sqlite3.Row`; write through :func:`write_transaction`.

    Raises:
        StoreError: not a commscope store, another schema version, a table or column
            missing, read-only for a writing command, or cannot be created.
    """
    conn, new = open_file(path, write)
    try:
        with reading(path, "read its tables"):
            version = _setup(conn, path, new, write)
    except BaseException:
        conn.close()
        raise
    return conn, version


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
        if not isinstance(err, (sqlite3.Error, UnicodeDecodeError)):  # the latter: not UTF-8
            raise
        raise failure(path, err, what) from None


def _setup(conn: sqlite3.Connection, path: Path, new: bool, write: bool) -> int:
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
                schema.create(c)
            elif app != APPLICATION_ID:
                raise _not_ours(path, f"SQLite application_id {app:#x}")
    version = _version(conn, path)
    problems = schema.structure_problems(schema.table_columns(conn), version)
    if problems:
        raise damaged(path, "; ".join(problems), "no command reads from it")
    if not write:
        return version
    if version != schema.SCHEMA_VERSION:  # before WAL: a refused one leaves the file as it was
        with write_transaction(conn, path, f"bring the store to version {SCHEMA_VERSION}") as c:
            schema.migrate(c, path, version)
    conn.execute("PRAGMA journal_mode = WAL")
    return schema.SCHEMA_VERSION


def _version(conn: sqlite3.Connection, path: Path) -> int:
    try:
        rows = conn.execute("SELECT version FROM schema_version").fetchall()
    except sqlite3.OperationalError as err:
        if "no such table" in str(err):
            raise _no_version(conn, path) from None
        raise
    versions = sorted({row[0] for row in rows})
    if len(versions) != 1 or versions[0] not in schema.READABLE_VERSIONS:
        found = ", ".join(str(v) for v in versions) or "none"
        raise StoreError(
            f"{path} has store schema version {found}, this commscope reads versions"
            f" {', '.join(map(str, schema.READABLE_VERSIONS[:-1]))} and"
            f" {schema.READABLE_VERSIONS[-1]}; use a matching commscope"
            " or another --store path"
        )
    return int(versions[0])


def _no_version(conn: sqlite3.Connection, path: Path) -> StoreError:
    """The error for a file marked as a store that lacks its schema_version table."""
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    if not tables & set(schema.COLUMNS):
        fix = "it holds no runs: remove it, or" if not tables else "it holds no runs;"
        return StoreError(
            f"{path} is marked as a commscope store but holds none of its tables (its"
            f" creation was cut short); {fix} choose another --store path"
        )
    return damaged(path, "its schema_version table is missing", "no run can be read from it")


def integrity_problems(conn: sqlite3.Connection) -> list[str]:
    """What SQLite's integrity check finds in the whole file; [] when nothing.

    It reads every page and compares every index with its table, so ``check-store`` runs it;
    the other commands check what they read.
    """
    try:
        lines = [str(r[0]) for r in conn.execute(f"PRAGMA integrity_check({_INTEGRITY_LINES})")]
    except sqlite3.DatabaseError as err:
        return [" ".join(str(err).split())]
    return [] if lines == ["ok"] else lines


def row_name(table: str, row: sqlite3.Row) -> str:
    """How errors name a row: "run 3", "run 3 segment 4", "run 3 point 17"."""
    if table == "runs":
        return f"run {row['id']}"
    if table == "baselines":
        return f"baseline {row['name']!r}"
    if table == "run_data":
        return f"run {row['run_id']} data {row['kind']!r}"
    if table == "run_figures":
        return f"run {row['run_id']} figures {row['name']}"
    return f"run {row['run_id']} {table.removesuffix('s')} {row['id']}"
