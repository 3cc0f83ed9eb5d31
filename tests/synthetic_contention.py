"""Schema-valid contention records built by hand: t(m, cf) from a formula, per level.

Every process of every repetition gets the formula's time, so each cell's median (of the
slowest process) is exactly t(m, cf). Used to test prediction without measuring.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path

from commscope.data.record_parse import record_from_dict
from commscope.data.records import Contention
from tests.synthetic_runs import store_records

TimeFn = Callable[[int, int], float]


def as_measured(transfer_s: TimeFn) -> TimeFn:
    """What the contention benchmark stores where each transfer takes ``transfer_s(m, cf)``.

    Both transfers of a pair's exchange are in flight for all of it and the benchmark divides
    by two per exchange (t / (2 nruns) in Peryshkova and Kurnosov 2018, contention-aware
    placement): its cell is half a transfer's time.
    """
    return lambda m, cf: transfer_s(m, cf) / 2


def records(
    level: str,
    fn: TimeFn,
    sizes: Iterable[int],
    cfs: Iterable[int],
    reps: int = 3,
    in_flight: int = 1,
) -> list[Contention]:
    out = []
    for cf in cfs:
        pairs = [[2 * i, 2 * i + 1] for i in range(cf)]
        for m in sizes:
            t = fn(m, cf)
            rec = record_from_dict(
                {
                    "type": "contention",
                    "level": level,
                    "cf": cf,
                    "bytes": m,
                    "pairs": pairs,
                    "nruns": 10,
                    "in_flight": in_flight,
                    "start": "window",
                    "samples_s": [[t] * (2 * cf)] * reps,
                },
                f"synthetic contention {level} cf{cf} {m}",
            )
            assert isinstance(rec, Contention)
            out.append(rec)
    return out


def store_run(path: Path, recs: list[Contention], label: str = "contention") -> int:
    """Store one complete run of contention records and return its id."""
    return store_records(path, "contention", recs, label, 4)
