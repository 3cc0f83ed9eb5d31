"""Predicted time of a pattern on a placement, and placements ranked by it.

A step takes as long as its slowest transfer; the pattern takes the sum of its steps
(module 2 of Peryshkova and Kurnosov 2018, contention-aware placement). When the placement is
symmetric, every step rotation-invariant and every switch's routes as long as the first's,
only the transfers from the first node's ranks are counted: every other node's are their
images. Their cf then depends only on the step, the
level and the sockets at both ends, so transfers are counted by that class and each class is
priced once.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
from numpy.typing import NDArray

from commscope.errors import PredictError
from commscope.predict import answers as answers_mod
from commscope.predict import channels, timeline
from commscope.predict.cost import CostModel, with_fabric
from commscope.predict.model import LEVELS, MEMORY, NIC, SOCKET, ClusterModel
from commscope.predict.patterns import Pattern, ShiftStep, Transfers
from commscope.predict.placement import Placement, enumerate_placements
from commscope.predict.pricing import transfer_times

# Transfers counted at once by the rank-by-rank count: bounds its memory, and keeps its
# bins (steps x channel sides) in cache (2^16 ranked a 1,024-rank dragonfly all-to-all
# about 2.7x faster than 2^20, same prices).
BATCH = 1 << 16


@dataclass(frozen=True)
class Prediction:
    """The predicted time of one pattern on one placement.

    Attributes:
        placement: where the ranks run.
        time_s: sum of the step times; inf when a level it uses has no cost (``missing``).
        step_s: time of each step (0 for steps of unpriced levels).
        transfers: per level, transfers over all steps.
        max_cf: per level, the most transfers sharing one channel (side) in any step.
        missing: levels used that the cost model cannot price.
        answer_wait_s: of ``time_s``, what rendezvous answers waiting behind their nodes'
            queues add (``predict.answers``; 0 when not priced).
    """

    placement: Placement
    time_s: float
    step_s: NDArray[np.float64] = field(repr=False)
    transfers: dict[str, int]
    max_cf: dict[str, float]
    missing: tuple[str, ...] = ()
    answer_wait_s: float = 0.0

    @property
    def priced(self) -> bool:
        """Every level used has a cost."""
        return not self.missing

    def to_json(self, model: ClusterModel | None = None, steps: bool = False) -> dict[str, Any]:
        """Plain dict; time_s is None when unpriced; each step's time with ``steps``."""
        d = {
            "placement": self.placement.to_json(model),
            "time_s": self.time_s if self.priced else None,
            "missing_levels": list(self.missing),
            "transfers": self.transfers,
            "max_cf": self.max_cf,
            "steps": int(self.step_s.size),
            "slowest_step_s": float(self.step_s.max(initial=0.0)),
            "answer_wait_s": self.answer_wait_s,
        }
        if steps:
            d["step_s"] = self.step_s.tolist()
        return d


def _missing(cost: CostModel, used: NDArray[np.int64]) -> tuple[str, ...]:
    """Levels with transfers that the cost model cannot price."""
    known = set(cost.sources())
    return tuple(lv for code, lv in enumerate(LEVELS) if used[code] and lv not in known)


def _symmetric(
    model: ClusterModel, placement: Placement, pattern: Pattern, cost: CostModel
) -> Prediction:
    """Price rotation-invariant steps from the representatives' transfers, by class."""
    steps = [s for s in pattern.steps if isinstance(s, ShiftStep)]
    sizes = np.array([s.offsets.size for s in steps], dtype=np.int64)
    offsets = np.concatenate([s.offsets for s in steps]) if steps else np.zeros(0, np.int64)
    step_of = np.repeat(np.arange(len(steps), dtype=np.int64), sizes)
    classes = channels.count_classes(model, placement, offsets, step_of, len(steps))
    cf = classes.cf()
    load = classes.fabric(placement.nodes)
    nbytes = np.array([s.nbytes for s in steps], dtype=np.int64)
    step_s = np.zeros(len(steps))
    per_class = classes.n.sum(axis=(0, 2, 3)) * placement.nodes // placement.period
    used = per_class[: len(LEVELS)].copy()
    used[NIC] += per_class[channels.FAR]  # a far transfer is a NIC transfer, uplinks beside
    max_cf = np.zeros(len(LEVELS))
    known = set(cost.sources())

    def price(
        level: int,
        k: NDArray[np.int64],
        here: NDArray[np.float64],
        extra: NDArray[np.float64] | None,
    ) -> None:
        max_cf[level] = max(max_cf[level], float(here.max()))
        if LEVELS[level] not in known:
            return
        took = cost.time_s(LEVELS[level], nbytes[k], here)
        if level == NIC:
            took = with_fabric(cost, known, took, nbytes[k], load[k])
            if extra is not None:  # the longest route of the class beyond one switch's
                took = took + cost.route_s(nbytes[k], extra)
        np.maximum.at(step_s, k, took)

    for code in (MEMORY, SOCKET, NIC):
        k, s, t = np.nonzero(classes.n[:, code])
        if k.size:
            extra = None if classes.extra_s is None else classes.extra_s[k, code, s, t]
            price(code, k, cf[k, code, s, t], extra)
    if classes.far is not None:  # far transfers, by step and target switch
        k, g = np.nonzero(classes.far)
        if k.size:
            extra = None if classes.far_extra_s is None else classes.far_extra_s[k, g]
            price(NIC, k, classes.far_cf()[k, g], extra)
    return _result(placement, step_s, used, max_cf, _missing(cost, used))


def _general(
    model: ClusterModel, placement: Placement, pattern: Pattern, cost: CostModel
) -> Prediction:
    """Price every transfer of every step, steps batched up to BATCH transfers at a time."""
    step_s = np.zeros(len(pattern.steps))
    used = np.zeros(len(LEVELS), dtype=np.int64)
    max_cf = np.zeros(len(LEVELS))
    batch: list[tuple[int, Transfers]] = []
    ready = np.zeros(pattern.p)  # per rank: when it is done with the steps so far

    def price() -> None:
        # One count for the batch: per-step numpy calls would cost more than the counting
        # for the few transfers of a tree step.
        src = np.concatenate([t[0] for _, t in batch])
        dst = np.concatenate([t[1] for _, t in batch])
        nbytes = np.concatenate([t[2] for _, t in batch])
        step_of = np.repeat(
            np.array([k for k, _ in batch], dtype=np.int64), [t[0].size for _, t in batch]
        )
        took, usage = transfer_times(
            model, placement, src, dst, nbytes, step_of, len(pattern.steps), cost
        )
        for code in range(len(LEVELS)):
            sel = usage.level == code
            if sel.any():
                used[code] += int(np.count_nonzero(sel))
                max_cf[code] = max(max_cf[code], float(usage.cf[sel].max()))
        np.maximum.at(step_s, step_of, took)
        # A transfer starts once both its ranks are done with their earlier steps: ranks
        # wait for their partners only, not for the whole step (no barrier between steps).
        first = 0
        for _, t in batch:
            s, d, n = t[0], t[1], t[0].size
            end = np.maximum(ready[s], ready[d]) + took[first : first + n]
            np.maximum.at(ready, s, end)
            np.maximum.at(ready, d, end)
            first += n
        batch.clear()

    queued = 0
    for k, step in enumerate(pattern.steps):
        transfers = step.transfers(pattern.p)
        if transfers[0].size == 0:
            continue
        if batch and queued + transfers[0].size > BATCH:
            price()
            queued = 0
        batch.append((k, transfers))
        queued += transfers[0].size
    if batch:
        price()
    return _result(placement, step_s, used, max_cf, _missing(cost, used), float(ready.max()))


def _result(
    placement: Placement,
    step_s: NDArray[np.float64],
    used: NDArray[np.int64],
    max_cf: NDArray[np.float64],
    missing: tuple[str, ...],
    chain_s: float | None = None,
) -> Prediction:
    total = float(step_s.sum()) if chain_s is None else chain_s
    return Prediction(
        placement=placement,
        time_s=math.inf if missing else total,
        step_s=step_s,
        transfers={lv: int(used[c]) for c, lv in enumerate(LEVELS) if used[c]},
        max_cf={lv: float(max_cf[c]) for c, lv in enumerate(LEVELS) if used[c]},
        missing=missing,
    )


def predict(
    model: ClusterModel,
    placement: Placement,
    pattern: Pattern,
    cost: CostModel,
    answers: answers_mod.AnswerWaits | None = None,
) -> Prediction:
    """Price every step of ``pattern`` on ``placement``.

    With ``answers`` (an eager limit and measured waits), rendezvous answers that race a
    busy node's queue are priced too (``predict.answers``).

    Raises:
        PredictError: the placement and the pattern have different process counts.
    """
    if placement.p != pattern.p:
        raise PredictError(
            f"placement {placement.label} has {placement.p} processes, the pattern {pattern.p}"
        )
    if pattern.timeline:
        found = _timed(model, placement, pattern, cost)
    elif placement.symmetric and pattern.shift_invariant and model.routes_repeat():
        found = _symmetric(model, placement, pattern, cost)
    else:
        found = _general(model, placement, pattern, cost)
    if answers is None or not found.priced:
        return found
    wait_s = answers_mod.cost_s(model, placement, pattern, cost, answers)
    return replace(found, time_s=found.time_s + wait_s, answer_wait_s=wait_s)


def _timed(
    model: ClusterModel, placement: Placement, pattern: Pattern, cost: CostModel
) -> Prediction:
    """Price a pattern whose steps overlap on a timeline (``predict.timeline``)."""
    played = timeline.run(model, placement, pattern, cost)
    used = np.bincount(played.level, minlength=len(LEVELS))
    makespan = float(played.end_s.max(initial=0.0))
    return _result(
        placement,
        played.step_s(len(pattern.steps)),
        used,
        played.max_cf,
        played.missing,
        makespan,
    )


def rank_placements(
    model: ClusterModel,
    pattern: Pattern,
    cost: CostModel,
    placements: list[Placement] | None = None,
    answers: answers_mod.AnswerWaits | None = None,
) -> list[Prediction]:
    """Predictions for ``placements`` (default: every regular one), fastest first.

    Placements that use a level the cost model cannot price come last, in their given order.
    """
    todo = enumerate_placements(model, pattern.p) if placements is None else placements
    out = [predict(model, pl, pattern, cost, answers) for pl in todo]
    # sorted() is stable: equal times keep the enumeration order (fewer nodes first).
    return sorted(out, key=lambda pr: pr.time_s)
