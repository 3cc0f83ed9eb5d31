"""Row checksums: every row of a version 2 store carries the CRC-32 of its other columns.

SQLite's integrity check finds damaged pages and indexes that disagree with their tables,
but not a flipped byte inside a value: a label, a time, or JSON that still parses. The
checksum catches those. It covers every column (ids included: a run whose id changed would
silently lose its points) by name, so the file order of the columns does not matter.
Values are normalised to what SQLite stores before they are sealed (a REAL column keeps
3 as 3.0, NaN as NULL), so a row read back matches its checksum.
"""

from __future__ import annotations

import math
import sqlite3
import zlib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from commscope.errors import StoreError

Columns = Sequence[tuple[str, str]]  # (name, declared type) in file order
Row = Mapping[str, Any] | sqlite3.Row  # a row read from the file, or one about to be written


class Damage(StoreError):
    """Damage found in a store; ``what`` names it without the store's path or the fix."""

    def __init__(self, message: str, what: str) -> None:
        super().__init__(message)
        self.what = what


def damaged(path: Path, what: str, readable: str = "", migrating: bool = False) -> Damage:
    """The one-line error for damage found in the store at ``path``.

    Args:
        path: the store file.
        what: what is damaged, naming the table or the run and row.
        readable: what can still be read despite it.
        migrating: found while bringing a version 1 store up to date (nothing changed).
    """
    see = "'commscope check-store' lists what is damaged and what can still be read"
    if migrating:
        return Damage(
            f"{path} cannot be brought to the current store version: {what}; it is left as it"
            f" was, {see}",
            what,
        )
    readable = readable or "other runs may still be read"
    return Damage(f"{path} is damaged: {what}; {readable}, {see}", what)


def normal(columns: Columns, values: Mapping[str, Any]) -> dict[str, Any]:
    """``values`` as SQLite will store them in columns of those declared types."""
    types = dict(columns)
    out: dict[str, Any] = {}
    for name, value in values.items():
        kind = types[name]
        if value is None:
            out[name] = None
        elif kind == "INTEGER":
            out[name] = int(value)
        elif kind == "REAL":
            number = float(value)  # numpy floats too: their repr is not Python's
            out[name] = None if math.isnan(number) else number
        else:
            out[name] = str(value)
    return out


def row_crc(columns: Columns, row: Row) -> int:
    """The CRC-32 of a row's columns but ``crc``, each tagged with its name and type."""
    parts: list[bytes] = []  # one crc32 over the joined parts: the same as one call a part
    for name, _ in columns:
        if name == "crc":
            continue
        value = row[name]
        if value is None:
            parts.append(f"{name}\0n\0".encode())
        elif isinstance(value, int):
            parts.append(f"{name}\0i{value}\0".encode())
        elif isinstance(value, float):
            parts.append(f"{name}\0f{value.hex()}\0".encode())
        elif isinstance(value, str):
            body = value.encode("utf-8", "surrogatepass")
            parts += (f"{name}\0s{len(body)}\0".encode(), body)
        else:
            body = bytes(value)
            parts += (f"{name}\0b{len(body)}\0".encode(), body)
    return zlib.crc32(b"".join(parts))


def sealed(columns: Columns, values: Mapping[str, Any]) -> dict[str, Any]:
    """A whole row (every column of ``columns`` but crc given) normalised, with its crc."""
    row = normal(columns, values)
    row["crc"] = row_crc(columns, row)
    return row


def seal(c: sqlite3.Connection, table: str, rowid: int, columns: Columns) -> None:
    """Compute and store the checksum of one row as it is in the file."""
    names = ", ".join(name for name, _ in columns)
    row = c.execute(f"SELECT {names} FROM {table} WHERE rowid = ?", (rowid,)).fetchone()
    crc = row_crc(columns, dict(zip((n for n, _ in columns), row, strict=True)))
    c.execute(f"UPDATE {table} SET crc = ? WHERE rowid = ?", (crc, rowid))


def check(path: Path, table: str, columns: Columns, row: Row, where: str, readable: str) -> None:
    """Raise the damage error unless ``row`` (of ``table``) matches its checksum.

    Raises:
        StoreError: the row was changed outside commscope or damaged on disk.
    """
    if row["crc"] is None or row["crc"] != row_crc(columns, row):
        raise damaged(path, f"{where} (table {table}) does not match its checksum", readable)
