"""What the `simulate` actions share: the cluster model option and the swept parameters' names.

The sweeps themselves are expanded by :mod:`commscope.simulate.sweeps`.
"""

from __future__ import annotations

import argparse

from commscope.cli import common
from commscope.errors import SimulateError

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
# Swept in the model itself rather than in the simulation parameters.
MODEL_SWEEPS = ("taper",)


def add_model_option(p: argparse.ArgumentParser) -> None:
    """Declare --cluster, the model file every `simulate` action reads."""
    common.option(
        p,
        "--cluster",
        env="COMMSCOPE_CLUSTER",
        metavar="FILE",
        help="cluster model YAML file (its 'simulation' section holds calibrations)",
    )


def require_simulable(benchmark: str | None) -> None:
    """Refuse, in one line, a kind the engine does not measure over MPI: SMPI runs MPI.

    None is the default run (every kind of ``commscope run``), which the engine measures.
    """
    from commscope import kinds

    names = kinds.engine_benchmarks()
    if benchmark is not None and benchmark not in names:
        raise SimulateError(
            f"{benchmark} measures what SMPI does not model (it does not run the MPI engine);"
            f" simulate an MPI kind: {', '.join(names)}"
        )


def sweep_names() -> list[str]:
    """The sweepable parameters as --sweep spells them (with '-')."""
    return [name.replace("_", "-") for name in SWEEPABLE_NAMES + MODEL_SWEEPS]
