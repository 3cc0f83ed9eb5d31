"""Change points over the stored history: ``commscope history --changes``.

The runs' figure values (:mod:`commscope.jobs.figures`) are grouped by request and hosts, each
figure of a group is a series, and every series is searched at once
(:func:`commscope.check.changes.find`), so that false change points are held across all the
figures read, not per figure.
"""

from __future__ import annotations

from dataclasses import dataclass

from commscope.check.changes import DEFAULT_FDR, SeriesChanges, find
from commscope.check.history import Group, Selector, groups_of, series_of
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
