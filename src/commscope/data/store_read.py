"""Decoding what a store row holds, refusing damage in one line.

Each function takes the text of one JSON column and says where it came from; JSON that does
not parse, or parses to the wrong shape (a list where the request object belongs, a header
the schema refuses, a point whose record is a header), is damage named by store, run and row.
:class:`commscope.data.store.Store` and ``commscope check-store`` decode through these.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from commscope.data.record_parse import record_from_dict
from commscope.data.records import (
    Coll,
    Contention,
    End,
    Header,
    Linpack,
    LogGP,
    Measured,
    Point,
    Queue,
    Stream,
)
from commscope.data.store_seal import Row, damaged
from commscope.errors import RecordError

Measurement = Measured  # every record stored as a point of its run
KIND_CLASSES: dict[str, type[Measurement]] = {
    "point": Point,
    "coll": Coll,
    "contention": Contention,
    "queue": Queue,
    "stream": Stream,
    "linpack": Linpack,
    "loggp": LogGP,
}


def decode(path: Path, text: Any, where: str, shape: type, readable: str) -> Any:
    """The JSON value of ``text``, which must be a ``shape`` (or NULL, giving None).

    NaN and Infinity are read: imports before the input rules stored them, and export
    refuses them by name.

    Raises:
        StoreError: not JSON, or not a ``shape``.
    """
    if text is None:
        return None
    try:
        data = json.loads(text)
    except (ValueError, TypeError, RecursionError):
        raise damaged(path, f"{where} is not JSON", readable) from None
    if not isinstance(data, shape):
        raise damaged(path, f"{where} is not a JSON {_names[shape]}", readable)
    return data


_names = {dict: "object", list: "array", object: "value"}


def header(path: Path, text: Any, where: str, readable: str) -> dict[str, Any] | None:
    """An engine header kept as JSON, checked against the record schema; None if NULL."""
    data: dict[str, Any] | None = decode(path, text, where, dict, readable)
    if data is not None:
        _record(path, data, where, readable, Header, validate=True)
    return data


def end(path: Path, text: Any, where: str, readable: str) -> dict[str, Any] | None:
    """What a launch ended with, as JSON; None if NULL.

    The engine's end record is checked against the record schema; node and hpcc launches
    keep other objects (their matrix order, their process grid), which are only objects.
    """
    data: dict[str, Any] | None = decode(path, text, where, dict, readable)
    if data is not None and data.get("type") == "end":
        _record(path, data, where, readable, End, validate=True)
    return data


def argv(path: Path, text: Any, where: str, readable: str) -> tuple[str, ...]:
    """A launch's argument list."""
    data = decode(path, text, where, list, readable) or []
    if not all(isinstance(a, str) for a in data):
        raise damaged(path, f"{where} is not a list of strings", readable)
    return tuple(data)


def measurement(
    path: Path, row: Row, where: str, readable: str, validate: bool = False
) -> Measurement:
    """The record of one ``points`` row, which must agree with the row's kind and key.

    Its samples were validated when the record arrived and the row's checksum says it has
    not changed since, so the schema is checked again only when ``validate`` (thousands of
    samples are slow).
    """
    data = decode(path, row["record_json"], f"{where} record_json", dict, readable)
    kind = data.get("type") if data else None
    cls = KIND_CLASSES.get(kind) if isinstance(kind, str) else None
    expected = row["kind"] if "kind" in row.keys() else None
    if cls is None or expected not in (None, kind):
        found = f"a {kind}" if isinstance(kind, str) and kind.isalpha() else "no"
        raise damaged(
            path, f"{where} holds {found} record, not a {expected or 'measurement'}", readable
        )
    record = _record(path, data, where, readable, cls, validate)
    assert isinstance(record, cls)  # _record checked it
    if record.key != (row["op"], row["pair"], row["bytes"]):
        raise damaged(path, f"{where} holds a record for another op, pair or size", readable)
    return record


def _record(
    path: Path, data: dict[str, Any], where: str, readable: str, cls: type, validate: bool
) -> Any:
    try:
        record = record_from_dict(data, where, validate=validate)
    except RecordError as err:
        raise damaged(path, f"{where} is not a valid record ({_reason(err)})", readable) from None
    if not isinstance(record, cls):
        found = type(record).__name__.lower()
        raise damaged(
            path, f"{where} holds a {found} record, not a {cls.__name__.lower()}", readable
        )
    return record


def _reason(err: RecordError) -> str:
    # The record error names where and how to rebuild the engine; only the reason fits here.
    text = err.one_line().split("not a valid record: ", 1)[-1]
    return text.split(" (expected schema", 1)[0][:160]
