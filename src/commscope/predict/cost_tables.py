"""What a prediction prices with, from stored runs, and how far the tables' noise moves its lead.

The cost model takes each level from the first source that has it: the t(m, cf) tables of a
contention run (Peryshkova and Kurnosov 2018, contention-aware placement), Hockney fits of
that run's or another run's ping-pong, the cluster model's nominal rates. With tables, the
leading placements are priced again under resampled tables (``predict.resolution``) to say
whether the first place is settled.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from commscope.errors import PredictError

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
    _require(bool(cells), f"--tables {tables}: run {run_id} has no contention measurements; {fix}")
    return run_id, cells


def costs(model: ClusterModel, store: Store | None, tables: str | None, p2p: str | None) -> Costs:
    """The tables of run ``tables``, then Hockney fits (its points, run ``p2p``'s), then rates.

    ``store`` is read only for ``tables`` and ``p2p`` (None when neither is given); each names
    its run as --tables and --p2p do.

    Raises:
        PredictError: a named run lacks what it is given for, or nothing prices a level.
    """
    from commscope import predict
    from commscope.analysis import contention
    from commscope.predict.cost import HockneyCost, TableCost

    models: list[CostModel] = []  # after the tables' model, in order of precedence
    cells: list[Contention] = []
    source = ""
    eager = None
    queue: tuple[QueueWait, ...] = ()
    if store is not None and tables:
        run_id, cells = table_cells(store, tables, "measure t(m, cf) first, or give --p2p RUN")
        source = f"run {run_id}"
        eager, queue = rendezvous_of(store, run_id)
        if points := store.points(run_id):
            models.append(HockneyCost.from_p2p(points, f"run {run_id}"))
    if store is not None and p2p:
        run_id = store.resolve_run(p2p)
        points = [pt for pt in store.points(run_id) if pt.op == "pingpong"]
        _require(bool(points), f"--p2p {p2p}: run {run_id} has no ping-pong points")
        models.append(HockneyCost.from_p2p(points, f"run {run_id}"))
    nominal = HockneyCost.from_model(model)
    if nominal.levels:
        models.append(nominal)
    _require(
        bool(cells or models),
        "no cost model: give --tables RUN (t(m, cf) tables), --p2p"
        " RUN (ping-pong), or channel bandwidths in the cluster model",
    )

    def with_tables(found: dict[str, LevelTable]) -> CostModel:
        return predict.combine(TableCost.from_tables(found, source, model), *models)

    cost = with_tables(contention.tables(cells)) if cells else predict.combine(*models)
    return Costs(cost, cells, with_tables, eager, queue)


def _require(condition: bool, message: str) -> None:
    if not condition:
        raise PredictError(message)


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
