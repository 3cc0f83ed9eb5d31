"""SQLite store of runs, engine launches (segments) and measured points.

Indexed columns sit next to the raw JSON of each record, so analyses can always go back to
the samples. Every write is its own committed transaction: a killed run keeps each point it
finished. Opening the file (one that is not a commscope store is refused before SQLite
touches it), creating its tables and running write transactions are the job of
:mod:`commscope.data.store_file`; this module holds the queries.
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
import time
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from commscope.data.record_parse import record_from_dict
from commscope.data.records import Coll, Contention, Header, Linpack, LogGP, Point, Stream

# Re-exported: callers import the file's constants from here.
from commscope.data.store_file import APPLICATION_ID as APPLICATION_ID
from commscope.data.store_file import BUSY_TIMEOUT_MS as BUSY_TIMEOUT_MS
from commscope.data.store_file import SCHEMA_VERSION as SCHEMA_VERSION
from commscope.data.store_file import connect, write_transaction
from commscope.errors import StoreError, UsageError
from commscope.strict import shown

RUN_STATUSES = ("running", "complete", "incomplete")
MAX_RUN_ID = 2**63 - 1  # SQLite's largest INTEGER

# Column names match the fields of RunInfo and SegmentInfo; *_json columns are decoded.
_RUN_QUERY = """SELECT r.*, (SELECT COUNT(*) FROM points p WHERE p.run_id = r.id) AS n_points
    FROM runs r"""
_SEGMENT_QUERY = """SELECT s.*, (SELECT COUNT(*) FROM points p WHERE p.segment_id = s.id)
    AS n_points FROM segments s WHERE s.run_id = ? ORDER BY s.id"""


def _damaged(where: str, record: object, expected: str) -> StoreError:
    found = type(record).__name__.lower()
    return StoreError(
        f"{where} holds a {found} record, not a {expected}; the store is damaged,"
        " choose another --store path"
    )


def _header_record(data: dict[str, Any] | None, where: str) -> Header | None:
    if data is None:
        return None
    header = record_from_dict(data, where)
    if not isinstance(header, Header):
        raise _damaged(where, header, "header")
    return header


@dataclass(frozen=True)
class RunInfo:
    """One stored run: what was asked for, its engine header (as JSON) and how far it got."""

    id: int
    created_unix: float
    kind: str
    label: str | None
    status: str
    mpi: str | None
    launcher: str | None
    nranks: int | None
    request: dict[str, Any] = field(hash=False)
    header: dict[str, Any] | None = field(hash=False)
    message: str | None
    n_points: int

    @property
    def header_record(self) -> Header | None:
        """The first engine header of the run as a record; None before the engine started."""
        return _header_record(self.header, f"run {self.id} header")


@dataclass(frozen=True)
class SegmentInfo:
    """One engine launch within a run."""

    id: int
    run_id: int
    started_unix: float
    ended_unix: float | None
    status: str
    argv: tuple[str, ...]
    header: dict[str, Any] | None = field(hash=False)
    message: str | None
    n_points: int
    end: dict[str, Any] | None = field(default=None, hash=False)  # the engine's end record

    @property
    def header_record(self) -> Header | None:
        """This launch's engine header as a record; None if the engine wrote none."""
        return _header_record(self.header, f"segment {self.id} header")


def _insert_run(
    c: sqlite3.Connection,
    kind: str,
    label: str | None,
    mpi: str | None,
    launcher: str | None,
    nranks: int | None,
    request: dict[str, Any],
    status: str,
) -> int:
    cur = c.execute(
        "INSERT INTO runs (created_unix, kind, label, status, mpi, launcher, nranks,"
        " request_json) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        (time.time(), kind, label, status, mpi, launcher, nranks, json.dumps(request)),
    )
    return int(cur.lastrowid or 0)


def _insert_segment(c: sqlite3.Connection, run_id: int, argv: list[str], status: str) -> int:
    cur = c.execute(
        "INSERT INTO segments (run_id, started_unix, status, argv_json) VALUES (?, ?, ?, ?)",
        (run_id, time.time(), status, json.dumps(list(argv))),
    )
    return int(cur.lastrowid or 0)


class Store:
    """A commscope SQLite store. Open it with ``Store.open(path)``."""

    def __init__(self, path: Path, conn: sqlite3.Connection) -> None:
        self.path = path
        self._conn = conn

    @classmethod
    def open(cls, path: str | os.PathLike[str]) -> Store:
        """Open the store at ``path``, creating it (and its directory) when absent.

        Raises:
            StoreError: the file is not a commscope store, has another schema version, or
                cannot be created.
        """
        where = Path(path).expanduser()
        return cls(where, connect(where))

    def close(self) -> None:
        """Close the connection; further calls do nothing."""
        self._conn.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _write(self, what: str) -> AbstractContextManager[sqlite3.Connection]:
        """Run the block as one transaction, committed before returning."""
        return write_transaction(self._conn, self.path, what)

    def _missing_run(self, ref: object) -> StoreError:
        return StoreError(f"no run {ref} in {self.path}; see 'commscope runs'")

    def _require_run(self, run_id: int) -> None:
        if self._conn.execute("SELECT 1 FROM runs WHERE id = ?", (run_id,)).fetchone() is None:
            raise self._missing_run(run_id)

    def _require_segment(self, c: sqlite3.Connection, run_id: int, segment_id: int) -> None:
        row = c.execute("SELECT run_id FROM segments WHERE id = ?", (segment_id,)).fetchone()
        if row is None or row[0] != run_id:
            raise StoreError(
                f"{self.path}: segment {segment_id} is not part of run {run_id};"
                " start one with start_segment first"
            )

    def create_run(
        self,
        kind: str,
        label: str | None,
        mpi: str | None,
        launcher: str | None,
        nranks: int | None,
        request: dict[str, Any],
    ) -> int:
        """Record a new run in status "running" and return its id."""
        with self._write("create a run") as c:
            return _insert_run(c, kind, label, mpi, launcher, nranks, request, "running")

    def start_segment(self, run_id: int, argv: list[str]) -> int:
        """Record one engine launch of ``run_id`` (status "running") and return its id."""
        with self._write("start a segment") as c:
            self._require_run(run_id)
            return _insert_segment(c, run_id, argv, "running")

    def add_complete_run(
        self,
        kind: str,
        label: str | None,
        nranks: int | None,
        request: dict[str, Any],
        argv: list[str],
        points: list[Point | Coll],
    ) -> int:
        """Store a whole run (one segment, every point) in one transaction; its id.

        For runs that exist complete before they are stored, such as imported files: the run
        appears with all its points or, should the store fail, not at all.

        Raises:
            StoreError: SQLite failed (nothing was stored), or two points share a key.
        """
        with self._write("store the run") as c:
            run_id = _insert_run(c, kind, label, None, None, nranks, request, "complete")
            segment = _insert_segment(c, run_id, argv, "complete")
            c.execute("UPDATE segments SET ended_unix = ? WHERE id = ?", (time.time(), segment))
            for point in points:
                self._insert_point(c, run_id, segment, point)
            return run_id

    def set_header(self, run_id: int, segment_id: int, header: Header) -> None:
        """Store the engine header on the segment, and on the run if it has none yet."""
        text = json.dumps(header.raw)
        with self._write("store a header") as c:
            self._require_segment(c, run_id, segment_id)
            c.execute(
                "UPDATE runs SET header_json = ? WHERE id = ? AND header_json IS NULL",
                (text, run_id),
            )
            c.execute("UPDATE segments SET header_json = ? WHERE id = ?", (text, segment_id))

    def add_point(
        self,
        run_id: int,
        segment_id: int,
        point: Point | Coll | Contention | Stream | Linpack | LogGP,
    ) -> None:
        """Store one measured point, committed before returning.

        The point's ``raw`` record is stored as is, so it must come from ``parse_record`` or
        ``record_from_dict`` (which validate it); reading it back does not validate again.

        Raises:
            StoreError: the run already has a point with the same (op, pair, bytes), or the
                segment does not belong to the run.
        """
        with self._write("store a point") as c:
            self._require_segment(c, run_id, segment_id)
            self._insert_point(c, run_id, segment_id, point)

    def _insert_point(
        self,
        c: sqlite3.Connection,
        run_id: int,
        segment_id: int,
        point: Point | Coll | Contention | Stream | Linpack | LogGP,
    ) -> None:
        record = json.dumps(point.raw)
        try:
            c.execute(
                "INSERT INTO points (run_id, segment_id, op, pair, bytes, n_samples,"
                " median_s, record_json) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (run_id, segment_id, *point.key, point.n_samples, point.median_s, record),
            )
        except sqlite3.IntegrityError:
            op, where, size = point.key
            raise StoreError(
                f"run {run_id} in {self.path} already has a point {op} {where}"
                f" {size} B; resume skips measured points, so drop the duplicate"
            ) from None

    def finish_segment(
        self,
        segment_id: int,
        status: str,
        message: str | None = None,
        end: dict[str, Any] | None = None,
    ) -> None:
        """Mark an engine launch as ended with ``status``, a one-line message and its end record."""
        end_text = None if end is None else json.dumps(end)
        with self._write("finish a segment") as c:
            cur = c.execute(
                "UPDATE segments SET ended_unix = ?, status = ?, message = ?, end_json = ?"
                " WHERE id = ?",
                (time.time(), status, message, end_text, segment_id),
            )
            if cur.rowcount == 0:
                raise StoreError(f"no segment {segment_id} in {self.path}; see 'commscope runs'")

    def close_running_segments(self, run_id: int, message: str) -> int:
        """Mark every segment of ``run_id`` still "running" as "incomplete" with ``message``.

        A segment stays "running" only when its process died before closing it (SIGKILL, a
        crash, a power cut); resuming the run closes it. Returns how many were closed.
        """
        with self._write("close running segments") as c:
            self._require_run(run_id)
            cur = c.execute(
                "UPDATE segments SET ended_unix = ?, status = 'incomplete', message = ?"
                " WHERE run_id = ? AND status = 'running'",
                (time.time(), message, run_id),
            )
            return cur.rowcount

    def set_run_status(self, run_id: int, status: str, message: str | None = None) -> None:
        """Set a run's status (one of RUN_STATUSES) and message."""
        if status not in RUN_STATUSES:
            raise ValueError(f"run status {status!r} is not one of {', '.join(RUN_STATUSES)}")
        with self._write("set a run's status") as c:
            cur = c.execute(
                "UPDATE runs SET status = ?, message = ? WHERE id = ?", (status, message, run_id)
            )
            if cur.rowcount == 0:
                raise self._missing_run(run_id)

    def set_run_data(self, run_id: int, kind: str, data: Any) -> None:
        """Keep derived data of ``kind`` with a run (replacing what was there)."""
        self._require_run(run_id)
        with self._write(f"store the run's {kind}") as c:
            c.execute(
                "INSERT OR REPLACE INTO run_data (run_id, kind, data_json) VALUES (?, ?, ?)",
                (run_id, kind, json.dumps(data)),
            )

    def run_data(self, run_id: int, kind: str) -> Any:
        """The run's derived data of ``kind``; None when there is none."""
        row = self._conn.execute(
            "SELECT data_json FROM run_data WHERE run_id = ? AND kind = ?", (run_id, kind)
        ).fetchone()
        return None if row is None else json.loads(row[0])

    def resolve_run(self, ref: str) -> int:
        """Turn "latest" or a run id typed by the user into an existing run id.

        Raises:
            StoreError: no such run.
            UsageError: ``ref`` is neither "latest" nor an integer.
        """
        text = ref.strip()
        if text == "latest":
            row = self._conn.execute("SELECT MAX(id) FROM runs").fetchone()
            if row[0] is None:
                raise StoreError(f"no run latest in {self.path}: no runs yet; run 'commscope run'")
            return int(row[0])
        if not re.fullmatch(r"[0-9]{1,19}", text) or int(text) > MAX_RUN_ID:
            raise UsageError(
                f"run {shown(ref)} is neither 'latest' nor a run id (a whole number"
                f" up to {MAX_RUN_ID}); see 'commscope runs'"
            )
        self._require_run(int(text))
        return int(text)

    def _run_info(self, row: sqlite3.Row) -> RunInfo:
        fields = dict(row)
        request = json.loads(fields.pop("request_json") or "{}")
        header = json.loads(fields.pop("header_json") or "null")
        return RunInfo(**fields, request=request, header=header)

    def get_run(self, run_id: int) -> RunInfo:
        """Return one run. Raises StoreError when there is no such run."""
        row = self._conn.execute(_RUN_QUERY + " WHERE r.id = ?", (run_id,)).fetchone()
        if row is None:
            raise self._missing_run(run_id)
        return self._run_info(row)

    def list_runs(self) -> list[RunInfo]:
        """Return every run, oldest first."""
        return [self._run_info(row) for row in self._conn.execute(_RUN_QUERY + " ORDER BY r.id")]

    def measurements(
        self, run_id: int
    ) -> list[Point | Coll | Contention | Stream | Linpack | LogGP]:
        """Return every measured record of a run, decoded once, ordered by op, pair and bytes."""
        return self._measurements(run_id)

    def points(self, run_id: int) -> list[Point]:
        """Return a run's point-to-point points ordered by op, pair and bytes."""
        return [p for p in self._measurements(run_id) if isinstance(p, Point)]

    def colls(self, run_id: int) -> list[Coll]:
        """Return a run's collective points ordered by op, group and bytes."""
        return [p for p in self._measurements(run_id) if isinstance(p, Coll)]

    def contentions(self, run_id: int) -> list[Contention]:
        """Return a run's contention points ordered by level, cf and bytes."""
        out = [p for p in self._measurements(run_id) if isinstance(p, Contention)]
        return sorted(out, key=lambda p: (p.level, p.cf, p.bytes))

    def streams(self, run_id: int) -> list[Stream]:
        """Return a run's TCP stream records ordered by pair and mean message size."""
        return [p for p in self._measurements(run_id) if isinstance(p, Stream)]

    def linpacks(self, run_id: int) -> list[Linpack]:
        """Return a run's Linpack points ordered by cores and matrix order."""
        out = [p for p in self._measurements(run_id) if isinstance(p, Linpack)]
        return sorted(out, key=lambda p: (p.cores, p.n))

    def loggps(self, run_id: int) -> list[LogGP]:
        """Return a run's LogGP points ordered by pair and bytes."""
        out = [p for p in self._measurements(run_id) if isinstance(p, LogGP)]
        return sorted(out, key=lambda p: (p.pair, p.bytes))

    def _measurements(
        self, run_id: int
    ) -> list[Point | Coll | Contention | Stream | Linpack | LogGP]:
        self._require_run(run_id)
        rows = self._conn.execute(
            "SELECT id, record_json FROM points WHERE run_id = ? ORDER BY op, pair, bytes",
            (run_id,),
        )
        out: list[Point | Coll | Contention | Stream | Linpack | LogGP] = []
        for point_id, text in rows:
            where = f"{self.path} point {point_id}"
            # Validated when it arrived; validating thousands of sample arrays again is slow.
            point = record_from_dict(json.loads(text), where, validate=False)
            if not isinstance(point, (Point, Coll, Contention, Stream, Linpack, LogGP)):
                raise _damaged(where, point, "point")
            out.append(point)
        return out

    def measured_keys(self, run_id: int) -> set[tuple[str, str, int]]:
        """Return the (op, pair, bytes) keys a run already has, e.g. to resume it."""
        self._require_run(run_id)
        rows = self._conn.execute("SELECT op, pair, bytes FROM points WHERE run_id = ?", (run_id,))
        return {(op, pair, int(size)) for op, pair, size in rows}

    def segments(self, run_id: int) -> list[SegmentInfo]:
        """Return a run's engine launches, oldest first."""
        self._require_run(run_id)
        segments = []
        for row in self._conn.execute(_SEGMENT_QUERY, (run_id,)):
            fields = dict(row)
            argv = tuple(json.loads(fields.pop("argv_json") or "[]"))
            header = json.loads(fields.pop("header_json") or "null")
            end = json.loads(fields.pop("end_json") or "null")
            segments.append(SegmentInfo(**fields, argv=argv, header=header, end=end))
        return segments
