"""Keeping a store bounded: old runs removed by age or by count (``commscope runs prune``).

A run goes when every rule given says so: older than ``older_than_days`` (by when it was
created), and not among the ``keep`` newest runs of its kind and label. Counting per kind
and label keeps the newest nightly checks and the newest of a rare all-pairs matrix alike,
where one count over the whole store would let the nightly runs push the matrix out. Never
removed: a run a baseline holds (a check judges against it; delete the baseline first) and
a run still "running". The runs are chosen on a read of the store, then removed in one
transaction that reads the baselines and statuses again (:mod:`commscope.data.store_prune`).
"""

from __future__ import annotations

import os
import time
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from commscope.data.store import RunInfo, Store
from commscope.errors import UsageError

DAY_S = 86400.0


@dataclass(frozen=True)
class PruneJob:
    """Which runs to remove from the store ``store``.

    Attributes:
        older_than_days: only runs created more than this many days before ``now``; None:
            any age.
        keep: the newest runs of each kind and label that stay; None: no count.
        dry_run: choose, remove nothing.
        vacuum: rewrite the file afterwards, so that it shrinks.
        now: the moment ages are counted from.
    """

    store: str
    older_than_days: float | None = None
    keep: int | None = None
    dry_run: bool = False
    vacuum: bool = False
    now: float = field(default_factory=time.time)


@dataclass(frozen=True)
class PruneOutcome:
    """What was removed (or would be, on a dry run) and what stayed though old.

    Attributes:
        pruned: the runs removed, or that a dry run would remove.
        held: runs the rules chose that baselines hold, with those baselines' names.
        running: runs the rules chose that are still "running".
        dry_run: nothing was removed.
        size_before: the file's size in bytes before; ``size_after`` after (both the same
            unless the prune vacuumed).
    """

    pruned: tuple[RunInfo, ...]
    held: tuple[tuple[RunInfo, tuple[str, ...]], ...]
    running: tuple[RunInfo, ...]
    dry_run: bool
    vacuumed: bool
    size_before: int
    size_after: int

    @property
    def points(self) -> int:
        """The points of the pruned runs."""
        return sum(run.n_points for run in self.pruned)


@dataclass(frozen=True)
class Choice:
    """The runs the rules choose, split into those that go and those that must stay."""

    going: tuple[RunInfo, ...]
    held: tuple[tuple[RunInfo, tuple[str, ...]], ...]
    running: tuple[RunInfo, ...]


def choose(
    runs: Sequence[RunInfo],
    held: Mapping[int, Sequence[str]],
    older_than_days: float | None,
    keep: int | None,
    now: float,
) -> Choice:
    """The runs that ``older_than_days`` and ``keep`` remove, oldest first.

    Raises:
        UsageError: neither rule is given (that would remove every run).
    """
    if older_than_days is None and keep is None:
        raise UsageError("give --older-than DAYS, --keep N or both: which runs should go?")
    newest_first: dict[tuple[str, str | None], list[RunInfo]] = defaultdict(list)
    for run in sorted(runs, key=lambda r: (r.created_unix, r.id), reverse=True):
        newest_first[(run.kind, run.label)].append(run)
    chosen = []
    for group in newest_first.values():
        for rank, run in enumerate(group):
            old = older_than_days is None or now - run.created_unix > older_than_days * DAY_S
            if old and (keep is None or rank >= keep):
                chosen.append(run)
    chosen.sort(key=lambda r: r.id)
    return Choice(
        going=tuple(r for r in chosen if r.id not in held and r.status != "running"),
        held=tuple((r, tuple(held[r.id])) for r in chosen if r.id in held),
        running=tuple(r for r in chosen if r.id not in held and r.status == "running"),
    )


def prune(job: PruneJob) -> PruneOutcome:
    """Remove the runs the job's rules choose (none on a dry run); what went and what stayed.

    Raises:
        UsageError: no rule given.
        StoreError: no store there, a row it reads is damaged, or SQLite failed (nothing
            was removed then).
    """
    with Store.open(job.store, write=False) as store:  # a dry run works on a read-only store
        runs, held = store.list_runs(), store.held_runs()
        path = store.path
    choice = choose(runs, held, job.older_than_days, job.keep, job.now)
    before = os.path.getsize(path)
    pruned = choice.going
    if not job.dry_run and (pruned or job.vacuum):
        with Store.open(job.store) as store:
            gone = set(store.prune_runs([r.id for r in pruned]))
            if job.vacuum:
                store.vacuum()
        pruned = tuple(r for r in pruned if r.id in gone)
    return PruneOutcome(
        pruned=pruned,
        held=choice.held,
        running=choice.running,
        dry_run=job.dry_run,
        vacuumed=job.vacuum and not job.dry_run,
        size_before=before,
        size_after=os.path.getsize(path),
    )
