"""Where the node benchmark runs: the process pinned to chosen cpus, BLAS held to as many threads.

On Linux ``os.sched_setaffinity(0, ...)`` pins only the calling thread, and OpenBLAS starts its
worker threads when it is loaded, so every thread of the process (/proc/self/task) is pinned;
threads started later inherit the main thread's set. threadpoolctl sets the thread count of
every BLAS library loaded (NumPy and SciPy each bundle their own OpenBLAS); threadpool_info then
confirms that it took. Both facts are checked, not assumed, and recorded with every point.

On a shared machine other processes may run on the same cpus; ``busy_seconds`` reads how long
the cpus were busy (/proc/stat, steal included) so the benchmark can tell which share of them
went to others while it measured.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from threadpoolctl import threadpool_info, threadpool_limits

from commscope.errors import ComputeError, UsageError
from commscope.measure.compute import cpu

_TASKS = Path("/proc/self/task")
_STAT = Path("/proc/stat")
# threadpool_info keys kept in records; "prefix" and "user_api" add nothing.
_BLAS_KEYS = (
    "internal_api",
    "version",
    "num_threads",
    "threading_layer",
    "architecture",
    "filepath",
)


@dataclass(frozen=True)
class Placement:
    """What was verified to be in force while measuring."""

    cpus: tuple[int, ...]  # the affinity of every thread of the process
    threads: int  # the thread count every BLAS library reported
    blas: tuple[dict[str, Any], ...]  # threadpool_info of each BLAS library


def allowed_cpus() -> list[int]:
    """The cpus this process may run on now."""
    return sorted(os.sched_getaffinity(0))


def resolve_cores(spec: str, allowed: list[int], sysfs: Path = cpu.SYSFS_CPU) -> list[int]:
    """Core counts from "1,all"-style text: "all" is every physical core the process may use.

    Raises:
        UsageError: an item is not a positive integer or "all", or asks for more cores than
            the process may use.
    """
    most = cpu.physical_cores(allowed, sysfs)
    counts: list[int] = []
    for item in (s.strip() for s in spec.split(",")):
        if item == "all":
            value = most
        elif re.fullmatch(r"[0-9]{1,6}", item) and int(item) > 0:
            value = int(item)
        else:
            raise UsageError(f"--cores {spec}: {item!r} is not a core count; give e.g. 1,2,all")
        if value > most:
            raise UsageError(
                f"--cores {spec}: {value} cores asked, this process may use {most}"
                f" (cpus {','.join(map(str, allowed))})"
            )
        if value not in counts:
            counts.append(value)
    return counts


def choose_cpus(cores: int, allowed: list[int], sysfs: Path = cpu.SYSFS_CPU) -> tuple[int, ...]:
    """The cpus to pin ``cores`` threads to: one per physical core, lowest numbers first."""
    order = cpu.physical_order(allowed, sysfs)
    return tuple(sorted(order[:cores]))


def busy_seconds(cpus: Iterable[int]) -> float | None:
    """Seconds ``cpus`` have spent busy since boot (not idle nor waiting for I/O), summed.

    Returns:
        None when /proc/stat cannot be read.
    """
    wanted = {f"cpu{c}" for c in cpus}
    try:
        lines = _STAT.read_text().splitlines()
    except OSError:
        return None
    ticks = 0
    for line in lines:
        name, *fields = line.split()
        if name in wanted:
            values = [int(v) for v in fields[:8]]  # user nice system idle iowait irq softirq steal
            ticks += sum(values) - values[3] - values[4]
    return ticks / os.sysconf("SC_CLK_TCK")


def _pin_all_threads(cpus: Iterable[int]) -> None:
    wanted = set(cpus)
    for tid in os.listdir(_TASKS):
        try:
            os.sched_setaffinity(int(tid), wanted)
        except ProcessLookupError:  # the thread ended meanwhile
            continue


def _thread_affinities() -> set[frozenset[int]]:
    found = set()
    for tid in os.listdir(_TASKS):
        try:
            found.add(frozenset(os.sched_getaffinity(int(tid))))
        except ProcessLookupError:
            continue
    return found


def _blas() -> list[dict[str, Any]]:
    return [
        {k: lib.get(k) for k in _BLAS_KEYS}
        for lib in threadpool_info()
        if lib.get("user_api") == "blas"
    ]


@contextmanager
def placed(cpus: tuple[int, ...], threads: int) -> Iterator[Placement]:
    """Pin the whole process to ``cpus`` and limit BLAS to ``threads`` inside the block.

    The previous affinity and thread counts are restored afterwards.

    Raises:
        ComputeError: no BLAS library is loaded, or the pinning or thread limit did not take.
    """
    original = os.sched_getaffinity(0)
    _pin_all_threads(cpus)
    try:
        affinities = _thread_affinities()
        if affinities != {frozenset(cpus)}:
            found = sorted(sorted(a) for a in affinities)
            raise ComputeError(
                f"pinning to cpus {list(cpus)} did not take: threads run on"
                f" {found}; is the process confined by a cgroup?"
            )
        with threadpool_limits(limits=threads, user_api="blas"):
            blas = _blas()
            if not blas:
                raise ComputeError("no BLAS library is loaded; reinstall numpy and scipy")
            wrong = [b for b in blas if b["num_threads"] != threads]
            if wrong:
                raise ComputeError(
                    f"{wrong[0]['filepath']} kept {wrong[0]['num_threads']} threads where"
                    f" {threads} were asked; it may have been built for fewer threads"
                )
            yield Placement(tuple(sorted(os.sched_getaffinity(0))), threads, tuple(blas))
    finally:
        _pin_all_threads(original)


def cpu_reading(cpus: Iterable[int]) -> tuple[float | None, float, float]:
    """(busy seconds of ``cpus``, this process's CPU seconds, wall seconds) now."""
    return busy_seconds(cpus), time.process_time(), time.perf_counter()


def others_cpu_seconds(
    before: tuple[float | None, float, float], after: tuple[float | None, float, float], cores: int
) -> tuple[float, float] | None:
    """(CPU seconds other processes took on the cpus, window seconds) between two readings."""
    if before[0] is None or after[0] is None:
        return None
    # What the cpus did beyond this process's own work: other processes, or the hypervisor.
    return max(0.0, (after[0] - before[0]) - (after[1] - before[1])), after[2] - before[2]
