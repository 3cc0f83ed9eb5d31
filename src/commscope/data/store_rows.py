"""A store's connection and how its rows are read: each row checked as it is read.

:class:`StoreRows` is the base of :class:`commscope.data.store.Store`: the writes
(:mod:`commscope.data.store_write`) and the queries build on it. Nothing here reads more than
the rows asked for. A row is checked against its checksum (:mod:`commscope.data.store_seal`)
and against the run it was read for, since a changed index entry can hand a query another
run's row, sound in itself; a run's points, read through the key index, are counted again
through the kind index, so that an entry lost from either shows. Queries that must agree run
on one snapshot of the file. On a shared filesystem every read holds the store's lock
(:func:`commscope.data.store_file.guarded`), and inside a write transaction reads go through
the transaction's connection.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from commscope.data import store_schema as schema
from commscope.data.store_file import StoreConnection, guarded, reading, row_name
from commscope.data.store_seal import Damage, check, damaged
from commscope.errors import StoreError

_COUNT = "SELECT COUNT(*) FROM points WHERE run_id = ?"  # through the kind index
_RUN_TABLES = tuple(t for t in schema.RUN_TABLES if t != "runs")  # rows that belong to a run
_OTHERS = "the other runs can still be read"


class StoreRows:
    """A connection to a store and its checked reads of rows."""

    def __init__(self, path: Path, conn: StoreConnection, version: int) -> None:
        self.path = path
        self._conn = conn
        self._version = version

    def close(self) -> None:
        """Close the connection; further calls do nothing."""
        self._conn.close()

    @contextmanager
    def _snapshot(self, what: str) -> Iterator[None]:
        """Run the block's queries on one snapshot of the file (a read transaction).

        Two queries that must agree, such as points read and points counted, then see the same
        rows even while a run writes in between. Inside a write transaction: that one.
        """
        if self._conn.in_transaction or self._conn.in_write is not None:
            yield
            return
        with guarded(self._conn):
            with reading(self.path, what):
                self._conn.execute("BEGIN")
            try:
                yield
            finally:
                if self._conn.in_transaction:
                    self._conn.execute("ROLLBACK")  # it only read

    def _rows(self, sql: str, params: tuple[Any, ...], what: str) -> list[sqlite3.Row]:
        with reading(self.path, what), guarded(self._conn):
            return (self._conn.in_write or self._conn).execute(sql, params).fetchall()

    def _check(self, table: str, row: sqlite3.Row, where: str, readable: str) -> None:
        if self._version >= 2:  # version 1 rows carry no checksum
            check(self.path, table, schema.COLUMNS[table], row, where, readable)

    def _check_row(self, table: str, row: sqlite3.Row, run_id: int, readable: str) -> None:
        """Check a row read as one of run ``run_id``'s: its checksum, then that it is the run's.

        A changed index entry can hand a query another run's row, sound in itself.
        """
        where = row_name(table, row)
        self._check(table, row, where, readable)
        if row["id" if table == "runs" else "run_id"] != run_id:
            raise damaged(self.path, f"{where} was found among run {run_id}'s rows", readable)

    def _points_agree(self, run_id: int, found: int, kind: str | None, readable: str) -> None:
        """Raise the damage error unless the kind index counts ``found`` points of the run.

        The points were read through the key index: an entry lost from, or changed in, either
        index makes the two disagree, at the cost of counting the run's entries once more.
        Version 1 has no kind index.
        """
        if self._version < 2:
            return
        sql, params = (
            (_COUNT, (run_id,)) if kind is None else (f"{_COUNT} AND kind = ?", (run_id, kind))
        )
        counted = self._rows(sql, params, f"count run {run_id}'s points")[0][0]
        if counted != found:
            what = f"{kind} records" if kind else "points"
            raise damaged(
                self.path,
                f"run {run_id}'s {what} disagree with the index that counts them ({found} read,"
                f" {counted} counted)",
                readable,
            )

    def _has_table(self, name: str) -> bool:
        """Whether the file has table ``name`` (a later version may have added it)."""
        sql = "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?"
        return bool(self._rows(sql, (name,), "read its tables"))

    def _missing_run(self, run_id: int) -> StoreError:
        """No run N, or the damage to the runs table that explains why it is not found."""
        return self._runs_damage(run_id) or StoreError(
            f"no run {run_id} in {self.path}; see 'commscope runs'"
        )

    def _runs_damage(self, run_id: int | None) -> StoreError | None:
        """Damage that would make run ``run_id`` (None: every run) look absent, or None.

        A run's row can go while its other rows stay (a lost page, a deleted row), or its id
        can change (a flipped byte: the row then fails its checksum). Either way "no run 1"
        would send the user looking for a run the store does hold, in part. Read only when a
        run is not found.
        """
        which = "" if run_id is None else " WHERE run_id = ?"
        params = () if run_id is None else (run_id,)
        held = {
            table: self._rows(f"SELECT COUNT(*) FROM {table}{which}", params, "read its rows")[0][0]
            for table in _RUN_TABLES
        }
        if any(held.values()):
            rows = ", ".join(f"{n} in {table}" for table, n in held.items() if n)
            what = (
                f"the runs table has no rows, but the store holds runs' rows ({rows})"
                if run_id is None
                else f"the runs table has no row for run {run_id}, but the store holds its"
                f" rows ({rows})"
            )
            return damaged(self.path, what, _OTHERS)
        for row in self._rows("SELECT * FROM runs ORDER BY id", (), "read its runs"):
            try:
                self._check("runs", row, f"run {row['id']}", _OTHERS)
            except Damage as err:  # this row may be the run asked for, renumbered
                return err
        return None

    def _require_run(self, run_id: int) -> None:
        if not self._rows("SELECT 1 FROM runs WHERE id = ?", (run_id,), "read its runs"):
            raise self._missing_run(run_id)
