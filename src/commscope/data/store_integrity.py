"""What ``commscope check-store`` finds: the file's checks, then every row, run by run.

Unlike :class:`commscope.data.store.Store`, which refuses at the first damage, this reads on
past it: each row is checked (checksum, JSON, record schema) on its own and counted as
readable or named as damaged, so the report says what each run still holds.
"""

from __future__ import annotations

import sqlite3
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from commscope.data import store_read as read
from commscope.data import store_schema as schema
from commscope.data.store_figures import unpacked
from commscope.data.store_file import integrity_problems, open_file, probe, row_name
from commscope.data.store_seal import Damage, check
from commscope.errors import StoreError


@dataclass
class RunIntegrity:
    """One run: what of it can be read and what is damaged."""

    id: int
    label: str | None = None
    readable: Counter[str] = field(default_factory=Counter)  # "segment", "point", ...
    damaged: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        """Plain data for ``--json``."""
        return {
            "id": self.id,
            "label": self.label,
            "readable": dict(self.readable),
            "damaged": self.damaged,
        }


@dataclass
class StoreIntegrity:
    """Everything found in one store file."""

    path: Path
    version: int | None = None
    problems: list[str] = field(default_factory=list)  # the file, its tables, SQLite's check
    runs: dict[int, RunIntegrity] = field(default_factory=dict)
    loose: list[str] = field(default_factory=list)  # damaged rows of no known run

    @property
    def ok(self) -> bool:
        """True when nothing is damaged."""
        return not (self.problems or self.loose or any(r.damaged for r in self.runs.values()))

    def to_json(self) -> dict[str, Any]:
        """Plain data for ``--json``."""
        return {
            "store": str(self.path),
            "ok": self.ok,
            "schema_version": self.version,
            "problems": self.problems,
            "runs": [r.to_json() for r in self.runs.values()],
            "other_damage": self.loose,
        }


def inspect_store(path: Path) -> StoreIntegrity:
    """Check the store at ``path`` without changing it.

    Raises:
        StoreError: there is no store at ``path`` or it is not a commscope store.
    """
    if probe(path):
        raise StoreError(f"no store at {path}; give the --store path of an existing store")
    found = StoreIntegrity(path)
    conn, _ = open_file(path, write=False)
    try:
        _check_file(conn, found)
        tables = schema.table_columns(conn) if not _broken(found) else {}
        orphans: dict[int, Counter[str]] = {}  # rows of runs the runs table does not hold
        for table, reader in _READERS.items():
            # A table without its columns was named among the problems; its rows are not read.
            if table in tables and not schema.missing_columns(
                table, tables[table], found.version or 2
            ):
                for run_id, n in _each_row(conn, found, table, reader).items():
                    orphans.setdefault(run_id, Counter())[table] += n
        found.loose += [_orphans(run_id, rows) for run_id, rows in sorted(orphans.items())]
        if "baselines" in tables:
            found.problems += _baseline_problems(conn, found.path)
    except (sqlite3.Error, UnicodeDecodeError) as err:
        found.problems.append(f"SQLite cannot read the file ({_text(err)})")
    finally:
        conn.close()
    return found


def _baseline_problems(conn: sqlite3.Connection, path: Path) -> list[str]:
    """A line per baseline whose row does not match its checksum."""
    out = []
    for row in conn.execute("SELECT * FROM baselines ORDER BY name"):
        try:
            check(path, "baselines", schema.COLUMNS["baselines"], row, "", "")
        except Damage:
            out.append(f"baseline {row['name']!r} does not match its checksum")
    return out


def _text(err: BaseException) -> str:
    return " ".join(str(err).split())[:200]


def _broken(found: StoreIntegrity) -> bool:
    return any(p.startswith("SQLite cannot") for p in found.problems)


def _check_file(conn: sqlite3.Connection, found: StoreIntegrity) -> None:
    try:
        versions = {row[0] for row in conn.execute("SELECT version FROM schema_version")}
    except (sqlite3.Error, UnicodeDecodeError) as err:
        found.problems.append(f"SQLite cannot read the schema version ({_text(err)})")
        return
    if len(versions) == 1 and next(iter(versions)) in schema.READABLE_VERSIONS:
        found.version = int(next(iter(versions)))
    else:
        readable = " or ".join(map(str, schema.READABLE_VERSIONS))
        found.problems.append(f"schema version {sorted(versions, key=str)}, not {readable}")
    found.problems += schema.structure_problems(schema.table_columns(conn), found.version or 2)
    found.problems += [f"SQLite integrity check: {line}" for line in integrity_problems(conn)]


def _orphans(run_id: int, rows: Counter[str]) -> str:
    """One line for every row of a run the runs table does not hold (not one line a row)."""
    held = ", ".join(f"{n} in {table}" for table, n in rows.items())
    return f"rows of run {run_id} ({held}) belong to no run in the store: its row in runs is lost"


def _each_row(
    conn: sqlite3.Connection,
    found: StoreIntegrity,
    table: str,
    reader: Callable[[StoreIntegrity, sqlite3.Row], str],
) -> Counter[int]:
    """Check each row of ``table``; count by run the rows of runs that are not in the store."""
    orphans: Counter[int] = Counter()
    for row in _rows(conn, found, table):
        run_id = row["id"] if table == "runs" else row["run_id"]
        if table == "runs":
            found.runs.setdefault(run_id, RunIntegrity(run_id))
        run = found.runs.get(run_id)
        if run is None:
            orphans[run_id] += 1
            continue
        try:
            if (found.version or 0) >= 2:
                check(found.path, table, schema.COLUMNS[table], row, row_name(table, row), "")
            kind = reader(found, row)
        except Damage as err:
            run.damaged.append(err.what)
            continue
        if table == "runs":
            run.label = row["label"]
        run.readable[kind] += 1
    return orphans


def _rows(conn: sqlite3.Connection, found: StoreIntegrity, table: str) -> Iterator[sqlite3.Row]:
    """The table's rows in id order, as far as SQLite can read them."""
    cursor = conn.execute(f"SELECT rowid AS _rowid, * FROM {table} ORDER BY rowid")
    last = None
    while True:
        try:
            row = cursor.fetchone()
        except (sqlite3.Error, UnicodeDecodeError) as err:
            after = f" after rowid {last}" if last is not None else ""
            found.problems.append(f"{table}: rows{after} cannot be read ({_text(err)})")
            return
        if row is None:
            return
        last = row["_rowid"]
        yield row


def _run(found: StoreIntegrity, row: sqlite3.Row) -> str:
    where = f"run {row['id']}"
    read.decode(found.path, row["request_json"], f"{where} request_json", dict, "")
    read.header(found.path, row["header_json"], f"{where} header_json", "")
    return "run row"


def _segment(found: StoreIntegrity, row: sqlite3.Row) -> str:
    where = row_name("segments", row)
    read.argv(found.path, row["argv_json"], f"{where} argv_json", "")
    read.header(found.path, row["header_json"], f"{where} header_json", "")
    end = row["end_json"] if "end_json" in row.keys() else None
    read.end(found.path, end, f"{where} end_json", "")
    return "segment"


def _point(found: StoreIntegrity, row: sqlite3.Row) -> str:
    record = read.measurement(found.path, row, row_name("points", row), "", validate=True)
    return str(record.raw["type"])


def _data(found: StoreIntegrity, row: sqlite3.Row) -> str:
    where = row_name("run_data", row)
    read.decode(found.path, row["data_json"], f"{where} data_json", object, "")
    return "data"


def _figure(found: StoreIntegrity, row: sqlite3.Row) -> str:
    unpacked(found.path, row, {}, "")
    return "figures"


_READERS: dict[str, Callable[[StoreIntegrity, sqlite3.Row], str]] = {
    "runs": _run,
    "segments": _segment,
    "points": _point,
    "run_data": _data,
    "run_figures": _figure,
}
