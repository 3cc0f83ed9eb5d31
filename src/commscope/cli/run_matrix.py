"""`commscope run matrix`: which pairs it measures, and the confirmation round after it."""

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


def confirm(store: Any, run_id: int, request: Any, mpi: Any, quiet: bool) -> None:
    """Measure the first pass's suspects again against healthy partners (a segment a round)."""
    from commscope.analysis import confirm as confirming
    from commscope.analysis import matrix as matrix_analysis
    from commscope.data.run_data import read_run
    from commscope.measure import runner

    run = read_run(store, run_id)
    points = [p for p in run.family("paired") if "/" not in p.pair]
    if not points or run.info.status != "complete":
        return
    header = run.info.header
    nranks = int(header["nranks"]) if header else 1 + max(max(p.ranks) for p in points)
    names = matrix_analysis.node_names(header, nranks)
    nodes, links = confirming.suspects(matrix_analysis.matrices(points, names))
    plan = confirming.plan(names, nodes, links)
    if not plan:
        return
    if not quiet:
        what = ", ".join([*nodes, *(f"{a}->{b}" for a, b in links)])
        common.console(stderr=True).print(
            common.terminal_text(f"confirming {what} against healthy partners"), markup=False
        )
    for prefix in confirming.PREFIXES:  # one launch a round: a moment of load hits one
        again = request.replace(
            engine=request.engine.replace(matrix_plan=plan, matrix_prefix=prefix)
        )
        runner.run(store, run_id, again, mpi)
