"""Each complete run's figure values in the store: one sealed row per run and figure name.

A figure (:mod:`commscope.kinds.figures`) is what a check judges: a name, labels, and the
center of its raw samples. A history of a figure over hundreds of runs then reads the values
kept per run instead of decoding every raw point of every run. A row holds every figure of
one name in one run: the name and unit in their columns (a history of one name reads its
rows through an index), and the figures as JSON, ``{"labels": [...], "values": [...],
"n_samples": [...]}``, each figure's labels as the text of a JSON object with sorted keys.
One row per name rather than per figure keeps the cost of reading near that of SQLite's own
decoding: 10,000 figures of a run are a few rows, one checksum each.

The values are computed from the run's points by the jobs layer (:mod:`commscope.jobs.figures`)
when a run completes, or when a run stored before version 4 is first read by a command that
may write; a run whose figures are kept has a ``run_data`` row of kind :data:`FIGURES_KIND`
(the marker) holding how they were computed, how many there are, and the environment the run
recorded. All are written in one transaction: a run has all its figures or none.
"""

from __future__ import annotations

import json
import math
import sqlite3
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from commscope.data import store_read as read
from commscope.data import store_schema as schema
from commscope.data.store_baselines import StoreBaselines
from commscope.data.store_file import row_name
from commscope.data.store_seal import damaged, sealed

FIGURES_KIND = "figures"  # the run_data row that marks a run whose figures are kept
_OTHERS = "its runs can still be read from their points"
_COLUMNS = ", ".join(name for name, _ in schema.COLUMNS["run_figures"])
Labels = dict[str, dict[str, str]]  # label text -> the labels, decoded once per text


class FigureValue(NamedTuple):
    """One figure of one run as the store keeps it (a tuple: a history makes 10^7 of them).

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


def unpacked(path: Path, row: sqlite3.Row, labels: Labels, readable: str) -> list[FigureValue]:
    """The figure values of one run_figures row, its JSON checked for shape.

    ``labels`` caches decoded label texts across rows (the same in every run).

    Raises:
        StoreError: the JSON is not of the shape :meth:`StoreFigures.keep_figures` writes.
    """
    where = row_name("run_figures", row)
    body = read.decode(path, row["figures_json"], f"{where} figures_json", dict, readable)
    if body is None:
        raise damaged(path, f"{where} figures_json is empty", readable)
    texts, values, counts = (body.get(k) for k in ("labels", "values", "n_samples"))
    if not (
        isinstance(texts, list)
        and isinstance(values, list)
        and isinstance(counts, list)
        and len(texts) == len(values) == len(counts)
        and _numbers(values, "f")
        and _numbers(counts, "i")
    ):
        raise damaged(path, f"{where} figures_json is not figures' labels and values", readable)
    if not all(isinstance(text, str) for text in texts):
        raise damaged(path, f"{where} holds labels that are not text", readable)
    new = [text for text in dict.fromkeys(texts) if text not in labels]
    if new:  # one decoding for all of them: the first row read holds every label set
        decoded = read.decode(path, f"[{','.join(new)}]", f"{where} labels", list, readable)
        if len(decoded) != len(new):  # a text that is not one JSON value
            raise damaged(path, f"{where} holds labels that are not one object each", readable)
        for text, found in zip(new, decoded, strict=True):
            if not isinstance(found, dict) or not all(isinstance(v, str) for v in found.values()):
                raise damaged(path, f"{where} holds labels that are not text", readable)
            labels[text] = found
    run_id, name, unit = int(row["run_id"]), str(row["name"]), str(row["unit"])
    return [
        FigureValue(run_id, name, labels[text], float(value), unit, count)
        for text, value, count in zip(texts, values, counts, strict=True)
    ]


def _numbers(found: list[Any], kind: str) -> bool:
    """Whether ``found`` holds only finite numbers (``f``) or only whole numbers (``i``)."""
    if not found:
        return True
    import numpy as np  # here, not at the top: the command line starts without it

    try:
        array = np.asarray(found)
    except ValueError:  # ragged: a list among them
        return False
    if kind == "i":
        return array.dtype.kind in "iu"
    return array.dtype.kind in "iuf" and bool(np.isfinite(array).all())


class StoreFigures(StoreBaselines):
    """The figure values part of a store's connection."""

    def keeps_figures(self) -> bool:
        """Whether the store has the run_figures table (version 4 and later)."""
        return self._has_table("run_figures")

    def figure_markers(self, first_run: int | None = None) -> dict[int, dict[str, Any]]:
        """Run id -> the marker of every run (from ``first_run`` on) whose figures are kept.

        {} before version 4.
        """
        if not self.keeps_figures():
            return {}
        rows = self._rows(
            "SELECT * FROM run_data WHERE kind = ? AND run_id >= ?",
            (FIGURES_KIND, first_run or 0),
            "read its kept figures",
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
        """The kept figure values, run by run, in the order they were kept.

        Each row is checked against its checksum, its JSON for shape.

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
        rows = self._rows(sql + " ORDER BY run_id, rowid", tuple(params), "read its figures")
        labels: Labels = {}
        out = []
        for row in rows:
            self._check_row("run_figures", row, int(row["run_id"]), _OTHERS)
            out += unpacked(self.path, row, labels, _OTHERS)
        return out

    def keep_figures(
        self, run_id: int, values: Sequence[FigureValue], marker: Mapping[str, Any]
    ) -> None:
        """Keep run ``run_id``'s figure values and their marker, replacing what was kept.

        One transaction: the run has all its figures and the marker, or neither. Every row
        of the run is checked first (as before any write into a run).

        Raises:
            StoreError: SQLite failed (nothing is changed).
            ValueError: a value is of another run or not finite, or two figures of one name
                disagree on the unit.
        """
        by_name: dict[str, tuple[str, dict[str, list[Any]]]] = {}
        for v in values:
            if v.run_id != run_id:
                raise ValueError(f"a figure of run {v.run_id} given to keep with run {run_id}")
            if not math.isfinite(v.value):
                raise ValueError(f"figure {v.name} of run {run_id} has no finite value")
            unit, body = by_name.setdefault(
                v.name, (v.unit, {"labels": [], "values": [], "n_samples": []})
            )
            if unit != v.unit:
                raise ValueError(f"figure {v.name} of run {run_id} in {v.unit} and in {unit}")
            body["labels"].append(labels_text(v.labels))
            body["values"].append(v.value)
            body["n_samples"].append(v.n_samples)
        columns = schema.COLUMNS["run_figures"]
        rows = []
        for name, (unit, body) in by_name.items():
            text = json.dumps(body, allow_nan=False, separators=(",", ":"))
            row = sealed(
                columns, {"run_id": run_id, "name": name, "unit": unit, "figures_json": text}
            )
            rows.append(tuple(row[n] for n, _ in columns))
        marks = ", ".join("?" * len(columns))
        with self._write(f"keep run {run_id}'s figures") as c:
            self._sound_run(c, run_id)
            c.execute("DELETE FROM run_figures WHERE run_id = ?", (run_id,))
            c.executemany(f"INSERT INTO run_figures ({_COLUMNS}) VALUES ({marks})", rows)
            text = json.dumps(dict(marker), allow_nan=False)
            self._insert(c, "run_data", {"run_id": run_id, "kind": FIGURES_KIND, "data_json": text})
