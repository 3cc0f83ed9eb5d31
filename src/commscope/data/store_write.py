"""The writing half of the store: rows inserted and changed, each sealed with its checksum.

:class:`commscope.data.store.Store` is this class plus the queries. Every row is inserted
with its id chosen here and its checksum over every column; a row is changed only after its
checksum is checked, so a damaged row is never sealed again as if it were sound. Before a
connection first writes into a run it did not create, every row of that run is checked
(:meth:`StoreWrites._sound_run`, with the checked reads of
:class:`commscope.data.store_rows.StoreRows`): nothing is added to a damaged run. The rest of
the store is not read, so a write costs what it touches, not the store's size.
"""

from __future__ import annotations

import json
import sqlite3
import time
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

from commscope.data import store_schema as schema
from commscope.data.records import Coll, Header, Point
from commscope.data.store_file import StoreConnection, row_name, write_transaction
from commscope.data.store_read import Measurement
from commscope.data.store_rows import StoreRows
from commscope.data.store_seal import sealed
from commscope.errors import StoreError

RUN_STATUSES = ("running", "complete", "incomplete")
# A run's rows, its own first. Points in key order, as readers get them: through the key
# index, so that counting them through the kind index (_points_agree) is a second witness.
_RUN_ROWS = (
    ("runs", "SELECT * FROM runs WHERE id = ?"),
    ("segments", "SELECT * FROM segments WHERE run_id = ? ORDER BY id"),
    ("points", "SELECT * FROM points WHERE run_id = ? ORDER BY op, pair, bytes"),
    ("run_data", "SELECT * FROM run_data WHERE run_id = ?"),
    ("run_figures", "SELECT * FROM run_figures WHERE run_id = ?"),  # writers see version 4
)
_OWNED = ("run_figures", "run_data", "segments")  # tables whose rows name their run: run_id


class StoreWrites(StoreRows):
    """A connection to a store and the writes to it; open one as ``Store.open(path)``."""

    def __init__(self, path: Path, conn: StoreConnection, version: int) -> None:
        super().__init__(path, conn, version)
        self._sound: set[int] = set()  # runs this connection created or checked whole

    def _write(self, what: str) -> AbstractContextManager[sqlite3.Connection]:
        """Run the block as one transaction, committed before returning."""
        return write_transaction(self._conn, self.path, what)

    def _sound_run(self, c: sqlite3.Connection, run_id: int) -> None:
        """Check every row of run ``run_id`` before this connection first writes into it.

        Rows are checked against their checksums, not decoded (a row that matches is as
        commscope wrote it), and the run's points are counted through a second index. A run
        this connection created, or checked before, is not read again.

        Raises:
            StoreError: no such run, or a row of it is damaged; nothing is written.
        """
        if run_id in self._sound:
            return
        nothing = f"nothing was written to run {run_id}"
        for table, sql in _RUN_ROWS:
            rows = c.execute(sql, (run_id,)).fetchall()
            if table == "runs" and not rows:
                raise self._missing_run(run_id)
            for row in rows:
                self._check_row(table, row, run_id, nothing)
            if table == "points":
                self._points_agree(run_id, len(rows), None, nothing)
        self._sound.add(run_id)

    def _insert(self, c: sqlite3.Connection, table: str, values: dict[str, Any]) -> int:
        """Insert one sealed row; its id (chosen here, so that the checksum covers it)."""
        columns = schema.COLUMNS[table]
        if columns[0][0] == "id":
            values["id"] = c.execute(f"SELECT COALESCE(MAX(id), 0) + 1 FROM {table}").fetchone()[0]
        row = sealed(columns, values)
        names = ", ".join(row)
        marks = ", ".join("?" * len(row))
        verb = "INSERT OR REPLACE" if table == "run_data" else "INSERT"
        c.execute(f"{verb} INTO {table} ({names}) VALUES ({marks})", tuple(row.values()))
        return int(row.get("id") or 0)

    def _update(
        self, c: sqlite3.Connection, table: str, where: str, params: tuple[Any, ...], **changes: Any
    ) -> int:
        """Change the rows matching ``where`` and seal them again; how many there were.

        Each row's checksum is checked first: sealing a damaged row would vouch for it.
        """
        columns = schema.COLUMNS[table]
        rows = c.execute(f"SELECT rowid AS _rowid, * FROM {table} WHERE {where}", params)
        count = 0
        for row in rows.fetchall():
            self._check(table, row, row_name(table, row), "nothing was changed")
            new = sealed(columns, {**{n: row[n] for n, _ in columns if n != "crc"}, **changes})
            sets = ", ".join(f"{name} = ?" for name in new)
            c.execute(f"UPDATE {table} SET {sets} WHERE rowid = ?", (*new.values(), row["_rowid"]))
            count += 1
        return count

    def _require_segment(self, c: sqlite3.Connection, run_id: int, segment_id: int) -> None:
        row = c.execute("SELECT run_id FROM segments WHERE id = ?", (segment_id,)).fetchone()
        if row is None or row[0] != run_id:
            raise StoreError(
                f"{self.path}: segment {segment_id} is not part of run {run_id};"
                " start one with start_segment first"
            )

    def _new_run(self, c: sqlite3.Connection, status: str, *values: Any) -> int:
        """Insert a run: ``values`` are its kind, label, mpi, launcher, nranks and request."""
        kind, label, mpi, launcher, nranks, request = values
        row = {"created_unix": time.time(), "kind": kind, "label": label, "status": status}
        row.update(mpi=mpi, launcher=launcher, nranks=nranks, request_json=json.dumps(request))
        return self._insert(c, "runs", dict(row, header_json=None, message=None))

    def _new_segment(self, c: sqlite3.Connection, run_id: int, argv: list[str], status: str) -> int:
        return self._insert(
            c,
            "segments",
            dict(
                run_id=run_id,
                started_unix=time.time(),
                ended_unix=None,
                status=status,
                argv_json=json.dumps(list(argv)),
                header_json=None,
                message=None,
                end_json=None,
            ),
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
            run_id = self._new_run(c, "running", kind, label, mpi, launcher, nranks, request)
        self._sound.add(run_id)  # empty, and written here
        return run_id

    def start_segment(self, run_id: int, argv: list[str]) -> int:
        """Record one engine launch of ``run_id`` (status "running") and return its id."""
        with self._write("start a segment") as c:
            self._sound_run(c, run_id)
            return self._new_segment(c, run_id, argv, "running")

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
            run_id = self._new_run(c, "complete", kind, label, None, None, nranks, request)
            segment = self._new_segment(c, run_id, argv, "complete")
            self._update(c, "segments", "id = ?", (segment,), ended_unix=time.time())
            for point in points:
                self._insert_point(c, run_id, segment, point)
        self._sound.add(run_id)
        return run_id

    def set_header(self, run_id: int, segment_id: int, header: Header) -> None:
        """Store the engine header on the segment, and on the run if it has none yet."""
        text = json.dumps(header.raw)
        with self._write("store a header") as c:
            self._require_segment(c, run_id, segment_id)
            self._sound_run(c, run_id)
            self._update(c, "runs", "id = ? AND header_json IS NULL", (run_id,), header_json=text)
            self._update(c, "segments", "id = ?", (segment_id,), header_json=text)

    def add_point(self, run_id: int, segment_id: int, point: Measurement) -> None:
        """Store one measured point, committed before returning.

        The point's ``raw`` record is stored as is, so it must come from ``parse_record`` or
        ``record_from_dict`` (which validate it); reading it back does not validate again.

        Raises:
            StoreError: the run already has a point with the same (op, pair, bytes), or the
                segment does not belong to the run.
        """
        with self._write("store a point") as c:
            self._require_segment(c, run_id, segment_id)
            self._sound_run(c, run_id)
            self._insert_point(c, run_id, segment_id, point)

    def _insert_point(
        self, c: sqlite3.Connection, run_id: int, segment_id: int, point: Measurement
    ) -> None:
        op, where, size = point.key
        values = dict(
            run_id=run_id,
            segment_id=segment_id,
            op=op,
            pair=where,
            bytes=size,
            n_samples=point.n_samples,
            median_s=point.median_s,
            record_json=json.dumps(point.raw),
            kind=point.raw["type"],
        )
        try:
            self._insert(c, "points", values)
        except sqlite3.IntegrityError:
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
            owner = c.execute("SELECT run_id FROM segments WHERE id = ?", (segment_id,)).fetchone()
            if owner is None:
                raise StoreError(f"no segment {segment_id} in {self.path}; see 'commscope runs'")
            self._sound_run(c, owner[0])
            self._update(
                c,
                "segments",
                "id = ?",
                (segment_id,),
                ended_unix=time.time(),
                status=status,
                message=message,
                end_json=end_text,
            )

    def close_running_segments(self, run_id: int, message: str) -> int:
        """Mark every segment of ``run_id`` still "running" as "incomplete" with ``message``.

        A segment stays "running" only when its process died before closing it (SIGKILL, a
        crash, a power cut); resuming the run closes it. Returns how many were closed.
        """
        with self._write("close running segments") as c:
            self._sound_run(c, run_id)
            return self._update(
                c,
                "segments",
                "run_id = ? AND status = 'running'",
                (run_id,),
                ended_unix=time.time(),
                status="incomplete",
                message=message,
            )

    def discard_empty_run(self, run_id: int) -> bool:
        """Remove run ``run_id`` if it holds no point and one launch at most; True if removed.

        For a launch that ended before its engine said anything (a --timeout shorter than
        the job's start): the store keeps no run that holds nothing.
        """
        with self._write(f"remove the empty run {run_id}") as c:
            points = c.execute("SELECT COUNT(*) FROM points WHERE run_id = ?", (run_id,))
            segments = c.execute("SELECT COUNT(*) FROM segments WHERE run_id = ?", (run_id,))
            if points.fetchone()[0] or segments.fetchone()[0] > 1:
                return False
            for table, key in (*((t, "run_id") for t in _OWNED), ("runs", "id")):
                c.execute(f"DELETE FROM {table} WHERE {key} = ?", (run_id,))
        self._sound.discard(run_id)
        return True

    def set_run_status(self, run_id: int, status: str, message: str | None = None) -> None:
        """Set a run's status (one of RUN_STATUSES) and message."""
        if status not in RUN_STATUSES:
            raise ValueError(f"run status {status!r} is not one of {', '.join(RUN_STATUSES)}")
        with self._write("set a run's status") as c:
            self._sound_run(c, run_id)
            self._update(c, "runs", "id = ?", (run_id,), status=status, message=message)

    def set_run_data(self, run_id: int, kind: str, data: Any) -> None:
        """Keep derived data of ``kind`` with a run (replacing what was there)."""
        with self._write(f"store the run's {kind}") as c:
            self._sound_run(c, run_id)
            self._insert(
                c, "run_data", {"run_id": run_id, "kind": kind, "data_json": json.dumps(data)}
            )
