"""The options of `commscope run` that are engine options, declared from the engine's table.

A row of ``engine/options.json`` with ``"run": true`` becomes an option here: its flag, default,
bounds (as the argparse type) and help come from the row, so the CLI, the engine and the stored
request cannot disagree. Options whose CLI meaning differs from the engine's (--ops, --sizes,
--levels, where defaults depend on the benchmark) are declared by run_cmd itself.
"""

from __future__ import annotations

import argparse
from typing import Any

from commscope.cli import common
from commscope.data.request import EngineOptions
from commscope.measure import engine_options
from commscope.measure.engine_options import OptionSpec

# Engine options `commscope run` also takes from the environment.
ENV = {"timer": "COMMSCOPE_TIMER"}
METAVARS = {"distort": "RANK:OFFSET:DRIFT"}


def group_of(spec: OptionSpec) -> str:
    """Where --help lists an option: p2p (the main list), coll, contention or matrix."""
    if {"p2p", "loggp", "rma", "mbw"} & set(spec.benchmarks):
        return "p2p"
    if {"matrix", "bisection"} & set(spec.benchmarks):
        return "matrix"
    return "coll" if "coll" in spec.benchmarks else "contention"


def _kwargs(spec: OptionSpec) -> dict[str, Any]:
    if spec.type == "switch":
        return {"action": "store_true"}
    out: dict[str, Any] = {"default": spec.default}
    if spec.type == "int":
        out["type"] = common.whole(int(spec.min or 0), int(spec.max or 0))
    elif spec.type == "number":
        out["type"] = common.number(float(spec.min or 0), float(spec.max or 0), spec.above)
    if spec.type == "choice":
        out["choices"] = spec.choices
    else:  # named after the flag, as before the table: --point-budget POINT_BUDGET
        out["metavar"] = METAVARS.get(spec.type, spec.flag[2:].upper().replace("-", "_"))
    return out


def add_options(groups: dict[str, Any], only: str) -> None:
    """Declare the table's `commscope run` options of group ``only`` on ``groups[only]``."""
    for spec in engine_options.table():
        if not spec.run or group_of(spec) != only:
            continue
        kwargs = _kwargs(spec)
        help_text = spec.help.replace("%", "%%")  # argparse formats help with %
        if kwargs.get("action") == "store_true":
            groups[only].add_argument(spec.flag, dest=spec.name, help=help_text, **kwargs)
            continue
        common.option(
            groups[only],
            spec.flag,
            env=ENV.get(spec.name),
            dest=spec.name,
            help=help_text,
            **kwargs,
        )


def check_given(args: argparse.Namespace) -> None:
    """Check every table option of the command line, used by the benchmark or not.

    Raises:
        InputError: the first value the engine would refuse, in one line.
    """
    for spec in engine_options.table():
        value = getattr(args, spec.name, None) if spec.run else None
        if value is not None:
            engine_options.check_value(spec, _value(spec, value))
    low, high = args.min_samples, args.max_samples
    engine_options.check(EngineOptions(min_samples=low, max_samples=high))


def _value(spec: OptionSpec, value: Any) -> Any:
    if spec.type == "switch":
        return int(value)
    if spec.type == "names":  # "one, each" reads as "one,each"
        return ",".join(item.strip() for item in str(value).split(","))
    return value


def values(args: argparse.Namespace, benchmark: str) -> dict[str, Any]:
    """The table options a benchmark's request carries, from the command line."""
    out: dict[str, Any] = {}
    for spec in engine_options.for_benchmark(benchmark):
        value = getattr(args, spec.name, None) if spec.run else None
        if value is not None:
            out[spec.name] = _value(spec, value)
    return out
