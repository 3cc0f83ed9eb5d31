"""The last good runs of a request: what ``baseline create --from-last N`` takes.

A stored run is **like** the reference run when it is of the same kind and its stored
request is the same once the keys that measuring it again changes are set aside
(:func:`comparable`: the timeout a check bounds, the Slurm job, its nodes and whether
commscope made the allocation); a check's runs are like the baseline's. Of those, a run is
**good** when it

- is complete (a run stopped early lacks figures, or measured some of them in another state);
- ran on the reference's hosts, under its environment: no difference that
  :func:`commscope.check.environment.changes` names (MPI and its library, kernel, CPU model,
  TCP settings, engine options). A baseline of mixed MPI versions would judge each night
  against a cluster that never was;
- was not flagged by the load monitor: other processes took more than ``BUSY_SHARE`` of a
  host's CPUs and ``LOAD_MARGIN`` more than the median of the like runs looked at (the rule
  :func:`commscope.check.environment.loaded_runs` leaves a run out of a baseline's spread by).

Runs are looked at newest first until ``N`` good ones are found among at least
``MIN_LOOKED`` like runs (as many as there are); the load's median is taken over every like
run looked at, so that one loaded night among three or more cannot pass for typical.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from commscope.check import environment
from commscope.data.store import RunInfo
from commscope.errors import UsageError

VOLATILE = ("timeout_s",)  # a check bounds the timeout of the request it measures again
VOLATILE_SLURM = ("job", "nodes", "own")  # each allocation's own; hosts are compared apart
COMPLETE = "complete"
MIN_LOOKED = 3  # like runs the load's median stands on (when stored): robust to one loaded
SKIPPED = ("incomplete", "loaded", "on other hosts", "under another environment")  # in order
Ends = Callable[[int], list[dict[str, Any] | None]]  # a run id -> its launches' end records


def comparable(request: Mapping[str, Any]) -> dict[str, Any]:
    """A stored request without the keys that measuring it again changes."""
    out = {k: v for k, v in request.items() if k not in VOLATILE}
    slurm = out.get("slurm")
    if isinstance(slurm, Mapping):
        out["slurm"] = {k: v for k, v in slurm.items() if k not in VOLATILE_SLURM}
    return out


def like(info: RunInfo, reference: RunInfo) -> bool:
    """Whether ``info`` is of the kind and request of ``reference``."""
    return info.kind == reference.kind and comparable(info.request) == comparable(reference.request)


@dataclass(frozen=True)
class Picked:
    """The runs chosen and what was passed over.

    Attributes:
        reference: the run whose request, hosts and environment the runs share.
        runs: the good runs taken, oldest first.
        skipped: why like runs were passed over ("incomplete", "loaded", ...) -> how many.
    """

    reference: int
    runs: tuple[int, ...]
    skipped: dict[str, int]

    def skipped_text(self) -> str:
        """What was passed over, e.g. "2 incomplete, 1 loaded", or "none"."""
        shown = [f"{self.skipped[why]} {why}" for why in SKIPPED if self.skipped.get(why)]
        return ", ".join(shown) or "none"


def pick(reference: RunInfo, newest_first: Iterable[RunInfo], count: int, ends: Ends) -> Picked:
    """The ``count`` newest good runs like ``reference`` among ``newest_first``.

    ``ends`` gives a run's end records (read only for like runs). The reference itself is
    taken when it is among the runs and good.

    Raises:
        UsageError: fewer than ``count`` good runs; the message names how many were found,
            what was skipped and the fix.
    """
    ref_env = environment.of_parts(reference, ends(reference.id))
    skipped: Counter[str] = Counter()
    shares: dict[int, float | None] = {}  # like, complete, same hosts and environment
    good: list[int] = []
    for info in newest_first:
        if not like(info, reference):
            continue
        if info.status != COMPLETE:
            skipped["incomplete"] += 1
            continue
        env = environment.of_parts(info, ends(info.id))
        if environment.hosts_differ(ref_env, env):
            skipped["on other hosts"] += 1
            continue
        if environment.changes(ref_env, env):
            skipped["under another environment"] += 1
            continue
        shares[info.id] = env["others_share"]
        if len(shares) >= max(count, MIN_LOOKED):
            loaded = environment.loaded_runs(shares)
            good = [run for run in shares if run not in loaded]
            if len(good) >= count:
                break
    loaded = environment.loaded_runs(shares)
    good = [run for run in shares if run not in loaded][:count]
    skipped["loaded"] = sum(1 for run in loaded if run not in good)
    picked = Picked(reference.id, tuple(reversed(good)), dict(skipped))
    if len(good) < count:
        raise UsageError(too_few(picked, count))
    return picked


def too_few(picked: Picked, count: int) -> str:
    """The one-line error of ``--from-last`` when fewer good runs than asked were found."""
    found = len(picked.runs)
    head = (
        f"--from-last {count}: {found} good run{'' if found == 1 else 's'} like run"
        f" {picked.reference} (its request, hosts and environment; skipped:"
        f" {picked.skipped_text()})"
    )
    more = f"measure it again on {count - found} more night{'' if count - found == 1 else 's'}"
    if found >= 2:
        return f"{head}; give --from-last {found}, or {more}"
    return f"{head}; {more}, or name the runs by id"
