"""Runs removed from the store (``commscope runs prune``), never one a baseline holds.

Which runs go is decided above (:mod:`commscope.jobs.prune`); here they are removed, each
with every row that names it (segments, points, run data, and any table with a ``run_id``
column), all in one transaction: a prune that fails leaves every run as it was. The
transaction reads the baselines again and the runs' status: a baseline made, or a run
resumed, since the caller chose keeps its runs. The file keeps its size until
:meth:`StorePrune.vacuum` rewrites it.
"""

from __future__ import annotations

from collections.abc import Sequence

from commscope.data import store_read as read
from commscope.data import store_schema as schema
from commscope.data.store_baselines import StoreBaselines
from commscope.data.store_file import guarded, reading

# Tables whose rows belong to a run through run_id, children first: points name segments.
_OWNED = tuple(
    table for table, cols in reversed(schema.COLUMNS.items()) if any(n == "run_id" for n, _ in cols)
)
_SPARED = "nothing was removed"


class StorePrune(StoreBaselines):
    """Removing runs from a store's connection."""

    def held_runs(self) -> dict[int, list[str]]:
        """Every run a baseline holds, with the names of the baselines that hold it.

        Raises:
            StoreError: a baseline's row is damaged: what it holds cannot be known.
        """
        held: dict[int, list[str]] = {}
        if not self._has_baselines():
            return held
        for row in self._rows("SELECT * FROM baselines ORDER BY name", (), "read its baselines"):
            where = f"baseline {row['name']!r}"
            self._check("baselines", row, where, _SPARED)
            body = read.decode(self.path, row["body_json"], where, dict, _SPARED) or {}
            for run in body.get("runs") or []:
                if isinstance(run, int):
                    held.setdefault(run, []).append(str(row["name"]))
        return held

    def prune_runs(self, run_ids: Sequence[int]) -> list[int]:
        """Remove the runs ``run_ids`` and all their rows in one transaction; those removed.

        A run a baseline holds, a run "running" (measuring, or resumed since it was chosen)
        and a run no longer there are left out.

        Raises:
            StoreError: SQLite failed or a baseline's row is damaged; nothing was removed.
        """
        wanted = sorted(set(run_ids))
        with self._write(f"remove {len(wanted)} runs") as c:
            held = self.held_runs()  # read again inside the transaction
            gone = []
            for run_id in wanted:
                row = c.execute("SELECT status FROM runs WHERE id = ?", (run_id,)).fetchone()
                if row is None or row["status"] == "running" or run_id in held:
                    continue
                for table in _OWNED:
                    c.execute(f"DELETE FROM {table} WHERE run_id = ?", (run_id,))
                c.execute("DELETE FROM runs WHERE id = ?", (run_id,))
                gone.append(run_id)
        self._sound.difference_update(gone)
        return gone

    def vacuum(self) -> None:
        """Rewrite the file without the space removed rows left (SQLite's VACUUM).

        It copies the whole store: it takes as long as the store is large and needs as much
        free space again.
        """
        writer = self._conn.writer or self._conn
        with guarded(self._conn), reading(self.path, "vacuum it"):
            writer.execute("VACUUM")
