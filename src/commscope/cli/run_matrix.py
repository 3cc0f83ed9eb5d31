"""`commscope run matrix`: its options, and which pairs it measures."""

from __future__ import annotations

import argparse
import os
from typing import Any

from commscope.cli import common
from commscope.errors import InputError, UsageError

ALL = ("auto", "all")  # --pairs values that measure every pair (auto: p2p's default)


def add_options(group: Any) -> None:
    """The matrix's own options (--pairs is shared with p2p: see engine/options.json)."""
    group.add_argument(
        "--partners",
        dest="sample",
        type=common.whole(1, 1_000_000),
        metavar="K",
        help="K random partners per node each way instead of every pair",
    )
    group.add_argument(
        "--no-confirm",
        action="store_true",
        help="name the first pass's suspects without measuring them again",
    )


def add_drain_option(group: Any) -> None:
    """Declare ``--drain`` (after a matrix run: drain the nodes it names in Slurm)."""
    group.add_argument(
        "--drain",
        action="store_true",
        help="drain in Slurm each node named slow ('commscope undrain' returns them);"
        " without it the commands are printed; exit 0 none, 1 warning, 2 drained, 3 unknown",
    )


def engine_plan(args: argparse.Namespace) -> str | None:
    """The engine's --matrix-plan for --pairs all|quick|FILE and --partners K; None: all.

    Raises:
        UsageError: --partners with --pairs other than all, or a pairs file that cannot be read.
        InputError: the file's pairs break its format.
    """
    from commscope.analysis import pair_plans

    mode = (getattr(args, "pairs", None) or "all").strip()
    sample = getattr(args, "sample", None)
    if sample is not None:
        if mode not in ALL:
            raise UsageError(f"--partners {sample} with --pairs {mode}: give one of them")
        return pair_plans.sample_plan(sample)
    if mode in ALL:
        return None
    if mode == "quick":
        return pair_plans.quick_plan()
    if not os.path.isfile(mode):
        raise UsageError(
            f"--pairs {mode}: a matrix takes all, quick or a file of 'sender receiver' lines;"
            " no such file"
        )
    try:
        with open(mode, encoding="utf-8") as f:
            text = f.read(8 << 20)
    except (OSError, UnicodeDecodeError) as err:
        raise InputError(f"--pairs {mode}: cannot be read ({err}); give a text file") from None
    return pair_plans.file_plan(text, f"--pairs {mode}")
