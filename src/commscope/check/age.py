"""How old a baseline is: when it was made and when its oldest and newest runs were measured.

A baseline describes the cluster as its runs found it; the older its newest run, the more
upgrades, repairs and changed jobs it may not know of. ``baseline list`` and ``show`` give its
age so that an admin sees when to rebase (``baseline create NAME --from-last N --replace``).
"""

from __future__ import annotations

import datetime
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from commscope.data.store import RunInfo

DAY_S = 86400.0


def measured_unix(info: RunInfo) -> float:
    """When a run was measured: its engine's start (the header's), else when it was stored."""
    started = (info.header or {}).get("started_unix")
    return float(started) if isinstance(started, (int, float)) else info.created_unix


def when(unix: float) -> str:
    """A moment as people read it, in local time: "2026-01-12 02:30"."""
    return datetime.datetime.fromtimestamp(unix).strftime("%Y-%m-%d %H:%M")


def day(unix: float) -> str:
    """A day, in local time: "2026-01-12"."""
    return datetime.datetime.fromtimestamp(unix).strftime("%Y-%m-%d")


def age_text(seconds: float) -> str:
    """An age in the unit that reads best: "40 minutes", "5 hours", "12 days"."""
    seconds = max(0.0, seconds)
    for unit, size, below in (("minute", 60.0, 7200.0), ("hour", 3600.0, 2 * DAY_S)):
        if seconds < below:
            n = int(seconds // size)
            return f"{n} {unit}{'' if n == 1 else 's'}"
    n = int(seconds // DAY_S)
    return f"{n} days"


@dataclass(frozen=True)
class BaselineAge:
    """When a baseline was made and when its runs were measured (Unix times).

    Attributes:
        created_unix: when ``baseline create`` made it.
        oldest_run_unix: when its oldest run was measured; None: none of its runs is stored.
        newest_run_unix: when its newest run was measured; None likewise.
    """

    created_unix: float
    oldest_run_unix: float | None
    newest_run_unix: float | None

    @classmethod
    def of(cls, created_unix: float, run_times: Sequence[float]) -> BaselineAge:
        """From the runs' measurement times (those still stored)."""
        return cls(
            created_unix,
            min(run_times) if run_times else None,
            max(run_times) if run_times else None,
        )

    def text(self, now: float) -> str:
        """E.g. "12 days old (made 2026-01-12 02:30); runs of 2026-01-05 to 2026-01-11"."""
        out = f"{age_text(now - self.created_unix)} old (made {when(self.created_unix)})"
        return f"{out}; {self.runs_text()}"

    def runs_text(self) -> str:
        """E.g. "runs of 2026-01-05 to 2026-01-11", of one day, or "its runs are not stored"."""
        if self.oldest_run_unix is None or self.newest_run_unix is None:
            return "its runs are not stored"
        first, last = day(self.oldest_run_unix), day(self.newest_run_unix)
        return f"runs of {first}" if first == last else f"runs of {first} to {last}"

    def to_json(self, now: float) -> dict[str, Any]:
        """Times as Unix seconds, ages in days (from ``now``)."""
        newest = self.newest_run_unix
        return {
            "created_unix": self.created_unix,
            "age_days": (now - self.created_unix) / DAY_S,
            "oldest_run_unix": self.oldest_run_unix,
            "newest_run_unix": newest,
            "newest_run_age_days": None if newest is None else (now - newest) / DAY_S,
        }
