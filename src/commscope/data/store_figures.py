"""Each complete run's figure values in the store: one sealed row per figure.

A figure (:mod:`commscope.kinds.figures`) is what a check judges: a name, labels, and the
center of its raw samples. A history of a figure over hundreds of runs then reads one row per
run and figure instead of decoding every raw point of every run. The rows are computed from
the run's points by the jobs layer (:mod:`commscope.jobs.figures`) when a run completes, or
when a run stored before version 4 is first read by a command that may write; a run whose
figures are kept has a ``run_data`` row of kind :data:`FIGURES_KIND` (the marker) holding
how they were computed, how many there are, and the environment the run recorded. Both are
written in one transaction: a run has all its figures or none.
"""

from __future__ import annotations

import json
import math
import sqlite3
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from commscope.data import store_read as read
from commscope.data import store_schema as schema
from commscope.data.store_baselines import StoreBaselines
from commscope.data.store_seal import damaged, sealed

FIGURES_KIND = "figures"  # the run_data row that marks a run whose figures are kept
_OTHERS = "its runs can still be read from their points"
_COLUMNS = ", ".join(name for name, _ in schema.COLUMNS["run_figures"])


@dataclass(frozen=True)
class FigureValue:
    """One figure of one run as the store keeps it.

    Attributes:
        run_id: the run.
        name: the figure's name, e.g. ``p2p_latency_seconds``.
        labels: where and at which size it was measured.
        value: the center of its raw samples (their median), in ``unit``; positive for every
            figure a kind reads off raw samples, so ready for the log scale.
        unit: its base unit.
        n_samples: how many raw samples the center summarises.
    """

    run_id: int
    name: str
    labels: Mapping[str, str]
    value: float
    unit: str
    n_samples: int


def labels_text(labels: Mapping[str, str]) -> str:
    """The stored form of ``labels``: JSON with sorted keys (one text per label set)."""
    return json.dumps(dict(labels), sort_keys=True, separators=(",", ":"))


class StoreFigures(StoreBaselines):
    """The figure values part of a store's connection."""

    def keeps_figures(self) -> bool:
        """Whether the store has the run_figures table (version 4 and later)."""
        return self._has_table("run_figures")

    def figure_markers(self) -> dict[int, dict[str, Any]]:
        """Run id -> the marker of every run whose figures are kept ({} before version 4)."""
        if not self.keeps_figures():
            return {}
        rows = self._rows(
            "SELECT * FROM run_data WHERE kind = ?", (FIGURES_KIND,), "read its kept figures"
        )
        out = {}
        for row in rows:
            run_id = int(row["run_id"])
            self._check_row("run_data", row, run_id, _OTHERS)
            where = f"run {run_id} data {FIGURES_KIND!r}"
            marker = read.decode(self.path, row["data_json"], where, dict, _OTHERS)
            assert isinstance(marker, dict)
            out[run_id] = marker
        return out

    def figure_values(
        self, names: Sequence[str] | None = None, first_run: int | None = None
    ) -> list[FigureValue]:
        """The kept figure values, by run then name; each row checked against its checksum.

        Args:
            names: only figures of these names (through the name index); None: every one.
            first_run: only runs from this id on; None: every run.
        """
        if not self.keeps_figures():
            return []
        where: list[str] = []
        params: list[Any] = []
        if names is not None:
            if not names:
                return []
            where.append(f"name IN ({', '.join('?' * len(names))})")
            params += list(names)
        if first_run is not None:
            where.append("run_id >= ?")
            params.append(first_run)
        sql = f"SELECT {_COLUMNS} FROM run_figures"
        if where:
            sql += " WHERE " + " AND ".join(where)
        rows = self._rows(sql + " ORDER BY run_id, name", tuple(params), "read its figures")
        return self._values(rows)

    def _values(self, rows: Iterable[sqlite3.Row]) -> list[FigureValue]:
        labels: dict[str, dict[str, str]] = {}  # one decoding per label set, not per row
        out = []
        for row in rows:
            run_id = int(row["run_id"])
            self._check_row("run_figures", row, run_id, _OTHERS)
            text = row["labels_json"]
            if text not in labels:
                where = f"run {run_id} figure {row['name']} labels_json"
                found = read.decode(self.path, text, where, dict, _OTHERS)
                if not isinstance(found, dict) or not all(
                    isinstance(v, str) for v in found.values()
                ):
                    raise damaged(self.path, f"{where} is not a set of labels", _OTHERS)
                labels[text] = found
            if row["value"] is None:
                raise damaged(self.path, f"run {run_id} figure {row['name']} has no value", _OTHERS)
            out.append(
                FigureValue(
                    run_id,
                    str(row["name"]),
                    labels[text],
                    float(row["value"]),
                    str(row["unit"]),
                    int(row["n_samples"]),
                )
            )
        return out

    def keep_figures(
        self, run_id: int, values: Sequence[FigureValue], marker: Mapping[str, Any]
    ) -> None:
        """Keep run ``run_id``'s figure values and their marker, replacing what was kept.

        One transaction: the run has all its figures and the marker, or neither. Every row
        of the run is checked first (as before any write into a run).

        Raises:
            StoreError: a value is of another run, or SQLite failed (nothing is changed).
            ValueError: a value is not finite.
        """
        columns = schema.COLUMNS["run_figures"]
        rows = []
        for v in values:
            if v.run_id != run_id:
                raise ValueError(f"a figure of run {v.run_id} given to keep with run {run_id}")
            if not math.isfinite(v.value):
                raise ValueError(f"figure {v.name} of run {run_id} has no finite value")
            row = sealed(
                columns,
                {
                    "run_id": run_id,
                    "name": v.name,
                    "labels_json": labels_text(v.labels),
                    "value": v.value,
                    "unit": v.unit,
                    "n_samples": v.n_samples,
                },
            )
            rows.append(tuple(row[name] for name, _ in columns))
        marks = ", ".join("?" * len(columns))
        with self._write(f"keep run {run_id}'s figures") as c:
            self._sound_run(c, run_id)
            c.execute("DELETE FROM run_figures WHERE run_id = ?", (run_id,))
            c.executemany(f"INSERT INTO run_figures ({_COLUMNS}) VALUES ({marks})", rows)
            text = json.dumps(dict(marker), allow_nan=False)
            self._insert(c, "run_data", {"run_id": run_id, "kind": FIGURES_KIND, "data_json": text})
