"""SQLite store of runs, engine launches (segments) and measured points.

Indexed columns sit next to the raw JSON of each record, so analyses can always go back to
the samples. Every write is its own committed transaction: a killed run keeps each point it
finished, and every row it writes is sealed with a checksum (:mod:`commscope.data.store_seal`)
that each read verifies. A query reads what it answers and no more, through the indexes, so
its cost follows the runs it reads rather than the store's size: listing runs decodes no
JSON, reading a run's points counts them again through a second index, which must agree.
Opening the file, creating its tables and running write transactions are the job of
:mod:`commscope.data.store_file`; decoding a row's JSON that of
:mod:`commscope.data.store_read`; this module holds the queries.
"""

from __future__ import annotations

import os
import re
import sqlite3
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, TypeVar

from commscope.data import location
from commscope.data import store_read as read
from commscope.data.record_parse import record_from_dict
from commscope.data.records import (
    Coll,
    Contention,
    Header,
    Linpack,
    LogGP,
    Point,
    Queue,
    Stream,
)
from commscope.data.store_figures import StoreFigures

# Re-exported: callers import the file's constants from here.
from commscope.data.store_file import APPLICATION_ID as APPLICATION_ID
from commscope.data.store_file import BUSY_TIMEOUT_MS as BUSY_TIMEOUT_MS
from commscope.data.store_file import SCHEMA_VERSION as SCHEMA_VERSION
from commscope.data.store_file import connect
from commscope.data.store_prune import StorePrune
from commscope.data.store_read import Measurement
from commscope.data.store_seal import damaged
from commscope.data.store_write import RUN_STATUSES as RUN_STATUSES
from commscope.errors import StoreError, UsageError
from commscope.strict import shown

MAX_RUN_ID = 2**63 - 1  # SQLite's largest INTEGER
_M = TypeVar("_M", Point, Coll, Contention, Queue, Stream, Linpack, LogGP)

# The columns RunInfo and SegmentInfo take as they are; *_json columns are decoded.
_RUN_FIELDS = (
    *("id", "created_unix", "kind", "label", "status", "mpi", "launcher", "nranks"),
    *("message", "n_points", "request_json", "header_json"),
)
_SEGMENT_FIELDS = ("id", "run_id", "started_unix", "ended_unix", "status", "message", "n_points")
# Points per run: a search of the kind index per run, which reads no point row. Listing every
# run also counts all points (SQLite counts the entries of its smallest index, the segment
# index), in the same statement: one snapshot, so a run writing meanwhile cannot skew them.
_RUN_QUERY = """SELECT r.*, (SELECT COUNT(*) FROM points p WHERE p.run_id = r.id) AS n_points
    FROM runs r"""
_LIST_QUERY = """SELECT r.*, (SELECT COUNT(*) FROM points p WHERE p.run_id = r.id) AS n_points,
    (SELECT COUNT(*) FROM points) AS all_points FROM runs r ORDER BY r.id"""
_SEGMENT_QUERY = """SELECT s.*, (SELECT COUNT(*) FROM points p WHERE p.segment_id = s.id)
    AS n_points FROM segments s WHERE s.run_id = ? ORDER BY s.id"""
_POINTS_QUERY = "SELECT * FROM points WHERE run_id = ?{} ORDER BY op, pair, bytes"
_OTHERS = "the other runs can still be read"


def _header_record(data: dict[str, Any] | None, where: str) -> Header | None:
    # The header was checked against the schema when it was read from the store.
    if data is None:
        return None
    header = record_from_dict(data, where, validate=False)
    assert isinstance(header, Header)
    return header


@dataclass(frozen=True)
class RunInfo:
    """One stored run: what was asked for, its engine header (as JSON) and how far it got.

    ``request`` and ``header`` are decoded from the row's JSON when first asked for, so that
    listing runs decodes none (a header lists every rank). :meth:`Store.get_run` decodes both
    at once: damage in them is reported there.
    """

    id: int
    created_unix: float
    kind: str
    label: str | None
    status: str
    mpi: str | None
    launcher: str | None
    nranks: int | None
    message: str | None
    n_points: int
    request_json: str | None = field(repr=False)
    header_json: str | None = field(repr=False)
    store_path: Path = field(repr=False, compare=False)  # named in a damage error

    @cached_property
    def request(self) -> dict[str, Any]:
        """What was asked for, as stored with the run."""
        where = f"run {self.id} request_json"
        return read.decode(self.store_path, self.request_json, where, dict, _OTHERS) or {}

    @cached_property
    def header(self) -> dict[str, Any] | None:
        """The run's first engine header as JSON; None before the engine started."""
        where = f"run {self.id} header_json"
        return read.header(self.store_path, self.header_json, where, _OTHERS)

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


# Records arrive ordered by op, pair and bytes; these kinds read better in another order.
_ORDER: dict[type, Callable[[Any], tuple[Any, ...]]] = {
    Contention: lambda p: (p.level, p.cf, p.bytes),
    Linpack: lambda p: (p.cores, p.n),
    LogGP: lambda p: (p.pair, p.bytes),
}


def of_class(records: Sequence[object], cls: type[_M]) -> list[_M]:
    """The records of class ``cls``, in the order the store's accessors give."""
    out = [r for r in records if isinstance(r, cls)]
    key = _ORDER.get(cls)
    return sorted(out, key=key) if key else out


class Store(StorePrune, StoreFigures):
    """A commscope SQLite store. Open it with ``Store.open(path)``.

    A store opened for reading is never changed. An older store (version 1: no ``kind``
    column, no checksums) is read as it is rather than migrated: reading must work on a
    read-only file and must not rewrite a store another commscope may be using; the first
    writing command brings it to the current version. Opening reads no row: each is checked
    when a query reads it, so a command costs what it reads, not the store's size.
    """

    @classmethod
    def open(cls, path: str | os.PathLike[str], write: bool = True, create: bool = True) -> Store:
        """Open the store at ``path``, creating it (and its directory) when absent.

        Args:
            path: the store file.
            write: open it to write (a run's rows are checked before the first write into
                it); False opens it read-only.
            create: when writing, create the store if it is absent; False refuses an
                absent store as reading does (for writes into what a store holds).

        Raises:
            StoreError: not a commscope store, another schema version, a table or column
                missing, read-only while ``write``, absent while not ``create``, or cannot
                be created.
        """
        problem = location.sudo_store_problem(os.fspath(path))
        if problem:
            raise StoreError(problem)
        where = Path(path).expanduser()
        return cls(where, *connect(where, write, create))

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def run_data(self, run_id: int, kind: str) -> Any:
        """The run's derived data of ``kind``; None when there is none."""
        sql = "SELECT * FROM run_data WHERE run_id = ? AND kind = ?"
        rows = self._rows(sql, (run_id, kind), f"read run {run_id}'s {kind}")
        return self._run_data_row(rows[0], run_id, kind) if rows else None

    def run_data_after(self, kind: str, after_run: int) -> dict[int, Any]:
        """The derived data of ``kind`` of every run after run ``after_run``, by run id.

        E.g. the check verdicts kept since a baseline's newest run: reads those rows only.
        """
        sql = "SELECT * FROM run_data WHERE run_id > ? AND kind = ? ORDER BY run_id"
        rows = self._rows(sql, (after_run, kind), f"read the runs' {kind}")
        return {int(r["run_id"]): self._run_data_row(r, int(r["run_id"]), kind) for r in rows}

    def _run_data_row(self, row: sqlite3.Row, run_id: int, kind: str) -> Any:
        self._check_row("run_data", row, run_id, _OTHERS)
        where = f"run {run_id} data {kind!r}"
        return read.decode(self.path, row["data_json"], where, object, _OTHERS)

    def resolve_run(self, ref: str) -> int:
        """Turn "latest" or a run id typed by the user into an existing run id.

        Raises:
            StoreError: no such run.
            UsageError: ``ref`` is neither "latest" nor an integer.
        """
        text = self.check_ref(ref)
        if text == "latest":
            row = self._rows("SELECT MAX(id) FROM runs", (), "read its runs")[0]
            if row[0] is None:
                raise self._runs_damage(None) or StoreError(
                    f"no run latest in {self.path}: no runs yet; run 'commscope run'"
                )
            return int(row[0])
        self._require_run(int(text))
        return int(text)

    @staticmethod
    def check_ref(ref: str) -> str:
        """``ref`` stripped if it is "latest" or a run id in form; before any store is read.

        Raises:
            UsageError: ``ref`` is neither "latest" nor a whole number up to MAX_RUN_ID.
        """
        text = ref.strip()
        if text != "latest" and (not re.fullmatch(r"[0-9]{1,19}", text) or int(text) > MAX_RUN_ID):
            raise UsageError(
                f"run {shown(ref)} is neither 'latest' nor a run id (a whole number"
                f" up to {MAX_RUN_ID}); see 'commscope runs'"
            )
        return text

    def _run_info(self, row: sqlite3.Row) -> RunInfo:
        self._check("runs", row, f"run {row['id']}", _OTHERS)
        return RunInfo(**{name: row[name] for name in _RUN_FIELDS}, store_path=self.path)

    def get_run(self, run_id: int) -> RunInfo:
        """Return one run, its request and header decoded.

        Raises:
            StoreError: no such run, or its row is damaged.
        """
        rows = self._rows(_RUN_QUERY + " WHERE r.id = ?", (run_id,), f"read run {run_id}")
        if not rows:
            raise self._missing_run(run_id)
        info = self._run_info(rows[0])
        _ = info.request, info.header  # decoded now: damage is reported here
        return info

    def list_runs(self) -> list[RunInfo]:
        """Return every run, oldest first; each row is checked, its JSON decoded when used.

        Raises:
            StoreError: a run's row is damaged, or the points counted run by run are not all
                the points (an index of the points table lost or changed an entry).
        """
        rows = self._rows(_LIST_QUERY, (), "read its runs")
        runs = [self._run_info(row) for row in rows]
        listed = sum(run.n_points for run in runs)
        if rows and listed != rows[0]["all_points"]:
            raise damaged(
                self.path,
                f"the indexes of its points disagree ({listed} counted run by run,"
                f" {rows[0]['all_points']} in all)",
                "each run's points are checked again when it is read",
            )
        return runs

    def records(self, run_id: int, kind: str) -> list[Measurement]:
        """Return a run's records of one kind ordered by op, pair and bytes.

        Args:
            run_id: the run.
            kind: the records' type as the engine writes it: "point", "coll",
                "contention", "queue", "stream", "linpack" or "loggp".

        Raises:
            StoreError: no such run, or one of its rows is damaged.
            ValueError: ``kind`` is not a measurement kind.
        """
        if kind not in read.KIND_CLASSES:
            raise ValueError(f"record kind {kind!r} is not one of {', '.join(read.KIND_CLASSES)}")
        return [r for r in self._read_points(run_id, kind) if r.raw["type"] == kind]

    def measurements(self, run_id: int) -> list[Measurement]:
        """Return every measured record of a run, each decoded once, ordered by op, pair, bytes.

        Raises:
            StoreError: no such run, or one of its rows is damaged.
        """
        return self._read_points(run_id, None)

    def _read_points(self, run_id: int, kind: str | None) -> list[Measurement]:
        self._require_run(run_id)
        if self._version == 1 or kind is None:  # version 1 has no kind column: decode all
            params: tuple[Any, ...] = (run_id,)
            sql = _POINTS_QUERY.format("")
        else:
            params = (run_id, kind)
            sql = _POINTS_QUERY.format(" AND kind = ?")
        out = []
        with self._snapshot(f"read run {run_id}'s points"):
            rows = self._rows(sql, params, f"read run {run_id}'s points")
            for row in rows:
                self._check_row("points", row, run_id, _OTHERS)
            self._points_agree(run_id, len(rows), kind, _OTHERS)
        for row in rows:
            where = f"run {run_id} point {row['id']}"
            out.append(read.measurement(self.path, row, where, _OTHERS))
        return out

    def _of(self, run_id: int, cls: type[_M]) -> list[_M]:
        kind = next(k for k, c in read.KIND_CLASSES.items() if c is cls)
        return of_class(self.records(run_id, kind), cls)

    def points(self, run_id: int) -> list[Point]:
        """Return a run's point-to-point points ordered by op, pair and bytes."""
        return self._of(run_id, Point)

    def colls(self, run_id: int) -> list[Coll]:
        """Return a run's collective points ordered by op, group and bytes."""
        return self._of(run_id, Coll)

    def contentions(self, run_id: int) -> list[Contention]:
        """Return a run's contention points ordered by level, cf and bytes."""
        return self._of(run_id, Contention)

    def queues(self, run_id: int) -> list[Queue]:
        """Return a run's queue points (contention level queue) ordered by stream size."""
        return self._of(run_id, Queue)

    def streams(self, run_id: int) -> list[Stream]:
        """Return a run's TCP stream records ordered by pair and mean message size."""
        return self._of(run_id, Stream)

    def linpacks(self, run_id: int) -> list[Linpack]:
        """Return a run's Linpack points ordered by cores and matrix order."""
        return self._of(run_id, Linpack)

    def loggps(self, run_id: int) -> list[LogGP]:
        """Return a run's LogGP points ordered by pair and bytes."""
        return self._of(run_id, LogGP)

    def measured_keys(self, run_id: int) -> set[tuple[str, str, int]]:
        """Return the (op, pair, bytes) keys a run already has, e.g. to resume it."""
        self._require_run(run_id)
        sql = "SELECT op, pair, bytes FROM points WHERE run_id = ?"
        return {
            (op, pair, int(size))
            for op, pair, size in self._rows(sql, (run_id,), f"read run {run_id}'s points")
        }

    def segments(self, run_id: int) -> list[SegmentInfo]:
        """Return a run's engine launches, oldest first."""
        self._require_run(run_id)
        out = []
        for row in self._rows(_SEGMENT_QUERY, (run_id,), f"read run {run_id}'s segments"):
            where = f"run {run_id} segment {row['id']}"
            self._check_row("segments", row, run_id, _OTHERS)
            fields = {name: row[name] for name in _SEGMENT_FIELDS}
            argv = read.argv(self.path, row["argv_json"], f"{where} argv_json", _OTHERS)
            header = read.header(self.path, row["header_json"], f"{where} header_json", _OTHERS)
            end_text = row["end_json"] if "end_json" in row.keys() else None
            end = read.end(self.path, end_text, f"{where} end_json", _OTHERS)
            out.append(SegmentInfo(**fields, argv=argv, header=header, end=end))
        return out
