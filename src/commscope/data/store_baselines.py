"""Named baselines in the store: one sealed row each, written whole or not at all.

A baseline's body (its runs, environment and every figure's center, band and samples) is
built by :mod:`commscope.check.baseline`; the store keeps it as JSON under its name. Stores
before version 3 have no baselines table: reading commands then see no baselines, and the
first writing command adds the table.
"""

from __future__ import annotations

import json
import sqlite3
import time
from typing import Any

from commscope.data import store_read as read
from commscope.data.store_write import StoreWrites
from commscope.errors import StoreError

NAME_FIX = "see 'commscope baseline list'"


class StoreBaselines(StoreWrites):
    """The baselines part of a store's connection."""

    def _has_baselines(self) -> bool:
        return self._has_table("baselines")

    def baseline_names(self) -> list[tuple[str, float]]:
        """(name, created_unix) of every baseline, by name (no body is decoded)."""
        if not self._has_baselines():
            return []
        rows = self._rows(
            "SELECT name, created_unix FROM baselines ORDER BY name", (), "read its baselines"
        )
        return [(str(r["name"]), float(r["created_unix"])) for r in rows]

    def baseline(self, name: str) -> dict[str, Any]:
        """The body of baseline ``name``.

        Raises:
            StoreError: no such baseline, or its row is damaged.
        """
        rows = []
        if self._has_baselines():
            rows = self._rows(
                "SELECT * FROM baselines WHERE name = ?", (name,), f"read baseline {name!r}"
            )
        if not rows:
            raise StoreError(f"no baseline {name!r} in {self.path}; {NAME_FIX}")
        where = f"baseline {name!r}"
        self._check("baselines", rows[0], where, "other baselines and every run can be read")
        body = read.decode(self.path, rows[0]["body_json"], where, dict, "runs can be read")
        assert isinstance(body, dict)
        return body

    def add_baseline(self, name: str, body: dict[str, Any], replace: bool = False) -> None:
        """Store baseline ``name`` in one transaction.

        ``replace``: a baseline of that name is replaced in the same transaction (a rebase:
        a check running meanwhile reads the old baseline or the new, never none).

        Raises:
            StoreError: a baseline of that name exists and ``replace`` is not given (nothing
                is changed).
        """
        text = json.dumps(body, allow_nan=False, separators=(",", ":"))
        with self._write(f"store baseline {name!r}") as c:
            if replace:
                c.execute("DELETE FROM baselines WHERE name = ?", (name,))
            try:
                self._insert(
                    c, "baselines", {"name": name, "created_unix": time.time(), "body_json": text}
                )
            except sqlite3.IntegrityError:
                raise StoreError(
                    f"baseline {name!r} exists in {self.path}; choose another name, or replace"
                    f" it ('commscope baseline create {name} ... --replace')"
                ) from None

    def delete_baseline(self, name: str) -> None:
        """Remove baseline ``name``.

        Raises:
            StoreError: no such baseline.
        """
        with self._write(f"delete baseline {name!r}") as c:
            gone = c.execute("DELETE FROM baselines WHERE name = ?", (name,)).rowcount
        if not gone:
            raise StoreError(f"no baseline {name!r} in {self.path}; {NAME_FIX}")
