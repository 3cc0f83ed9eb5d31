"""Change points over the stored history: ``commscope history --changes``.

The runs' figure values (:mod:`commscope.jobs.figures`) are grouped by request and hosts, each
figure of a group is a series, and every series is searched at once
(:func:`commscope.check.changes.find`), so that false change points are held across all the
figures read, not per figure.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from commscope.check.baseline import Baseline
from commscope.check.changes import DEFAULT_FDR, Change, Series, SeriesChanges, find
from commscope.check.history import Group, Selector, groups_of, of_baseline, series_of
from commscope.data.store import RunInfo, Store
from commscope.jobs import figures


@dataclass(frozen=True)
class ChangesJob:
    """A search for change points.

    Attributes:
        store: the store's path.
        selector: the figures to search (None: every figure).
        last: only the newest this many runs (None: every run).
        fdr: the false discovery rate held across the figures.
    """

    store: str
    selector: Selector | None = None
    last: int | None = None
    fdr: float = DEFAULT_FDR


@dataclass(frozen=True)
class ChangesOutcome:
    """Each group of runs and its figures' change points; how many runs were read."""

    groups: list[tuple[Group, list[SeriesChanges]]]
    runs: int
    fdr: float

    @property
    def series(self) -> list[SeriesChanges]:
        """Every series searched, group by group."""
        return [s for _, found in self.groups for s in found]


def changes(job: ChangesJob) -> ChangesOutcome:
    """Read the selected figures of the stored runs and find their change points."""
    from commscope import kinds

    names = None if job.selector is None else [job.selector.name]
    stored = figures.read(job.store, job.last, names)
    specs = kinds.figure_specs()
    groups = groups_of(stored.runs, stored.environments)
    per_group = [series_of(g, stored.values, specs, job.selector) for g in groups]
    found = iter(find([s for series in per_group for s in series], job.fdr))
    out = [(g, [next(found) for _ in series]) for g, series in zip(groups, per_group, strict=True)]
    return ChangesOutcome(out, len(stored.runs), job.fdr)


def group_series(
    store: Store,
    infos: Sequence[RunInfo],
    which: Callable[[Group], bool],
    keys: Mapping[str, str],
    last: int | None = None,
    keep: bool = False,
) -> tuple[Group, list[Series]] | None:
    """The series of figures ``keys`` over the first group of ``infos`` that ``which`` picks.

    Args:
        store: an open store.
        infos: the runs to group (oldest first) by request and hosts.
        which: picks the group (e.g. the one holding a run).
        keys: figure key -> its figure name: the series wanted.
        last: only the group's newest this many runs.
        keep: keep the figures of runs read from their points (a store open to write).

    Returns:
        The group (cut to ``last``) and its series, or None when no group is picked.
    """
    from commscope import kinds

    envs = figures.read_in(store, infos, [], keep).environments
    group = next((g for g in groups_of(infos, envs) if which(g)), None)
    if group is None:
        return None
    if last:
        group = dataclasses.replace(group, runs=group.runs[-last:], dates=group.dates[-last:])
    members = set(group.runs)
    names = sorted(set(keys.values()))
    read = figures.read_in(store, [i for i in infos if i.id in members], names)
    found = series_of(group, read.values, kinds.figure_specs())
    return group, [s for s in found if s.key in keys]


def trend_changes(
    store: Store, baseline: Baseline, infos: Sequence[RunInfo], keys: Sequence[str]
) -> dict[str, tuple[Change, ...]]:
    """The change points of figures ``keys`` in the baseline's series among ``infos``.

    The series is the runs of the baseline's request on its hosts (:func:`of_baseline`);
    its figures are searched together (:func:`commscope.check.changes.find`, false change
    points held across them at :data:`DEFAULT_FDR`), as ``history --changes`` searches.
    """
    wanted = {k: baseline.figures[k].name for k in keys if k in baseline.figures}
    grouped = group_series(store, infos, of_baseline(baseline), wanted)
    if grouped is None:
        return {}
    return {found.series.key: found.changes for found in find(grouped[1]) if found.changes}
