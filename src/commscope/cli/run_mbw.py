"""`commscope run mbw`: the request of osu_mbw_mr's multi-pair bandwidth and message rate."""

from __future__ import annotations

import argparse
from typing import Any

from commscope import strict
from commscope.cli import run_options
from commscope.errors import UsageError
from commscope.units import parse_size, parse_size_list

DEFAULT_MAX = "4MiB"  # osu_mbw_mr's largest size
MAX_STEPS = 64  # pair counts one run measures at most (the engine's limit)


def sizes(args: argparse.Namespace) -> list[int]:
    """--sizes as given, else powers of two from 1 byte to --max-size, as osu_mbw_mr sends."""
    if args.sizes is not None:
        return parse_size_list(args.sizes, "--sizes")
    largest = parse_size(args.max_size or DEFAULT_MAX, "--max-size")
    out = [1]
    while out[-1] * 2 <= largest:
        out.append(out[-1] * 2)
    return out


def pair_steps(text: str, nranks: int) -> list[int] | None:
    """The pair counts of --pairs-per-step; None for "auto" (the engine picks them).

    Raises:
        UsageError: not a list of distinct whole numbers, or more pairs than the ranks form.
    """
    if text == "auto":
        return None
    most = nranks // 2
    fix = f"give distinct pair counts from 1 to {most} (half of {nranks} ranks), e.g. 1,2"
    try:
        steps = [strict.whole(item.strip(), 1, max(most, 1)) for item in text.split(",")]
    except strict.NumberError:
        raise UsageError(f"--pairs-per-step {strict.shown(text)}: {fix}") from None
    if most < 1 or len(set(steps)) < len(steps) or len(steps) > MAX_STEPS:
        raise UsageError(f"--pairs-per-step {strict.shown(text)}: {fix}")
    return steps


def engine_part(args: argparse.Namespace) -> dict[str, Any]:
    """The engine options of an mbw request (--pairs-per-step is checked with the rank count)."""
    part: dict[str, Any] = {"sizes": tuple(sizes(args))}
    part.update(run_options.values(args, "mbw"))
    return part
