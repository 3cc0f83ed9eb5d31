"""How `commscope predict` and `validate predict` get their prices, and what they say of them.

The prices come from ``predict.cost_tables`` (the t(m, cf) tables of --tables, Hockney fits of
that run's or --p2p's ping-pong, the cluster model's nominal rates); this module opens the
store for them and prints the notes on rendezvous answers and on the tables' own noise.
"""

from __future__ import annotations

import argparse
from contextlib import AbstractContextManager, nullcontext
from typing import TYPE_CHECKING, Any

from commscope.cli import common

if TYPE_CHECKING:
    from commscope.predict.cost_tables import Costs
    from commscope.predict.model import ClusterModel


def costs(args: argparse.Namespace, model: ClusterModel) -> Costs:
    """The tables of --tables, then Hockney fits (--tables' points, --p2p), then nominal rates."""
    from commscope.predict import cost_tables

    # The model's nominal rates alone need no store: one is opened only to read runs.
    stored: AbstractContextManager[Any] = nullcontext()
    if args.tables or args.p2p:
        stored = common.open_store(args, write=False)
    with stored as store:
        return cost_tables.costs(model, store, args.tables, args.p2p)


def print_above_eager(found: dict[str, Any] | None, recorded_with: str = "the tables") -> None:
    """Say that the messages go by rendezvous, whether their answers' waits are priced, and why."""
    if not found:
        return
    from commscope.units import size_text, time_text

    lim = found["eager_limit"]
    enough = f"{lim['setting']} to {found['eager_enough_bytes']} B or more"
    if found["raise_with"]:
        enough += f" (and {', '.join(found['raise_with'])} alike)"
    wait = found.get("answer_wait")
    measured = (
        f"the tables run measured such an answer waiting {time_text(wait['wait_s']['p50'])}"
        f" (median; 90th percentile {time_text(wait['wait_s']['p90'])}) behind its node's"
        f" outgoing stream of {size_text(wait['bytes'])} messages"
        if wait
        else ""
    )
    if found.get("answers_priced"):
        own = (
            " (where the receiver streams itself, its own answers' waits, as measured)"
            if found.get("streamers_priced")
            else ""
        )
        cost = (
            "; the prices include the answers that wait behind their receiver's node's stream"
            " to a third rank: half of those that race one, each behind what is left of the"
            f" racing message, at most its node's steady queue{own}; {measured}"
        )
    elif wait:
        cost = (
            f"; {measured}, but none behind messages as large as these or down to half their"
            " size, so the prices leave their answers' waits out"
        )
    else:
        cost = (
            "; the prices leave out the answers that wait behind their node's outgoing stream,"
            " which 'commscope run contention --levels queue' measures and the prices then include"
        )
    if found.get("exchanges_priced"):
        cost += (
            ", and, where the two ranks of an exchange arrive apart, the answer that waits"
            " behind the peer's own stream, as the tables run measured it"
        )
    common.console().print(
        f"note: its messages (up to {size_text(found['largest_message_bytes'])}) are above the"
        f" inter-node eager limit recorded with {recorded_with} ({lim['mpi']} {lim['path']}"
        f" {lim['bytes']} B, {lim['setting']}), so each waits for its receiver's answer"
        f" (docs/predict.md){cost}; setting {enough} sends them at once"
    )


def print_fastest(fastest: dict[str, float]) -> None:
    """Which leading placements the tables' own noise could put first, and whether to trust it."""
    from commscope.predict.cost_tables import RESAMPLES
    from commscope.predict.resolution import SUPPORT

    if not fastest:
        return
    out = common.console()
    shares = ", ".join(f"{label} {share:.0%}" for label, share in fastest.items() if share > 0)
    out.print(f"fastest under {RESAMPLES} resampled tables: {shares}")
    first, *others = fastest
    # A placement fastest under more than 1 - SUPPORT of the resamples could be the fastest.
    rivals = [label for label in others if fastest[label] > 1 - SUPPORT]
    if rivals:
        out.print(
            f"the tables' noise cannot tell {first} from {', '.join(rivals)}: their predicted"
            " times are equal or differ by less than the tables could measure; choose among"
            " them by other needs (fewer nodes, a free partition)"
        )
