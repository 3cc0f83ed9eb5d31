"""What the `simulate` actions share: the cluster model option and the swept parameters."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from commscope.cli import common
from commscope.errors import UsageError

if TYPE_CHECKING:
    from commscope.simulate.params import SimParams

# The parameters --help names, written out: commscope.simulate.params imports the cluster model
# (numpy, PyYAML), which would slow every command's start. tests/unit/test_cli_startup.py checks
# them against SWEEPABLE.
SWEEPABLE_NAMES = (
    "nic_latency",
    "nic_bandwidth",
    "memory_latency",
    "memory_bandwidth",
    "switch_latency",
)


def add_model_option(p: argparse.ArgumentParser) -> None:
    """Declare --cluster, the model file every `simulate` action reads."""
    common.option(
        p,
        "--cluster",
        env="COMMSCOPE_CLUSTER",
        metavar="FILE",
        help="cluster model YAML file (its 'simulation' section holds calibrations)",
    )


def sweep_names() -> list[str]:
    """The sweepable parameters as --sweep spells them (with '-')."""
    return [name.replace("_", "-") for name in SWEEPABLE_NAMES]


def expand_sweeps(
    specs: list[str], params: SimParams
) -> list[tuple[str, SimParams, dict[str, Any] | None]]:
    """(label, parameters, sweep record) of every run: one per value of each swept parameter.

    The sweep record (parameter, value as given, value in seconds or bytes/s) goes into the
    run's request, so a report can line the runs of one sweep up.
    """
    from commscope.simulate.params import SWEEPABLE

    if not specs:
        return [("", params, None)]
    out: list[tuple[str, SimParams, dict[str, Any] | None]] = []
    for spec in specs:
        name, _, values = spec.partition("=")
        if not values:
            raise UsageError(f"--sweep {spec}: give NAME=V1,V2,... (e.g. nic-latency=80us,400us)")
        # Spelled with '-' on the command line, '_' in the model's names (and the labels).
        name = name.replace("-", "_")
        for value in values.split(","):
            swept = params.with_value(name, value)
            record = {
                "parameter": name,
                "value": value,
                "si_value": getattr(swept, SWEEPABLE[name][0]),
            }
            out.append((f"{name}={value}", swept, record))
    return out
