"""Checks that tell whether this machine's timers and clock synchronisation can be trusted.

Kurnosov 2012 (MPIPerf), section 5.1: WaitPatternNull returns at once (true time 0) and
WaitPatternUp makes rank i busy-wait (i + 1) us (true time n us for n ranks). Run under each
timer and each synchronisation method, the distance from those true times, and the clock
error measured again after the run, say which combinations are trustworthy here.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

from commscope.data.request import EngineOptions, RunRequest
from commscope.data.store import Store
from commscope.errors import LaunchError
from commscope.measure import runner
from commscope.measure.mpi import MPIInstall

TIMERS = ("gettimeofday", "mpi_wtime", "monotonic_raw", "tsc")
SYNCS = ("linear", "ring", "hierarchical", "drift")


@dataclass(frozen=True)
class TimerVerdict:
    """One timer and sync method: what the wait patterns gave and whether to trust it."""

    timer: str
    sync: str
    run_id: int
    # Medians of the valid launches: a launch stretched by a preempted rank is not a timer
    # error, and on a shared machine one such stage can move the trimmed mean by a microsecond.
    null_s: float  # WaitPatternNull, true time 0
    up_s: float  # WaitPatternUp, true time up_true_s
    up_true_s: float
    valid_share: float  # valid launches / launches over both patterns
    clock_error_s: float  # largest |error| of the clock checks after each pattern and the run
    trustworthy: bool
    reason: str

    def to_json(self) -> dict[str, Any]:
        """Plain dict, NaN as None."""
        return {
            k: (None if isinstance(v, float) and math.isnan(v) else v)
            for k, v in asdict(self).items()
        }


def _request(
    mpi: MPIInstall, np_: int, timer: str, sync: str, where: dict[str, Any] | None = None
) -> RunRequest:
    engine = EngineOptions(
        ops="waitpattern_null,waitpattern_up",
        sizes=(0,),
        coll_sizes=(0,),
        # synchronised once: the check is whether that one sync holds
        timer=timer,
        sync=sync,
        resync="run",
        stop="rse:0.05",
        min_valid=30,
        max_launches=2000,
        coll_budget_s=1.0,
    )
    placed = {k: v for k, v in (where or {}).items() if k != "np"}  # np_ is the count
    return RunRequest(
        benchmark="validate-timers",
        mpi=mpi.choice,
        np=np_,
        timeout_s=300.0,
        confidence=0.95,
        engine=engine,
        **placed,
    )


def check_timer(
    store: Store,
    mpi: MPIInstall,
    np_: int,
    timer: str,
    sync: str,
    tolerance_s: float = 1e-6,
    where: dict[str, Any] | None = None,
) -> TimerVerdict:
    """Run both wait patterns under one timer and sync method and judge the result.

    ``where`` adds the request fields that place the ranks (hosts, a Slurm allocation).
    """
    request = _request(mpi, np_, timer, sync, where)
    run_id = store.create_run(
        "validate", f"timers {timer}/{sync}", mpi.tag, mpi.launcher, np_, request.to_json()
    )
    nan = float("nan")
    try:
        runner.run(store, run_id, request, mpi)
    except LaunchError as err:
        return TimerVerdict(
            timer,
            sync,
            run_id,
            nan,
            nan,
            np_ * 1e-6,
            0.0,
            nan,
            False,
            f"unavailable: {err.one_line().split(';')[0]}",
        )
    # SciPy comes with the analysis: imported here, `commscope validate --help` starts without it.
    from commscope.analysis.coll import summarize

    by_op = {c.op: c for c in store.colls(run_id)}
    null, up = summarize(by_op["waitpattern_null"]), summarize(by_op["waitpattern_up"])
    launches = null.nt + up.nt
    share = (null.nc + up.nc) / launches if launches else 0.0
    end = store.segments(run_id)[-1].end or {}
    errors = [abs(c["error_s"]) for c in end.get("clock_check", [])]
    errors += [
        abs(c.raw["clock_check"]["error_s"]) for c in by_op.values() if c.raw.get("clock_check")
    ]  # after each pattern, too
    clock_error = max(errors, default=0.0)
    true_up = np_ * 1e-6
    problems = []
    if not abs(null.median_s) <= tolerance_s:
        problems.append(f"WaitPatternNull {null.median_s * 1e6:.2f} us, not 0")
    if not abs(up.median_s - true_up) <= tolerance_s:
        problems.append(f"WaitPatternUp {up.median_s * 1e6:.2f} us, not {true_up * 1e6:.0f}")
    if clock_error > tolerance_s:
        problems.append(f"clock drifted {clock_error * 1e6:.2f} us during the run")
    if share < 0.5:
        problems.append(f"only {share:.0%} of launches valid")
    reason = "; ".join(problems) if problems else f"within {tolerance_s * 1e6:g} us"
    return TimerVerdict(
        timer,
        sync,
        run_id,
        null.median_s,
        up.median_s,
        true_up,
        share,
        clock_error,
        not problems,
        reason,
    )


def check_timers(
    store: Store,
    mpi: MPIInstall,
    np_: int,
    timers: list[str],
    syncs: list[str],
    tolerance_s: float = 1e-6,
    where: dict[str, Any] | None = None,
) -> list[TimerVerdict]:
    """Every timer under every sync method, one run each (stored, kind 'validate')."""
    return [check_timer(store, mpi, np_, t, s, tolerance_s, where) for t in timers for s in syncs]
