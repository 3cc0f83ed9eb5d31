"""The clock cores really run at while busy, measured by ``commscope-clock`` (C, no MPI).

``/proc/cpuinfo``'s "cpu MHz" is, under a hypervisor without cpufreq, the nominal clock; a
boosting core runs faster, and a P_peak derived from the nominal clock can be beaten. The
program (``engine/clock/main.c``) starts one thread pinned to each cpu asked for, all at once,
and times chains of dependent integer additions (one cycle each) with CLOCK_MONOTONIC_RAW:
additions per second are cycles per second. Interference only slows a repeat down, so each
cpu's fastest repeat is its clock, and the fastest cpu's is the clock of the group.

It is built and found like ``commscope-tcp`` (``commscope.measure.cprogram``).
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from commscope.data.peak import BusyClock
from commscope.errors import EngineError
from commscope.measure.cprogram import CProgram

PROGRAM = "commscope-clock"
CLOCK_PROGRAM = CProgram(PROGRAM, ("clock/*.c", "include/commscope.h", "src/jsonl.c"), "clock")
# Short repeats (about 7 ms at 3 GHz), many of them: on a shared machine some repeat then runs
# without another process taking a time slice of its cpu.
DEFAULT_ADDS = 20_000_000
DEFAULT_REPEATS = 21
DEFAULT_WARMUP_S = 0.2
TIMEOUT_S = 120.0


def parse(output: Mapping[str, Any]) -> BusyClock:
    """The busy clock in one JSON line of ``commscope-clock``.

    Raises:
        EngineError: the line is not the program's, or a cpu has no positive repeat.
    """
    if output.get("program") != PROGRAM or not isinstance(output.get("cpus"), list):
        raise EngineError(f"{PROGRAM} wrote an unexpected line; reinstall commscope")
    cpus: list[int] = []
    best: list[float] = []
    for entry in output["cpus"]:
        rates = [float(g) for g in entry.get("ghz") or [] if isinstance(g, (int, float))]
        if not rates or max(rates) <= 0:
            raise EngineError(f"{PROGRAM}: cpu {entry.get('cpu')} timed no repeat")
        cpus.append(int(entry["cpu"]))
        best.append(max(rates))
    if not cpus:
        raise EngineError(f"{PROGRAM} measured no cpu")
    method = str(output.get("method", "dependent integer additions"))
    how = (
        f"{method}; best of {output.get('repeats')} x {output.get('adds')} additions"
        f" timed with {output.get('timer', 'a monotonic clock')}"
    )
    return BusyClock(max(best), tuple(cpus), tuple(best), how)


def argv(
    program: str,
    cpus: Iterable[int],
    adds: int = DEFAULT_ADDS,
    repeats: int = DEFAULT_REPEATS,
    warmup_s: float = DEFAULT_WARMUP_S,
) -> list[str]:
    """The program's argument list (never a shell string)."""
    return [
        program,
        "--cpus",
        ",".join(str(int(c)) for c in cpus),
        "--adds",
        str(int(adds)),
        "--repeats",
        str(int(repeats)),
        "--warmup",
        f"{float(warmup_s):g}",
    ]


def measure(
    cpus: Iterable[int],
    adds: int = DEFAULT_ADDS,
    repeats: int = DEFAULT_REPEATS,
    warmup_s: float = DEFAULT_WARMUP_S,
    program: Path | None = None,
) -> BusyClock:
    """Measure the busy clock of ``cpus``, every one of them busy at once.

    Args:
        cpus: the cpus to keep busy, one pinned thread each.
        adds: additions timed per repeat.
        repeats: timed repeats per cpu; the fastest counts.
        warmup_s: seconds of untimed additions first, for the clock to ramp up.
        program: the program to run (default: the packaged one, else built on demand).

    Raises:
        EngineError: the program is missing and cannot be built, fails, or times out.
    """
    cmd = argv(str(program or CLOCK_PROGRAM.find()), cpus, adds, repeats, warmup_s)
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT_S, check=False)
    except subprocess.TimeoutExpired as err:
        raise EngineError(f"{PROGRAM} took over {TIMEOUT_S:.0f} s") from err
    if done.returncode != 0:
        why = (done.stderr.strip().splitlines() or [f"exit status {done.returncode}"])[-1]
        raise EngineError(why)
    try:
        return parse(json.loads(done.stdout))
    except (json.JSONDecodeError, KeyError, TypeError, ValueError) as err:
        raise EngineError(f"{PROGRAM} wrote output that is not its JSON line: {err}") from err
