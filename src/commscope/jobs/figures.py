"""Each run's figure values, kept in the store when the run completes and read back for a history.

A history over hundreds of runs reads the kept values (:mod:`commscope.data.store_figures`):
one row per run and figure, not every raw point. A run that has none kept (stored before the
store kept them, or by a command that does not keep them) is read from its points once; a
complete one is then kept, when the store can be written, so the next history reads its
values. An incomplete run (it may still be resumed) is read from its points every time.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from commscope.data.run_data import RunData, read_run
from commscope.data.store import RunInfo, Store
from commscope.data.store_figures import FigureValue
from commscope.errors import CommscopeError, StoreError


@dataclass(frozen=True)
class StoredFigures:
    """The figures of the stored runs a history reads.

    Attributes:
        runs: the runs, oldest first.
        values: their figure values (only the names asked for), run by run.
        environments: run id -> the environment it recorded
            (:func:`commscope.check.environment.of_run`).
        kept: runs whose figures this read kept in the store.
        not_kept: why figures read from points could not be kept (a read-only store), or None.
    """

    runs: list[RunInfo]
    values: list[FigureValue]
    environments: dict[int, dict[str, Any]]
    kept: list[int] = field(default_factory=list)
    not_kept: str | None = None


def of_run(run: RunData) -> tuple[list[FigureValue], dict[str, Any]]:
    """A run's figure values (those with samples) and the environment it recorded."""
    from commscope.check import environment
    from commscope.kinds import run_figures

    values = [
        FigureValue(run.info.id, f.spec.name, dict(f.labels), f.center, f.spec.unit, len(f.samples))
        for f in run_figures(run)
        if f.samples
    ]
    return values, environment.of_run(run)


def _marker(values: Sequence[FigureValue], env: dict[str, Any]) -> dict[str, Any]:
    from commscope.kinds.figures import FIGURES_VERSION

    return {"version": FIGURES_VERSION, "figures": len(values), "environment": env}


def keep(store: Store, run_id: int) -> bool:
    """Keep run ``run_id``'s figure values in the store if it is complete; whether kept.

    Called when a run completes. The values summarise stored points: a store that refuses
    them (busy past its timeout) costs the first history that reads the run a pass over its
    points, not the run, so that is not an error.
    """
    try:
        run = read_run(store, run_id)
        if run.info.status != "complete":
            return False
        values, env = of_run(run)
        store.keep_figures(run_id, values, _marker(values, env))
    except StoreError:
        return False
    return True


def read(
    store_path: str, last: int | None = None, names: Sequence[str] | None = None
) -> StoredFigures:
    """The figures named ``names`` (None: every one) of the stored runs (the newest ``last``).

    Kept values are read as they are; a run without them is read from its points, and kept
    if it is complete and the store can be written (a read-only store is only read).
    """
    with Store.open(store_path, write=False) as store:
        runs = store.list_runs()
        if last:
            runs = runs[-last:]
        found, to_keep = _read(store, runs, names)
    kept, not_kept = _keep_if_writable(store_path, to_keep)
    return StoredFigures(found.runs, found.values, found.environments, kept, not_kept)


def read_in(
    store: Store, runs: Sequence[RunInfo], names: Sequence[str] | None = None, keep: bool = False
) -> StoredFigures:
    """As :func:`read`, of ``runs`` (oldest first) in a store already open.

    A check reads its history through the store it judges with. A run without kept values
    is read from its points; with ``keep`` (the store is open to write) a complete one is
    then kept, unless the store refuses (busy): the next read reads its points again.
    """
    found, to_keep = _read(store, runs, names)
    kept = []
    for run_id, values, env in to_keep if keep else []:
        try:
            store.keep_figures(run_id, values, _marker(values, env))
        except StoreError:
            break
        kept.append(run_id)
    return StoredFigures(found.runs, found.values, found.environments, kept)


def _read(
    store: Store, runs: Sequence[RunInfo], names: Sequence[str] | None
) -> tuple[StoredFigures, list[tuple[int, list[FigureValue], dict[str, Any]]]]:
    """The figures of ``runs`` and those read from points that a writable store could keep."""
    from commscope.kinds.figures import FIGURES_VERSION

    first = runs[0].id if runs else None
    markers = store.figure_markers(first)
    fresh = {r.id for r in runs if markers.get(r.id, {}).get("version") == FIGURES_VERSION}
    envs = {rid: dict(markers[rid].get("environment") or {}) for rid in fresh}
    values = [v for v in store.figure_values(names, first) if v.run_id in fresh]
    missing = [r for r in runs if r.id not in fresh]
    computed: dict[int, list[FigureValue]] = {}
    to_keep = []
    for info in missing:  # one run's points in memory at a time
        run = read_run(store, info.id)
        found, envs[info.id] = of_run(run)
        computed[info.id] = [v for v in found if names is None or v.name in names]
        if run.info.status == "complete":
            to_keep.append((info.id, found, envs[info.id]))
    if computed:
        order = {r.id: i for i, r in enumerate(runs)}
        values = sorted(
            [*values, *(v for found in computed.values() for v in found)],
            key=lambda v: order[v.run_id],
        )
    return StoredFigures(list(runs), values, envs), to_keep


def _keep_if_writable(
    store_path: str, found: Sequence[tuple[int, list[FigureValue], dict[str, Any]]]
) -> tuple[list[int], str | None]:
    """Keep each (run, values, environment); the runs kept and why none could be, if so."""
    if not found:
        return [], None
    kept = []
    try:
        with Store.open(store_path) as store:
            for run_id, values, env in found:
                store.keep_figures(run_id, values, _marker(values, env))
                kept.append(run_id)
    except CommscopeError as err:  # read-only, or busy: read again from points next time
        return kept, err.one_line()
    return kept, None
