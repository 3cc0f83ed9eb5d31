"""What `commscope predict` prices with, and how far the tables' own noise moves its lead.

The cost model takes each level from the first source that has it: the t(m, cf) tables of
--tables (Peryshkova and Kurnosov 2018, contention-aware placement), Hockney fits of that
run's or --p2p's ping-pong, the cluster model's nominal rates. With tables, the leading
placements are priced again under resampled tables (``predict.resolution``) to say whether
the first place is settled.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from commscope.cli import common

if TYPE_CHECKING:
    from commscope import predict
    from commscope.analysis.contention import LevelTable
    from commscope.analysis.queue import QueueWait
    from commscope.data.mpi_config import EagerLimit
    from commscope.data.records import Contention
    from commscope.data.store import Store
    from commscope.predict.answers import AnswerWaits
    from commscope.predict.cost import CostModel
    from commscope.predict.model import ClusterModel
    from commscope.predict.rank import Prediction


@dataclass(frozen=True)
class Costs:
    """The cost model, and what re-prices it from resampled tables (no tables: no cells)."""

    cost: CostModel
    cells: list[Contention]
    with_tables: Callable[[dict[str, LevelTable]], CostModel]
    eager: EagerLimit | None = None  # the inter-node eager limit recorded with the tables
    queue: tuple[QueueWait, ...] = ()  # the tables run's answer waits (contention level queue)

    @property
    def answers(self) -> AnswerWaits | None:
        """What prices rendezvous answers waiting behind busy queues (None: not measured)."""
        from commscope.predict.answers import AnswerWaits

        return AnswerWaits.of(self.eager, self.queue)


def table_cells(store: Store, tables: str, fix: str) -> tuple[int, list[Contention]]:
    """Run ``tables``'s t(m, cf) cells; a run without any is refused, naming ``fix``."""
    run_id = store.resolve_run(tables)
    cells = store.contentions(run_id)
    common.require(
        bool(cells), f"--tables {tables}: run {run_id} has no contention measurements; {fix}"
    )
    return run_id, cells


def costs(args: argparse.Namespace, model: ClusterModel) -> Costs:
    """The tables of --tables, then Hockney fits (--tables' points, --p2p), then nominal rates."""
    from commscope import predict
    from commscope.analysis import contention
    from commscope.predict.cost import HockneyCost, TableCost

    models: list[CostModel] = []  # after the tables' model, in order of precedence
    cells: list[Contention] = []
    source = ""
    eager = None
    queue: tuple[QueueWait, ...] = ()
    # The model's nominal rates alone need no store: one is opened only to read runs.
    stored: AbstractContextManager[Any] = nullcontext()
    if args.tables or args.p2p:
        stored = common.open_store(args, write=False)
    with stored as store:
        if args.tables:
            run_id, cells = table_cells(
                store, args.tables, "measure t(m, cf) first, or give --p2p RUN"
            )
            source = f"run {run_id}"
            eager, queue = rendezvous_of(store, run_id)
            if points := store.points(run_id):
                models.append(HockneyCost.from_p2p(points, f"run {run_id}"))
        if args.p2p:
            run_id = store.resolve_run(args.p2p)
            points = [pt for pt in store.points(run_id) if pt.op == "pingpong"]
            common.require(bool(points), f"--p2p {args.p2p}: run {run_id} has no ping-pong points")
            models.append(HockneyCost.from_p2p(points, f"run {run_id}"))
    nominal = HockneyCost.from_model(model)
    if nominal.levels:
        models.append(nominal)
    common.require(
        bool(cells or models),
        "no cost model: give --tables RUN (t(m, cf) tables), --p2p"
        " RUN (ping-pong), or channel bandwidths in the cluster model",
    )

    def with_tables(tables: dict[str, LevelTable]) -> CostModel:
        return predict.combine(TableCost.from_tables(tables, source, model), *models)

    cost = with_tables(contention.tables(cells)) if cells else predict.combine(*models)
    return Costs(cost, cells, with_tables, eager, queue)


def rendezvous_of(store: Store, run_id: int) -> tuple[EagerLimit | None, tuple[QueueWait, ...]]:
    """Run ``run_id``'s inter-node eager limit (recorded) and answer waits (level queue)."""
    from commscope.data import mpi_config

    limits = mpi_config.ProtocolLimits.from_json(store.run_data(run_id, mpi_config.RUN_DATA_KIND))
    return (limits.inter_node() if limits else None), tuple(queue_waits(store, run_id))


def queue_waits(store: Store, run_id: int) -> list[QueueWait]:
    """Run ``run_id``'s answer waits behind a node's outgoing stream, per stream size."""
    from commscope.analysis import queue

    return queue.waits(store.queues(run_id))


def above_eager(
    pattern: predict.Pattern, eager: EagerLimit | None, waits: Sequence[QueueWait] = ()
) -> dict[str, Any] | None:
    """The pattern's largest message and the inter-node eager limit it exceeds, if it does.

    Above that limit the MPI sends a message between nodes only after its receiver answers (a
    rendezvous). The tables' pair exchanges carry one such handshake per transfer, in lockstep;
    an answer that races its node's outgoing stream to a third rank waits behind it, which
    the prices include when ``waits`` were measured (contention level queue) behind messages
    as large as these or down to half their size (``predict.answers``; ``answers_priced``).
    The wait of the stream size nearest the largest message says what one handshake can cost.
    """
    from commscope.predict.answers import AnswerWaits

    largest = pattern.largest_message()
    if eager is None or largest + eager.headers_bytes <= eager.bytes:
        return None
    found: dict[str, Any] = {
        "largest_message_bytes": largest,
        "eager_limit": asdict(eager),
        # the least limit that sends every message of the pattern at once, and what goes with it
        "eager_enough_bytes": largest + eager.headers_bytes,
        "raise_with": list(eager.raised_with()),
    }
    measured = [w for w in waits if w.samples and w.kind == "third"]  # behind the node's queue
    if measured:
        near = min(measured, key=lambda w: abs(math.log2(max(w.bytes, 1) / max(largest, 1))))
        found["answer_wait"] = near.to_json()
    else:
        found["answer_wait"] = None
    answers = AnswerWaits.of(eager, waits)
    found["answers_priced"] = answers is not None and answers.waits_s(largest) is not None
    # The stream's sender answering its receiver: an exchange's answer behind its own stream.
    found["exchanges_priced"] = answers is not None and bool(answers.back)
    # The streaming rank answering another rank: the answer of a hop whose receiver streams.
    found["streamers_priced"] = answers is not None and bool(answers.streamer)
    return found


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


# The leading placements whose lead the resampled tables test: enough to see a near tie for
# the first place, few enough that a 192-rank ranking stays a matter of seconds.
CONTENDERS = 4
RESAMPLES = 100


def fastest_shares(
    model: ClusterModel, pattern: predict.Pattern, costs: Costs, ranked: list[Prediction]
) -> dict[str, float]:
    """Per leading placement, the share of resampled tables under which none is faster.

    Empty without tables, or with fewer than two priced placements.
    """
    from commscope import predict
    from commscope.predict import resolution

    leading = [pr for pr in ranked if pr.priced][:CONTENDERS]
    if not costs.cells or len(leading) < 2:
        return {}
    costed = resolution.resampled_costs(costs.cells, costs.with_tables, RESAMPLES)
    # The answers' waits are priced once, from the tables as measured (``validate.pairs``).
    found = resolution.spread(
        lambda cost: [
            predict.predict(model, pr.placement, pattern, cost).time_s + pr.answer_wait_s
            for pr in leading
        ],
        costed,
    )
    return {pr.placement.label: found.fastest_share(i) for i, pr in enumerate(leading)}


def print_fastest(fastest: dict[str, float]) -> None:
    """Which leading placements the tables' own noise could put first, and whether to trust it."""
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
