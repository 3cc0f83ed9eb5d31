"""The engine's options as ``engine/options.json`` declares them, for the Python side.

The same file generates the engine's parser, defaults, bounds and header record (CMake, see
docs/architecture.md); here it gives the engine's argument list, the checks a request passes
before it is stored, and how many points a request will measure. ``commscope run`` declares
its options from it (``cli/run_options.py``). Reading it takes the json module only, so the
CLI still starts fast.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass
from typing import Any

from commscope import limits, strict
from commscope.data.request import EngineOptions
from commscope.errors import EngineError, InputError
from commscope.measure import engine

TYPES = ("int", "number", "switch", "sizes", "names", "choice", "text", "stop", "distort")
NUMERIC = ("int", "number", "switch")
P2P_OPS = ("pingpong", "bw", "bibw")
WINDOWED_OPS = ("bw", "bibw")  # measured once per receive-buffer policy
SIZELESS_OPS = ("barrier", "ibarrier", "waitpattern_null", "waitpattern_up")
DISTORT_FIX = "give RANK:OFFSET_S:DRIFT, e.g. 1:0.001:1e-4 (|offset| <= 1 s, |drift| <= 0.01)"


@dataclass(frozen=True)
class OptionSpec:
    """One row of the table (see the ``about`` text at the top of options.json)."""

    name: str
    flag: str
    type: str
    default: Any
    min: float | None
    max: float | None
    above: bool
    choices: tuple[str, ...]
    same_as: str | None
    benchmarks: tuple[str, ...]
    record: str
    run: bool
    help: str
    cli: str = ""  # `commscope run`'s flag where it differs from the engine's
    hidden: bool = False  # testing: accepted by `commscope run`, not shown in its --help

    @property
    def run_flag(self) -> str:
        """The flag `commscope run` takes (and its messages name) for this option."""
        return self.cli or self.flag

    def to_json(self) -> dict[str, Any]:
        """The row with every field, as ``commscope-engine --options-json`` prints it.

        ``run``, ``cli`` and ``hidden`` are left out: they concern `commscope run`, not the
        engine.
        """
        row = {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(self).items()}
        for key in ("run", "cli", "hidden"):
            del row[key]
        return row


def _row(row: dict[str, Any]) -> OptionSpec:
    default = row["default"]
    if row["type"] == "number":  # 1 in the table is 1.0 in a request, as argparse gives it
        default = float(default)
    return OptionSpec(
        name=row["name"],
        flag=row["flag"],
        type=row["type"],
        default=default,
        min=row.get("min"),
        max=row.get("max"),
        above=bool(row.get("above", False)),
        choices=tuple(row.get("choices", ())),
        same_as=row.get("same_as"),
        benchmarks=tuple(row["benchmarks"]),
        record=row["record"],
        run=bool(row["run"]),
        help=row["help"],
        cli=row.get("cli", ""),
        hidden=bool(row.get("hidden", False)),
    )


@functools.cache
def table() -> tuple[OptionSpec, ...]:
    """Every engine option, in the table's order (the engine records them in this order).

    Raises:
        EngineError: the table is missing or unreadable (a broken install).
    """
    path = engine.engine_sources() / "options.json"
    try:
        rows = json.loads(path.read_text("utf-8"))["options"]
        return tuple(_row(row) for row in rows)
    except (OSError, ValueError, KeyError, TypeError) as err:
        raise EngineError(f"{path}: the engine's option table is unreadable; reinstall") from err


@functools.cache
def spec(name: str) -> OptionSpec:
    """The row named ``name`` (KeyError when there is none)."""
    found = {s.name: s for s in table()}
    return found[name]


def for_benchmark(benchmark: str) -> list[OptionSpec]:
    """The rows a benchmark's request carries."""
    return [s for s in table() if benchmark in s.benchmarks]


def _names_fix(s: OptionSpec) -> str:
    if s.choices:
        return f"give a comma list of {', '.join(s.choices)}, each at most once"
    return "give a comma list"


def _stop_ok(text: str) -> bool:
    if text in ("a", "b"):
        return True
    try:
        return text.startswith("rse:") and strict.real(text[4:], 0, 1, above=True) < 1
    except strict.NumberError:
        return False


def _distort_ok(text: str) -> bool:
    parts = text.split(":")
    try:
        if len(parts) != 3:
            return False
        strict.whole(parts[0], 0, limits.MAX_RANKS - 1)
        strict.real(parts[1], -1, 1)
        strict.real(parts[2], -0.01, 0.01)
    except strict.NumberError:
        return False
    return True


def check_value(s: OptionSpec, value: Any) -> None:
    """Refuse a value the engine would refuse, in one line naming the option and the fix.

    Raises:
        InputError: out of bounds, not among the choices, or malformed.
    """
    shown = strict.shown(value if not isinstance(value, tuple) else ",".join(map(str, value)))
    fix = ""
    try:
        if s.type == "int" or s.type == "switch":
            strict.check_whole(value, int(s.min or 0), int(s.max or 0))
        elif s.type == "number":
            strict.check_real(value, float(s.min or 0), float(s.max or 0), s.above)
        elif s.type == "sizes":
            if not value or not all(0 <= v <= limits.MAX_MESSAGE_BYTES for v in value):
                fix = f"give sizes from 0 to {limits.MAX_MESSAGE_BYTES} bytes"
        elif s.type == "names":
            items = str(value).split(",")
            bad = not all(items) or len(set(items)) < len(items)
            if bad or (s.choices and not set(items) <= set(s.choices)):
                fix = _names_fix(s)
        elif s.type == "choice" and value not in s.choices:
            fix = f"give one of {', '.join(s.choices)}"
        elif s.type == "stop" and not _stop_ok(str(value)):
            fix = "give a, b or rse:X with 0 < X < 1"
        elif s.type == "distort" and not _distort_ok(str(value)):
            fix = DISTORT_FIX
    except strict.NumberError as err:
        raise InputError(f"{s.run_flag} {err}") from None
    if fix:
        raise InputError(f"{s.run_flag} {shown}: {fix}")


def check(options: EngineOptions) -> None:
    """Check every option that is set, then the rule across two of them.

    Raises:
        InputError: the first value the engine would refuse.
    """
    for name, value in options.given().items():
        check_value(spec(name), value)
    low = options.min_samples if options.min_samples is not None else spec("min_samples").default
    high = options.max_samples if options.max_samples is not None else spec("max_samples").default
    if high < low:
        raise InputError(f"--max-samples {high}: must be >= --min-samples {low}")


def _text(value: Any) -> str:
    if isinstance(value, tuple):
        return ",".join(str(v) for v in value)
    return str(value)


def as_recorded(options: EngineOptions) -> EngineOptions:
    """Options with the defaults their run was measured under made explicit.

    A stored request from before --recv-buffers existed measured bw and bibw with one
    receive buffer per message; resuming it under today's default would mix policies in one
    series, so it keeps "each".
    """
    ops = (options.ops or "").split(",")
    if options.recv_buffers is None and any(op in WINDOWED_OPS for op in ops):
        return options.replace(recv_buffers="each")
    return options


def argv(options: EngineOptions, skip: Iterable[tuple[str, str, int]] = ()) -> list[str]:
    """The engine's flags for the options that are set, and ``skip`` as --skip.

    The result is an argument list, never a shell string.
    """
    done = ",".join(f"{op}:{pair}:{size}" for op, pair, size in sorted(skip))
    given = as_recorded(options.replace(skip=done or options.skip)).given()
    out: list[str] = []
    for s in table():
        # An empty value that is also the default is left out: smpirun's script drops empty
        # arguments, and the engine would then read the next flag as the value.
        if s.name in given and not (given[s.name] == "" == s.default):
            out += [s.flag, _text(given[s.name])]
    return out


def procs(text: str | None, nranks: int) -> tuple[int, ...]:
    """The process counts of --procs, ascending without repeats (empty: the world alone).

    Raises:
        InputError: not a comma list of whole numbers from 2 to ``nranks``.
    """
    if not text:
        return ()
    fix = f"give process counts from 2 to the run's {nranks} ranks, e.g. 2,4 (or raise --np)"
    counts = set()
    for item in text.split(","):
        try:
            counts.add(strict.whole(item.strip(), 2, max(nranks, 2)))
        except strict.NumberError:
            raise InputError(f"--procs {strict.shown(text)}: {fix}") from None
    if max(counts) > nranks:
        raise InputError(f"--procs {strict.shown(text)}: {fix}")
    return tuple(sorted(counts))


def expected_points(options: EngineOptions, npairs: int, nranks: int = 2) -> int | None:
    """How many points the engine will write for these options (None: not known ahead)."""
    options = as_recorded(options)
    total = 0
    for op in [op for op in (options.ops or "").split(",") if op]:
        count = OP_POINTS.get(op, _coll_points)(options, op, npairs, nranks)
        if count is None:
            return None
        total += count
    return total


def _p2p_points(options: EngineOptions, op: str, npairs: int, nranks: int) -> int:
    policies = len((options.recv_buffers or spec("recv_buffers").default).split(","))
    return npairs * len(options.sizes or ()) * (policies if op in WINDOWED_OPS else 1)


def _loggp_points(options: EngineOptions, op: str, npairs: int, nranks: int) -> int:
    return npairs * len(options.loggp_sizes or options.sizes or ())


def _rma_points(options: EngineOptions, op: str, npairs: int, nranks: int) -> int:
    """Latency and bandwidth per operation and synchronisation."""
    rma_ops = (options.rma_ops or spec("rma_ops").default).split(",")
    syncs = (options.rma_sync or spec("rma_sync").default).split(",")
    return npairs * len(options.sizes or ()) * len(rma_ops) * len(syncs) * 2


def _mbw_points(options: EngineOptions, op: str, npairs: int, nranks: int) -> int | None:
    """One point per size and pair count; "auto" counts come from the nodes."""
    steps = options.mbw_pairs or spec("mbw_pairs").default
    return None if steps == "auto" else len(steps.split(",")) * len(options.sizes or ())


def _coll_points(options: EngineOptions, op: str, npairs: int, nranks: int) -> int:
    groups = len(options.procs.split(",")) if options.procs else 1
    sizes = options.coll_sizes or options.sizes or ()
    return groups * (1 if op in SIZELESS_OPS else len(sizes))


def _unknown(options: EngineOptions, op: str, npairs: int, nranks: int) -> None:
    return None  # contention: the pairs per level depend on where the ranks landed


def paired_points(options: EngineOptions, op: str, npairs: int, nranks: int) -> int:
    """Points of matrix (latency and bandwidth per ordered pair and size) or bisection."""
    sizes = len(options.matrix_sizes or spec("matrix_sizes").default)
    if op == "matrix":
        return nranks * (nranks - 1) * (1 + sizes)
    reps = options.bisection_reps or spec("bisection_reps").default
    return int(reps) * (nranks // 2) * sizes


def recorded(options: EngineOptions) -> dict[str, Any]:
    """The header's ``options`` the engine writes for these options (defaults filled in)."""
    given = options.given()
    out: dict[str, Any] = {}
    for s in table():
        value = given.get(s.name, s.default)
        if value is None and s.same_as:
            value = out[spec(s.same_as).record]
        if s.type == "distort":
            if value is not None:
                rank, offset, drift = str(value).split(":")
                out[s.record] = {
                    "rank": int(rank),
                    "offset_s": float(offset),
                    "drift": float(drift),
                }
            continue
        out[s.record] = list(value) if isinstance(value, (tuple, list)) else value
    return out


# Points per engine op, fn(options, op, p2p pairs, ranks); collectives are every other op.
OP_POINTS: dict[str, Callable[[EngineOptions, str, int, int], int | None]] = {
    **{op: _p2p_points for op in P2P_OPS},
    "loggp": _loggp_points,
    "matrix": paired_points,
    "bisection": paired_points,
    "rma": _rma_points,
    "mbw": _mbw_points,
    "contention": _unknown,
}
