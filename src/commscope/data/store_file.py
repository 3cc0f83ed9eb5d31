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

A store on this machine's own disk runs in WAL mode: readers never wait for a writer. A store
on a filesystem other machines share (NFS, Lustre, GPFS, BeeGFS, CIFS, FUSE:
:mod:`commscope.data.filesystem`), such as a home folder written by nightly jobs on compute
nodes, never does: WAL's index lives in one machine's shared memory. There the store keeps a
rollback journal (``journal_mode = DELETE``; a WAL store is switched back by the first command
that writes it), and every read and write transaction takes turns through a lock file
(:func:`guarded`, :mod:`commscope.data.store_lock`) whether or not the filesystem's POSIX
locks reach other machines. Reads go through a read-only connection, which never rolls back
a journal it takes for abandoned (it may be another machine's write under way); a writing
command's read-write connection is used under the lock only, where a journal left behind is
surely abandoned. Busy waits there last ``SHARED_BUSY_TIMEOUT_MS``. Saying so is left to the
caller: :data:`log` gets one line when a store is made there or switched from WAL, which
happens once per store.
"""

from __future__ import annotations

import logging
import os
import sqlite3
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from pathlib import Path

from commscope.data import filesystem, store_lock
from commscope.data import store_schema as schema
from commscope.data.store_seal import damaged
from commscope.errors import StoreError
from commscope.safe_write import SQLITE_MAGIC as _SQLITE_MAGIC
from commscope.safe_write import STORE_APPLICATION_ID

APPLICATION_ID = STORE_APPLICATION_ID  # "cmsc"; output files never replace such a file
SCHEMA_VERSION = schema.SCHEMA_VERSION
BUSY_TIMEOUT_MS = 5000
SHARED_BUSY_TIMEOUT_MS = int(store_lock.WAIT_S * 1000)
log = logging.getLogger(__name__)
_INTEGRITY_LINES = 20  # problems integrity_check lists at most
_READ_ONLY_FIX = (
    "make it writable (chmod u+w, chattr -i, or mount it read-write) or copy it and pass"
    " --store COPY; reading commands work as it is"
)


class StoreConnection(sqlite3.Connection):
    """A connection to a store that knows where the store lives.

    Attributes:
        path: the store file.
        shared: the type of the store's filesystem when other machines share it ("nfs4",
            "lustre", "fuse.sshfs"...), "" when it is this machine's own.
        writer: on a shared filesystem, the read-write connection of a writing command,
            used under the store's lock only; this connection itself is read-only there.
            None on a local filesystem, where this connection writes, and for readers.
        in_write: the connection of the write transaction under way; None between them.
    """

    path = Path()
    shared = ""
    writing = False  # opened for a writing command
    writer: sqlite3.Connection | None = None
    in_write: sqlite3.Connection | None = None

    def close(self) -> None:
        """Close this connection and its writer."""
        if self.writer is not None:
            self.writer.close()
            self.writer = None
        super().close()


def guarded(conn: sqlite3.Connection) -> AbstractContextManager[None]:
    """Hold the store's lock file for the block when the store is on a shared filesystem.

    Readers take it as writers do: where the filesystem's POSIX locks do not reach other
    machines, a read while another machine writes would meet half a transaction. A reader
    that may not create the lock file (its folder is read-only to it) reads without it.
    """
    if not (isinstance(conn, StoreConnection) and conn.shared):
        return nullcontext()
    return store_lock.held(conn.path, optional=not conn.writing)


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


def _in_wal_mode(path: Path) -> bool:
    """Whether the file's header says WAL (its read and write versions, bytes 18-19, are 2)."""
    try:
        with path.open("rb") as handle:
            head = handle.read(20)
    except OSError:
        return False
    return head[18:20] == b"\x02\x02"


def failure(path: Path, err: sqlite3.Error | UnicodeDecodeError, what: str) -> StoreError:
    """The one-line error for SQLite failing to ``what`` ("read run 3's points")."""
    text = " ".join(str(err).split())[:200]
    if getattr(err, "sqlite_errorname", "") == "SQLITE_READONLY_ROLLBACK":
        return StoreError(
            f"{path}: cannot {what}: its journal {path.name}-journal holds a write not"
            " finished, under way on another machine or cut short; run the command again"
            " (a write cut short is rolled back then)"
        )
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


def open_file(path: Path, write: bool, create: bool = True) -> tuple[StoreConnection, bool]:
    """Connect to the store file without checking its contents; True when it is new.

    ``create``: a writing command may create the store. One that only changes what a store
    holds (a baseline made of its runs, one deleted) does not: a typo in --store would
    leave a new empty store behind its error.

    Reading a store that is read-only opens a ``mode=ro`` URI, plus ``immutable=1`` when
    the folder is not writable: a store in WAL mode needs its -shm file, which SQLite could
    not create there. On a shared filesystem a reader opens a store that is not in WAL mode
    read-only too: a read-only connection never rolls back a journal, which there may be
    another machine's write under way. A journal that a write cut short left behind is
    rolled back first, under the store's lock (:func:`_journal_rolled_back`).

    Raises:
        StoreError: not a commscope store, read-only when ``write``, or cannot be opened.
    """
    conn, new = _connect_file(path, write, create)
    if conn.shared and not write:
        try:
            with reading(path, "roll back a write cut short"), guarded(conn):
                conn = _journal_rolled_back(conn)
        except BaseException:
            conn.close()
            raise
    return conn, new


def _connect_file(path: Path, write: bool, create: bool = True) -> tuple[StoreConnection, bool]:
    new = probe(path)
    folder = path.parent
    why = _read_only(path, new)
    shared = filesystem.shared_type(path)
    # A reading command never creates a store: a typo in --store would leave an empty one.
    # On a writable file it opens read-write with query_only set: closing then removes the
    # -wal and -shm files, which a read-only connection would leave behind.
    if new and not (write and create):
        raise StoreError(
            f"no store at {path}; give the --store path of an existing store (env"
            " COMMSCOPE_STORE), or run 'commscope run' to make one there"
        )
    if new and why:
        raise StoreError(f"{path} cannot be created ({why}); choose another --store path")
    if write or new or (not why and not (shared and not _in_wal_mode(path))):
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
            target,
            timeout=(SHARED_BUSY_TIMEOUT_MS if shared else BUSY_TIMEOUT_MS) / 1000,
            isolation_level=None,
            uri=uri,
            factory=StoreConnection,
        )
    except (OSError, sqlite3.Error) as err:
        raise StoreError(f"{path} cannot be opened ({err}); choose another --store path") from None
    assert isinstance(conn, StoreConnection)
    conn.path, conn.shared, conn.writing = path, shared, write
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
        return f"its folder {folder} is not writable, and SQLite keeps its journal there"
    return ""


def connect(path: Path, write: bool = True, create: bool = True) -> tuple[StoreConnection, int]:
    """Open and check the store at ``path``; the connection and the store's schema version.

    ``write``: for a writing command (the file is created when absent, an older store is
    brought to the current version; with ``create`` False an absent file is refused as for
    reading). Otherwise the file is opened read-only and an older
    store is read as it is (see :class:`Store`). Only the tables and their columns are
    checked: the rows are checked as they are read. The connection runs in autocommit mode
    with rows as :class:`sqlite3.Row`; write through :func:`write_transaction`, read under
    :func:`guarded`.

    Raises:
        StoreError: not a commscope store, another schema version, a table or column
            missing, read-only for a writing command, or cannot be created.
    """
    conn, new = open_file(path, write, create)
    try:
        with reading(path, "read its tables"), guarded(conn):
            version = _setup(conn, path, new, write)
        if conn.shared and write:  # reads go through a read-only connection there
            reader = _connect_file(path, False)[0]
            reader.writing, reader.writer, conn = True, conn, reader
    except BaseException:
        conn.close()
        raise
    return conn, version


def _journal_rolled_back(conn: StoreConnection) -> StoreConnection:
    """``conn``, or a new reader once a write cut short (a hot journal) is rolled back.

    A reader on a shared filesystem opens the store read-only, and SQLite refuses to read
    it when it finds a journal it takes for abandoned. The caller holds the store's lock,
    so no commscope is writing: the journal is a write cut short, and a read-write
    connection rolls it back, as SQLite does on a writer's first read.
    """
    try:
        conn.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()
        return conn
    except sqlite3.Error as err:
        if getattr(err, "sqlite_errorname", "") != "SQLITE_READONLY_ROLLBACK":
            return conn  # the caller reads again and names the failure
    conn.close()
    writer = sqlite3.connect(conn.path, timeout=SHARED_BUSY_TIMEOUT_MS / 1000)
    try:
        writer.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()
    finally:
        writer.close()
    return _connect_file(conn.path, False)[0]


@contextmanager
def write_transaction(
    conn: sqlite3.Connection, path: Path, what: str
) -> Iterator[sqlite3.Connection]:
    """Run the block as one transaction on ``conn``, committed before returning.

    Args:
        conn: an autocommit connection from :func:`connect`.
        path: the store file, named in the error.
        what: what the block does, for the error ("store a point").

    On a shared filesystem the block holds the store's lock file too
    (:mod:`commscope.data.store_lock`), and writes through ``conn``'s writer.

    Raises:
        StoreError: SQLite failed (the transaction was rolled back), or the store's lock
            stayed held by another process for its whole wait.
    """
    store = conn if isinstance(conn, StoreConnection) else None
    writer = store.writer if store is not None and store.writer is not None else conn
    with guarded(conn):
        try:
            writer.execute("BEGIN IMMEDIATE")
            if store is not None:
                store.in_write = writer
            yield writer
            writer.execute("COMMIT")
        except BaseException as err:
            if writer.in_transaction:
                writer.execute("ROLLBACK")
            if not isinstance(err, (sqlite3.Error, UnicodeDecodeError)):  # latter: not UTF-8
                raise
            raise failure(path, err, what) from None
        finally:
            if store is not None:
                store.in_write = None


def _setup(conn: StoreConnection, path: Path, new: bool, write: bool) -> int:
    # PRAGMAs take no parameters; the values are constants of this module.
    busy = SHARED_BUSY_TIMEOUT_MS if conn.shared else BUSY_TIMEOUT_MS
    conn.execute(f"PRAGMA busy_timeout = {busy}")
    conn.execute("PRAGMA foreign_keys = ON")
    if write and conn.shared and not new and _in_wal_mode(path):
        _leave_wal(conn, path)
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
        if app == 0 and conn.shared:  # this process made it
            _say_shared(path, conn.shared, "the new store keeps")
    version = _version(conn, path)
    problems = schema.structure_problems(schema.table_columns(conn), version)
    if problems:
        raise damaged(path, "; ".join(problems), "no command reads from it")
    if not write:
        return version
    if version != schema.SCHEMA_VERSION:  # before WAL: a refused one leaves the file as it was
        with write_transaction(conn, path, f"bring the store to version {SCHEMA_VERSION}") as c:
            schema.migrate(c, path, version)
    if not conn.shared:
        conn.execute("PRAGMA journal_mode = WAL")
    return schema.SCHEMA_VERSION


def _leave_wal(conn: StoreConnection, path: Path) -> None:
    """Switch a WAL store on a shared filesystem to a rollback journal (under its lock).

    SQLite leaves WAL only while it holds the file alone: in exclusive locking mode, where
    the WAL index lives in this process's memory rather than in shared memory; the first
    read after going back to normal mode gives the lock up.
    """
    conn.execute("PRAGMA locking_mode = EXCLUSIVE")
    conn.execute("PRAGMA journal_mode = DELETE")
    conn.execute("PRAGMA locking_mode = NORMAL")
    conn.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()
    _say_shared(path, conn.shared, "the store now keeps")


def _say_shared(path: Path, fstype: str, keeps: str) -> None:
    """The one line a store on a shared filesystem gets, when it is made or switched."""
    log.warning(
        "%s is on %s, shared with other machines: %s a rollback journal, not WAL (which"
        " works on one machine only), and its readers and writers take turns through %s",
        path,
        fstype,
        keeps,
        store_lock.lock_path(path).name,
    )


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
