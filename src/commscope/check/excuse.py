"""How long a changed environment excuses a worse figure, and when a check asks to rebase.

A check whose run was measured under another environment than its baseline's (another MPI,
kernel, CPU model, TCP setting or engine option: :func:`commscope.check.environment.changes`)
does not call a worse figure a regression: the change may be the cause, and the admin made
it. Excused forever, though, the check would be blind from then on. So a change is excused
for ``allowed`` nights (``check --excuse-nights``, default ``DEFAULT_EXCUSE_NIGHTS``); from
the next night on the check asks to rebase (WARNING at least, naming the change, its age and
the command) and judges the figures as on any other night: a real regression is CRITICAL.

**Counting nights.** The verdicts a check keeps with its run (run data ``check``, by
baseline) carry the environment changes it saw and when the run was measured. A change's
age is the number of distinct nights among the runs checked against the baseline since its
newest run that saw that change without interruption, newest first, this run included: a
night with the change undone ends the count, so a change made again starts afresh. A night
runs from noon to noon, local time, so that a check at 23:50 and one at 00:10 are one night
and two checks of one night count once. With several changes, the youngest decides: any
of them may explain the figure.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

DEFAULT_EXCUSE_NIGHTS = 3
NOON_S = 12 * 3600.0


def night(unix: float) -> datetime.date:
    """The night a moment belongs to: the local date of the noon before it."""
    return datetime.date.fromtimestamp(unix - NOON_S)


@dataclass(frozen=True)
class EnvironmentAge:
    """The changes a check saw, how long they have been seen, and whether they still excuse.

    Attributes:
        changes: what differs from the baseline's environment, one phrase each.
        nights: nights the youngest change has been seen, this run's included (1: first).
        runs: runs checked with it, this one included (what a rebase can take).
        allowed: nights a change is excused.
    """

    changes: tuple[str, ...]
    nights: int
    runs: int
    allowed: int

    @property
    def expired(self) -> bool:
        """Whether the excuse is over: the check judges and asks to rebase."""
        return self.nights > self.allowed

    @property
    def nights_ago(self) -> int:
        """How many nights ago the change was first seen (0: tonight)."""
        return self.nights - 1

    def when_text(self) -> str:
        """When it was first seen: "tonight", "1 night ago", "4 nights ago"."""
        n = self.nights_ago
        return "tonight" if n == 0 else f"{n} night{'' if n == 1 else 's'} ago"

    def rebase_command(self, baseline: str, baseline_runs: int) -> str:
        """The command that makes the baseline again of runs under the new environment.

        As many runs as the baseline had, at most those seen with the change.
        """
        runs = max(1, min(baseline_runs, self.runs))
        return f"commscope baseline create {baseline} --from-last {runs} --replace"

    def to_json(self) -> dict[str, Any]:
        """Plain dict."""
        return {
            "changes": list(self.changes),
            "nights": self.nights,
            "runs": self.runs,
            "excused_nights": self.allowed,
            "expired": self.expired,
        }


def age(
    changes: Sequence[str],
    run_id: int,
    measured_unix: float,
    kept: Mapping[int, Mapping[str, Any]],
    allowed: int,
) -> EnvironmentAge | None:
    """How long ``changes`` have been seen; None when there are none.

    Args:
        changes: what the run being checked shows changed.
        run_id: that run; only verdicts of earlier runs count.
        measured_unix: when that run was measured.
        kept: the verdicts kept against this baseline, by run id, of the runs checked
            since its newest run: ``environment_changes`` and ``measured_unix`` (else
            ``checked_unix``, for verdicts kept before these were).
        allowed: nights a change is excused.
    """
    if not changes:
        return None
    earlier = sorted((run for run in kept if run < run_id), reverse=True)
    youngest: tuple[int, int] | None = None
    for change in changes:
        nights, runs = {night(measured_unix)}, 1
        for run in earlier:
            verdict = kept[run]
            if change not in (verdict.get("environment_changes") or []):
                break
            when = verdict.get("measured_unix") or verdict.get("checked_unix")
            if isinstance(when, (int, float)):
                nights.add(night(float(when)))
            runs += 1
        if youngest is None or len(nights) < youngest[0]:
            youngest = (len(nights), runs)
    assert youngest is not None
    return EnvironmentAge(tuple(changes), youngest[0], youngest[1], allowed)
