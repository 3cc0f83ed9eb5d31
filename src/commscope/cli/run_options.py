"""The options of `commscope run` that are engine options, declared from the engine's table.

A row of ``engine/options.json`` with ``"run": true`` becomes an option of each `commscope run
NAME` whose benchmarks it serves (the command's rows, ``kinds/run_commands``): its flag (the
row's ``cli``, else the engine's), default, bounds (as the argparse type) and help come from the
row, so the CLI, the engine and the stored request cannot disagree. Options whose CLI meaning
differs from the engine's (--ops, --sizes, --levels, where defaults depend on the benchmark)
are declared by run_kinds.
"""

from __future__ import annotations

import argparse
import re
from typing import Any

from commscope.cli import common
from commscope.data.request import EngineOptions
from commscope.kinds import run_commands
from commscope.measure import engine_options
from commscope.measure.engine_options import OptionSpec

# Engine options `commscope run` also takes from the environment.
ENV = {"timer": "COMMSCOPE_TIMER"}
METAVARS = {"distort": "RANK:OFFSET:DRIFT", "int": "N", "number": "X", "stop": "RULE"}
# A row's help names the benchmarks it serves ("p2p: ..."); a kind's own --help drops that.
_PREFIX = re.compile(r"^(p2p|rma|mbw|matrix|bisection|matrix and bisection): ")


# `run all --help`'s groups, first match: the group, and the benchmarks whose rows it lists.
GROUPS = (
    ("p2p", {"p2p", "loggp", "rma", "mbw"}),
    ("matrix", {"matrix", "bisection"}),
    ("coll", {"coll"}),
)


def group_of(spec: OptionSpec) -> str:
    """Where `run all --help` lists an option: p2p (with loggp's), coll, or another kind's."""
    serves = set(spec.benchmarks)
    return next((group for group, names in GROUPS if names & serves), "contention")


def rows_of(name: str) -> list[OptionSpec]:
    """The table's `commscope run` options ``commscope run NAME`` takes, in the table's order.

    The command says which (``RunCommand.rows`` and the rows it adds or drops).
    """
    command = run_commands.named(name)
    if command is None:
        return []
    benchmarks = set(command.rows)
    return [
        spec
        for spec in engine_options.table()
        if spec.run
        and spec.name not in command.dropped_rows
        and (benchmarks & set(spec.benchmarks) or spec.name in command.extra_rows)
    ]


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
    else:  # short, so that the help stands beside the flag: --point-budget X
        out["metavar"] = METAVARS.get(spec.type, "LIST")
    return out


def add_row(group: Any, spec: OptionSpec, listed: bool = True) -> None:
    """Declare one table row as a `commscope run` option on ``group`` (unlisted: no help)."""
    kwargs = _kwargs(spec)
    help_text = _PREFIX.sub("", spec.help).replace("%", "%%")  # argparse formats help with %
    if spec.hidden or not listed:  # testing only, or listed by another kind: accepted
        group.add_argument(spec.run_flag, dest=spec.name, help=argparse.SUPPRESS, **kwargs)
    elif kwargs.get("action") == "store_true":
        group.add_argument(spec.run_flag, dest=spec.name, help=help_text, **kwargs)
    else:
        common.option(
            group, spec.run_flag, env=ENV.get(spec.name), dest=spec.name, help=help_text, **kwargs
        )


def add_options(groups: dict[str, Any], name: str) -> None:
    """Declare the table options of ``commscope run NAME``, each in its group of ``groups``.

    ``groups`` maps group_of's names to argument groups; one named "*" takes the rest, and
    rows of a group mapped to None are accepted but not listed.
    """
    for spec in rows_of(name):
        group = groups.get(group_of(spec), groups.get("*"))
        add_row(group or groups["hidden"], spec, listed=group is not None)


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
