"""The node compute benchmark: a Linpack sweep over N on 1..all cores, stored.

The node validation of Rechistov et al. 2012 (cluster simulation).

For each core count the process is pinned to that many physical cores and BLAS to as many
threads (``pinning``), then N grows geometrically from 100 (100 x 2^(k/2), two significant
digits; ``sizes``) up to what the memory budget allows, each point solved and checked by ``linpack``
and committed to the store as it arrives. Before each N the sweep predicts what the point
will cost from the previous one (solve time x (N'/N)^3, the rest x (N'/N)^2) and stops when
that would overrun the core count's share of the time budget: on a small machine the default
run takes about a minute. Points already stored for the run are skipped, which is how
``--resume`` works.

``measure_node`` creates and runs a whole node run: the entry point for any job that wants
node figures next to its communication figures.

``linpack`` (numpy, SciPy) is imported by the functions that use it: ``commscope run --help``
shows this module's defaults and should not wait for SciPy.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from commscope.data import peak
from commscope.data.record_parse import record_from_dict
from commscope.data.records import SHARE_WINDOW_S, Linpack
from commscope.data.session import Measuring
from commscope.data.store import Store
from commscope.errors import CommscopeError, UsageError
from commscope.measure.compute import busyclock, cpu, pinning
from commscope.measure.compute.sizes import (
    DEFAULT_MEMORY,
    N_MIN,
    available_memory,
    geometric_sizes,
    memory_budget,
    memory_cap,
)

DEFAULT_CORES = "1,all"
DEFAULT_TIME_BUDGET_S = 60.0
DEFAULT_REPEATS = 3
DEFAULT_SEED = 42
MIN_POINT_S = 0.2  # small N repeat until the point has solved for this long
MAX_REPEATS = 100
WARMUP_BELOW_S = 1.0  # an untimed solve first when one solve is predicted shorter than this

Progress = Callable[[str], None]
ClockMeter = Callable[[Iterable[int]], peak.BusyClock]


def busy_clocks(
    cpus: Mapping[int, Iterable[int]],
    meter: ClockMeter | None = None,
) -> tuple[dict[int, peak.BusyClock], str | None]:
    """The busy clock of each core count, measured on its cpus all busy at once.

    ``meter`` measures one group of cpus (default: ``busyclock.measure``).

    Returns:
        The clocks measured, and why the rest were not (None when all were): a machine where
        the clock program cannot be built or run keeps the nominal clock.
    """
    meter = meter or busyclock.measure
    out: dict[int, peak.BusyClock] = {}
    for cores, where in sorted(cpus.items()):
        try:
            out[cores] = meter(list(where))
        except CommscopeError as err:
            return out, err.one_line()
    return out, None


def build_request(
    cores: str = DEFAULT_CORES,
    sizes: list[int] | None = None,
    max_memory: str = DEFAULT_MEMORY,
    time_budget_s: float = DEFAULT_TIME_BUDGET_S,
    repeats: int = DEFAULT_REPEATS,
    seed: int = DEFAULT_SEED,
    peak_flops_per_cycle: float | None = None,
    peak_ghz: float | None = None,
    clock_meter: ClockMeter | None = busyclock.measure,
) -> dict[str, Any]:
    """Everything a node run needs, checked, with this machine's CPU facts.

    Unless --peak-ghz is given, the busy clock of each core count is measured here on the cpus
    its Linpack sweep will use (``clock_meter``; None skips it), so P_peak cannot be beaten
    by a core boosting above its nominal clock.

    Raises:
        UsageError: bad cores, sizes or memory budget.
    """
    from commscope.measure.compute import linpack

    allowed = pinning.allowed_cpus()
    counts = pinning.resolve_cores(cores, allowed)
    cpus = {str(c): list(pinning.choose_cpus(c, allowed)) for c in counts}
    available = available_memory()
    budget = memory_budget(max_memory, available)
    cap = memory_cap(budget)
    if sizes:
        big = [n for n in sizes if n > cap]
        if big:
            raise UsageError(
                f"--matrix-order: N={big[0]} needs"
                f" {linpack.matrix_bytes(big[0]) / 1e9:.2f} GB, over"
                f" the memory budget of {budget / 1e9:.2f} GB (--max-memory {max_memory})"
            )
        plan = sorted(set(sizes))
    else:
        plan = geometric_sizes(cap)
    if not plan:
        raise UsageError(f"--max-memory {max_memory}: {budget} bytes leave no room for N={N_MIN}")
    if repeats < 1:
        raise UsageError(f"--repeats {repeats}: give at least 1")
    peak = cpu.peak_model(cpus[str(max(counts))], peak_flops_per_cycle, peak_ghz)
    if peak_ghz is None and clock_meter is not None:
        peak = peak.with_busy(*busy_clocks({c: cpus[str(c)] for c in counts}, clock_meter))
    return {
        "benchmark": "node",
        "cores": counts,
        "cpus": cpus,
        "sizes": plan,
        "sizes_given": bool(sizes),
        "routine": linpack.ROUTINE,
        "flops": "2/3 N^3 + 2 N^2",
        "threshold": linpack.THRESHOLD,
        "memory": {
            "max_memory": max_memory,
            "available_bytes": available,
            "budget_bytes": budget,
            "n_cap": cap,
        },
        "time_budget_s": time_budget_s,
        "repeats": repeats,
        "seed": seed,
        "min_point_s": MIN_POINT_S,
        "cpu": peak.to_json(),
        "peak_derivation": {str(c): peak.derivation(c) for c in counts},
    }


def repeats_for(solve_s: float, repeats: int) -> int:
    """Timed solves at one N: ``repeats``, more while they last under MIN_POINT_S in all."""
    if solve_s <= 0:
        return MAX_REPEATS
    return max(repeats, min(MAX_REPEATS, math.ceil(MIN_POINT_S / solve_s)))


def predict_cost(
    n_prev: int, solve_prev_s: float, other_prev_s: float, n_next: int, repeats: int
) -> float:
    """Predicted seconds of the point at ``n_next`` from the one measured at ``n_prev``.

    Solves scale as N^3 (pessimistic: the rate still grows with N), the rest (generating A,
    copies, residuals) as N^2.
    """
    ratio = n_next / n_prev
    solve = solve_prev_s * ratio**3
    warm = 1 if solve < WARMUP_BELOW_S else 0
    return (repeats_for(solve, repeats) + warm) * solve + other_prev_s * ratio**2


# /proc/stat counts busy time in ticks (1/CLK_TCK s, 10 ms): over a shorter window the share
# of the cpus others took would be off by tens of percent (a 50 ms point read 64 % on an idle
# machine), so short points carry no share of their own; the sweep's share so far covers them
# (SHARE_WINDOW_S).


def measure_point(
    n: int,
    place: pinning.Placement,
    repeats: int,
    seed: int,
    warmup: bool,
    sweep_start: tuple[float | None, float, float] | None = None,
) -> Linpack:
    """Solve one random system of order ``n`` repeatedly where ``place`` says; check each.

    ``sweep_start`` is the reading taken when this core count's sweep began: the point also
    carries the share of the cpus other processes took from then to its end (one window, so
    short points are covered too).

    Raises:
        ComputeError: a solution fails HPL's residual test (nothing is returned to store).
    """
    import numpy as np

    from commscope.measure.compute import linpack

    problem = linpack.make_problem(n, seed)
    work = np.empty((n, n), order="F")
    cores = len(place.cpus)
    warm = 0
    if warmup:
        first = linpack.solve(problem, work)
        linpack.check_residual(
            linpack.scaled_residual(problem.a, first.x, problem.b, problem.a_norm), n, cores
        )
        warm = 1
    solves: list[linpack.Solve] = []
    residuals: list[float] = []
    before = pinning.cpu_reading(place.cpus)
    while len(solves) < repeats or (
        sum(s.seconds for s in solves) < MIN_POINT_S and len(solves) < MAX_REPEATS
    ):
        s = linpack.solve(problem, work)
        r = linpack.scaled_residual(problem.a, s.x, problem.b, problem.a_norm)
        linpack.check_residual(r, n, cores)
        solves.append(s)
        residuals.append(r)
    after = pinning.cpu_reading(place.cpus)
    data = {
        "type": "linpack",
        "cores": cores,
        "threads": place.threads,
        "n": n,
        "routine": linpack.ROUTINE,
        "times_s": [s.seconds for s in solves],
        "cpu_s": [s.cpu_seconds for s in solves],
        "gflops": [linpack.gflops(n, s.seconds) for s in solves],
        "residual": max(residuals),
        "threshold": linpack.THRESHOLD,
        "affinity": list(place.cpus),
        "warmup": warm,
        "seed": seed,
        "blas": [dict(b) for b in place.blas],
        "source": "commscope",
    }
    for key, start in (("others_cpu_share", before), ("sweep_others_cpu_share", sweep_start)):
        took = pinning.others_cpu_seconds(start, after, cores) if start is not None else None
        if took is not None and took[1] >= SHARE_WINDOW_S:
            data[key] = min(1.0, took[0] / (took[1] * cores))
            if key == "sweep_others_cpu_share":
                data["sweep_window_s"] = took[1]
    record = record_from_dict(data, f"node benchmark N={n} on {cores} cores")
    assert isinstance(record, Linpack)
    return record


@dataclass
class NodeOutcome:
    """How a node run ended."""

    run_id: int
    new_points: int
    total_points: int
    stops: dict[int, str]  # per core count: why its sweep ended


@dataclass
class _Sweep:
    """Where the run is, so an interruption can say what was lost."""

    cores: int = 0
    n: int = 0


def _sweep(
    session: Measuring,
    segment: int,
    request: dict[str, Any],
    cores: int,
    state: _Sweep,
    progress: Progress | None,
) -> str:
    """Measure one core count's sizes; return why the sweep ended."""
    stored = {p.n: p for p in session.store.linpacks(session.run_id) if p.cores == cores}
    budget = request["time_budget_s"] / len(request["cores"]) or math.inf
    repeats = request["repeats"]
    started = time.perf_counter()
    last: tuple[int, float, float] | None = None  # n, median solve s, rest of the point s
    with pinning.placed(tuple(request["cpus"][str(cores)]), cores) as place:
        sweep_start = pinning.cpu_reading(place.cpus)
        for n in request["sizes"]:
            state.n = n
            if n in stored:
                last = (n, stored[n].median_s, 0.0)
                continue
            if last is not None:
                cost = predict_cost(*last, n, repeats)
                left = budget - (time.perf_counter() - started)
                if cost > left:
                    return (
                        f"time budget: N={n} would take about {cost:.0f} s,"
                        f" {max(left, 0):.0f} s of {budget:.0f} s left (--time-budget)"
                    )
            t0 = time.perf_counter()
            solve_guess = (last[1] * (n / last[0]) ** 3) if last else 0.0
            point = measure_point(
                n,
                place,
                repeats,
                request["seed"],
                warmup=last is None or solve_guess < WARMUP_BELOW_S,
                sweep_start=sweep_start,
            )
            session.add(segment, point)
            spent = time.perf_counter() - t0
            solving = point.median_s * (point.n_samples + int(point.raw["warmup"]))
            last = (n, point.median_s, max(spent - solving, 0.0))
            if progress:
                progress(
                    f"{cores} core{'s' if cores != 1 else ''}: N={n:>6}"
                    f" {point.median_gflops:8.2f} GFLOPS, {point.n_samples} solves of"
                    f" {point.median_s:.3g} s, residual {point.residual:.3g}"
                )
    return "all sizes measured"


def _lost(request: dict[str, Any], state: _Sweep) -> str:
    """The point being measured, the sizes planned after it, and the core counts not reached."""
    rest = [n for n in request["sizes"] if n > state.n]
    text = f"N={state.n} on {state.cores} core{'s' if state.cores != 1 else ''}"
    if rest:
        text += f" and the larger N planned after it (up to {rest[-1]})"
    order = list(request["cores"])
    later = order[order.index(state.cores) + 1 :]
    if later:
        text += f", and every N on {', '.join(map(str, later))} cores"
    return text


def run(
    store: Store, run_id: int, request: dict[str, Any], progress: Progress | None = None
) -> NodeOutcome:
    """Measure a stored node run's missing points, one segment per core count.

    Raises:
        ComputeError: a wrong solution or a placement that did not take; the run is marked
            incomplete with what was lost, every point before it stays stored.
    """
    state = _Sweep()
    stops: dict[int, str] = {}
    session = Measuring(store, run_id)
    session.lost = lambda: _lost(request, state)
    for cores in request["cores"]:
        state.cores, state.n = cores, request["sizes"][0]
        sizes = ",".join(map(str, request["sizes"]))
        with session.segment(["commscope-node", "--cores", str(cores), "--sizes", sizes]) as seg:
            stops[cores] = _sweep(session, seg, request, cores, state, progress)
            session.end_segment(seg, stops[cores], {"cores": cores, "stop": stops[cores]})
    session.complete()
    return NodeOutcome(run_id, session.new, len(session.measured()), stops)


def measure_node(
    store: Store,
    request: dict[str, Any] | None = None,
    label: str | None = None,
    progress: Progress | None = None,
) -> NodeOutcome:
    """Create a node run (default options when ``request`` is None) and measure it.

    This is what a job that characterises a whole machine calls to add the node figures.
    """
    req = request if request is not None else build_request()
    run_id = store.create_run("node", label, None, None, None, req)
    return run(store, run_id, req, progress)
