"""Rendezvous answers that wait behind a busy node's queue: their expected cost, chained.

Above its eager limit an MPI sends a message between nodes only after the receiver answers
(Open MPI's TCP transport sends a first fragment up to the limit recorded with the tables,
then the rest once answered). The answer
leaves the receiver's node through the queue that holds whatever that node sends meanwhile,
and contention level "queue" measures how long it waits there behind a stream of m-byte
messages (``analysis.queue``). Whether such a stream is under way when a request comes is a
race, decided step by step:

- The answer to s -> d waits when d's node streams, in the same step, to a third rank: d (or
  a rank beside it) posted its own send and had it answered before s's request came. Ranks
  that play the same part post first equally often, so half such answers wait
  (``RACE_SHARE``: by symmetry, not an MPI's figure).
- A stream from d back to s itself does not count as a third: it waits for s's own answer.
- When d itself streams to the third (a ring with one rank per node), its answer comes from
  the streaming rank, after it posted its next message: the level measures that kind too
  ("streamer") and its waits price such answers where measured: it answers only between its
  own sends, so it meets the node's queue fuller than a third rank does.
- A pair exchange (s -> d and d -> s in one step) whose ranks arrive apart holds a wait of its
  own. When d arrives more than its first fragment's time before s, d's request is in when s
  comes: s answers it at once, before its own request, and d starts its stream to s. s's
  request then finds d streaming, and d's answer queues behind that stream on their own
  connection: behind every byte d has handed its socket and its MPI, not the node's shaped
  queue alone. Contention level "queue" measures that depth too (the stream's sender answering
  its receiver, ``QueueWait.back``). Ranks that arrive together answer each other before
  either streams, so the t(m, cf) tables' exchanges, timed in lockstep, hold none of it; in the
  count below ranks arrive apart through the waits drawn or their transfers' own times.
- A wait costs time only when it idles the sender's link: s's node sends nothing else
  between nodes in that step. Otherwise the link carries the other data meanwhile.
- No wait outlasts what the racing transfer sends once answered (``AnswerWaits.waits_s``),
  and an answer comes at no particular moment of that transfer's answered part: it meets what
  is left of it, a uniform share, and never more than the steady stream's measured queue. A
  steady stream keeps its queue full; a racing transfer's part drains once, so an answer that
  comes late in it meets little.

A wait delays the sender's and the receiver's next steps, so waits chain from step to step
(a ring pays more on p x 1, where every hop crosses a link, than on p/2 x 2). The cost is the
mean, over draws of which answers wait and how long (from the measured waits), of the
rank-by-rank count with the waits, less the same count without them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from commscope.analysis.queue import ANSWERERS, QueueWait
from commscope.data.mpi_config import EagerLimit
from commscope.predict.cost import CostModel
from commscope.predict.model import ClusterModel
from commscope.predict.patterns import Pattern
from commscope.predict.placement import Placement
from commscope.predict.pricing import transfer_times

RACE_SHARE = 0.5  # answers that find their node streaming: either rank of a race posts first
# Draws of the race: enough that another seed moves a price by well under a per cent.
DRAWS = 256
SEED = 2012  # fixed: a placement's price does not change from one call to the next
NEAR_LOG2 = 1.0  # a stream of messages down to half the size lends its waits


@dataclass(frozen=True)
class AnswerWaits:
    """The inter-node eager limit and the measured waits of an answer behind a stream.

    Attributes:
        eager: the limit between nodes, recorded with the tables.
        waits: per stream size measured (contention level queue), a third rank's waits.
        back: the stream's sender's answers to its receiver, over the stream's connection.
        streamer: the stream's sender's answers to another rank.
    """

    eager: EagerLimit
    waits: tuple[QueueWait, ...]
    back: tuple[QueueWait, ...] = ()
    streamer: tuple[QueueWait, ...] = ()

    @classmethod
    def of(cls, eager: EagerLimit | None, waits: Sequence[QueueWait]) -> AnswerWaits | None:
        """The limit and some waits measured, or None: without either nothing prices answers.

        ``waits`` holds every kind; each goes to the field of its name.
        """
        kinds = {k: tuple(w for w in waits if w.samples and w.kind == k) for k in ANSWERERS}
        if eager is None or not any(kinds.values()):
            return None
        return cls(eager, kinds["third"], kinds["back"], kinds["streamer"])

    def rendezvous(self, nbytes: NDArray[np.int64]) -> NDArray[np.bool_]:
        """Per message size: sent only after the receiver answers."""
        return np.asarray(nbytes + self.eager.headers_bytes > self.eager.bytes, dtype=np.bool_)

    def waits_s(self, nbytes: int, streaming: bool = False) -> NDArray[np.float64] | None:
        """The waits measured behind a stream of ``nbytes`` messages, none below 0.

        With ``streaming``, those of the streaming rank's own answers where measured near
        ``nbytes``, else a third rank's.

        Those of the largest stream size measured up to ``nbytes``, if it lies within a factor
        of two; None otherwise. A stream of larger messages keeps its node's queue fuller, so
        its waits would overstate a smaller message's.

        No wait outlasts what the racing transfer (of the same step, so of the same size) sends
        once answered, at the stream's rate: its first fragment, up to the eager limit, left
        with the request, as the one being answered did. A message just above the limit races
        nothing.
        """
        near = self._near(nbytes, streaming)
        return None if near is None else self._capped(near, nbytes)

    def answered_s(self, nbytes: int, streaming: bool = False) -> float:
        """How long an ``nbytes`` message's answered part takes at its stream's rate.

        The stream is the one whose waits price it (``waits_s``); inf when none is, or its
        rate is unknown.
        """
        near = self._near(nbytes, streaming)
        if near is None or not (math.isfinite(near.stream_Bps) and near.stream_Bps > 0):
            return math.inf
        return self._answered_bytes(nbytes) / near.stream_Bps

    def _near(self, nbytes: int, streaming: bool = False) -> QueueWait | None:
        """The largest stream measured up to ``nbytes``, within a factor of two, if any.

        Among the streaming rank's own answers with ``streaming``, where any is near.
        """
        pools = (self.streamer, self.waits) if streaming else (self.waits,)
        for pool in pools:
            below = [w for w in pool if w.bytes <= nbytes]
            if not below:
                continue
            near = max(below, key=lambda w: w.bytes)
            if math.log2(max(nbytes, 1) / max(near.bytes, 1)) <= NEAR_LOG2:
                return near
        return None

    def _answered_bytes(self, nbytes: int) -> int:
        """All of an ``nbytes`` message but its first fragment (up to the limit)."""
        return max(nbytes + self.eager.headers_bytes - self.eager.bytes, 0)

    def _capped(self, stream: QueueWait, nbytes: int) -> NDArray[np.float64]:
        """``stream``'s waits, none below 0 nor longer than the answered part takes.

        The answered part of an ``nbytes`` message is all but its first fragment; it goes at
        the stream's rate.
        """
        waits = np.maximum(stream.waits_s, 0.0)
        if math.isfinite(stream.stream_Bps) and stream.stream_Bps > 0:
            waits = np.minimum(waits, self._answered_bytes(nbytes) / stream.stream_Bps)
        return waits

    def behind_own_stream_s(self, nbytes: int) -> NDArray[np.float64] | None:
        """The waits of an answer behind its sender's fresh stream of ``nbytes`` messages.

        A message's answered part is handed to the connection at once, so the answer meets
        the connection as deep as it gets: the waits of the largest stream measured, none
        longer than that part takes at the stream's rate. None when not measured.
        """
        if not self.back:
            return None
        return self._capped(max(self.back, key=lambda w: w.bytes), nbytes)

    def first_fragment_s(self) -> float:
        """How long a request's first fragment (up to the limit) takes at the streams' rate."""
        streams = (*self.waits, *self.back, *self.streamer)
        rates = [w.stream_Bps for w in streams if w.stream_Bps > 0]
        return self.eager.bytes / max(rates) if rates else 0.0


@dataclass(frozen=True)
class FlatTransfers:
    """A pattern's transfers, every step's in order: per transfer its ranks, size and step."""

    src: NDArray[np.int64]
    dst: NDArray[np.int64]
    nbytes: NDArray[np.int64]
    step: NDArray[np.int64]


def flat_transfers(pattern: Pattern) -> FlatTransfers:
    """Every transfer of ``pattern``, step by step."""
    (src, dst, nbytes), step = pattern.flat()
    return FlatTransfers(src, dst, nbytes, step)


def _between_nodes(
    node: NDArray[np.int64], t: FlatTransfers, rendezvous: NDArray[np.bool_]
) -> tuple[NDArray[np.bool_], NDArray[np.bool_], NDArray[np.int64], NDArray[np.int64]]:
    """Per transfer, how it crosses between nodes.

    Returns: whether it goes between nodes after a handshake; whether a transfer d -> s of its
    step does so too; and how many such transfers leave its sender's node and its receiver's
    node in its step.
    """
    p = node.size
    ns, nd = node[t.src], node[t.dst]
    bulk = np.asarray((ns != nd) & rendezvous, dtype=np.bool_)
    nodes = int(node.max()) + 1
    steps = int(t.step.max()) + 1
    # Per step and node: transfers between nodes leaving it that wait for an answer.
    out = np.bincount(t.step[bulk] * nodes + ns[bulk], minlength=steps * nodes)
    key = (t.step * p + t.src) * p + t.dst
    back = np.isin((t.step * p + t.dst) * p + t.src, key[bulk])  # d -> s in the same step
    return bulk, back, out[t.step * nodes + ns], out[t.step * nodes + nd]


def racing(
    node: NDArray[np.int64], t: FlatTransfers, rendezvous: NDArray[np.bool_]
) -> NDArray[np.bool_]:
    """Per transfer: its answer may wait behind a third-party stream, idling its sender's link.

    ``node``: per rank, its node; ``rendezvous``: per transfer, sent only once answered.
    """
    bulk, back, from_sender, from_receiver = _between_nodes(node, t, rendezvous)
    third = from_receiver - back.astype(np.int64) > 0
    alone = from_sender == 1  # the sender's link carries this transfer only
    return np.asarray(bulk & third & alone, dtype=np.bool_)


def streaming_receiver(
    node: NDArray[np.int64], t: FlatTransfers, rendezvous: NDArray[np.bool_]
) -> NDArray[np.bool_]:
    """Per transfer: its receiver itself streams to a third rank in the same step.

    The stream goes between nodes after an answer; the receiver's answer then comes from the
    streaming rank, not from a rank beside it.
    """
    p = node.size
    bulk, back, _, _ = _between_nodes(node, t, rendezvous)
    steps = int(t.step.max()) + 1
    out = np.bincount(t.step[bulk] * p + t.src[bulk], minlength=steps * p)
    return np.asarray(out[t.step * p + t.dst] - back.astype(np.int64) > 0, dtype=np.bool_)


def exchanging(
    node: NDArray[np.int64], t: FlatTransfers, rendezvous: NDArray[np.bool_]
) -> NDArray[np.bool_]:
    """Per transfer: half of a pair exchange between nodes, alone on its sender's link.

    Its answer may wait behind the other half's stream, idling that link (``cost_s``).
    """
    bulk, back, from_sender, _ = _between_nodes(node, t, rendezvous)
    return np.asarray(bulk & back & (from_sender == 1), dtype=np.bool_)


def step_spans(step: NDArray[np.int64]) -> list[tuple[int, int]]:
    """The [start, end) index ranges of each step's transfers (``step`` is in order)."""
    bounds = np.flatnonzero(np.r_[True, step[1:] != step[:-1], True])
    return list(zip(bounds[:-1].tolist(), bounds[1:].tolist(), strict=True))


def chain(
    t: FlatTransfers,
    took: NDArray[np.float64],
    extra: NDArray[np.float64],
    p: int,
    behind: NDArray[np.float64] | None = None,
    first_s: float = 0.0,
) -> NDArray[np.float64]:
    """Per draw (row of ``extra``), the rank-by-rank count: its makespan.

    A transfer starts once both its ranks are done with their earlier steps (as ``rank``'s
    count), and lasts ``took`` plus its row's ``extra``. With ``behind`` (per draw and
    transfer, the wait of an exchange's answer behind its peer's stream; 0 for the rest), a
    transfer whose sender arrives more than ``first_s`` after its receiver waits that too.
    """
    draws = extra.shape[0]
    ready = np.zeros((draws, p))
    rows = np.arange(draws)[:, None]
    for a, b in step_spans(t.step):
        s, d = t.src[a:b], t.dst[a:b]
        wait = extra[:, a:b]
        if behind is not None:
            late = ready[:, s] - ready[:, d] > first_s
            wait = wait + np.where(late, behind[:, a:b], 0.0)
        end = np.maximum(ready[:, s], ready[:, d]) + took[a:b] + wait
        if np.unique(s).size == s.size and np.unique(d).size == d.size:
            ready[:, s] = np.maximum(ready[:, s], end)  # each rank once a side: no scatter
            ready[:, d] = np.maximum(ready[:, d], end)
        else:
            np.maximum.at(ready, (rows, s[None, :]), end)
            np.maximum.at(ready, (rows, d[None, :]), end)
    return np.asarray(ready.max(axis=1), dtype=np.float64)


@dataclass(frozen=True)
class Draws:
    """The answers' waits drawn for one pattern on one placement, ready to chain.

    Attributes:
        transfers: the pattern's transfers, flat.
        took: per transfer, its time in the count without waits.
        race: per transfer, its answer may wait behind a third-party stream.
        extra: per draw (row) and transfer, the racing answer's wait (0 where it won).
        behind: per draw and transfer, an exchange's answer's wait behind its peer's own
            stream, paid when its sender comes late; None when no exchange is priced.
        first_s: how late the sender must come for ``behind`` to be paid.
    """

    transfers: FlatTransfers
    took: NDArray[np.float64]
    race: NDArray[np.bool_]
    extra: NDArray[np.float64]
    behind: NDArray[np.float64] | None
    first_s: float

    def plain_s(self, p: int) -> float:
        """The rank-by-rank count of the ``p`` ranks without any wait: its makespan."""
        return float(chain(self.transfers, self.took, np.zeros((1, self.took.size)), p)[0])

    def waited_s(self, p: int) -> NDArray[np.float64]:
        """Per draw, the rank-by-rank count with its waits."""
        return chain(self.transfers, self.took, self.extra, p, self.behind, self.first_s)


def draws(
    model: ClusterModel,
    placement: Placement,
    pattern: Pattern,
    cost: CostModel,
    answers: AnswerWaits,
) -> Draws | None:
    """The waits of ``pattern``'s answers on ``placement``, drawn; None when none race."""
    t = flat_transfers(pattern)
    rendezvous = answers.rendezvous(t.nbytes)
    race = racing(placement.node, t, rendezvous)
    measured = [m for m in np.unique(t.nbytes[race]) if answers.waits_s(int(m)) is not None]
    race &= np.isin(t.nbytes, measured)  # sizes with no stream measured near: unpriced
    pairs = exchanging(placement.node, t, rendezvous) if answers.back else None
    if not race.any() and (pairs is None or not pairs.any()):
        return None
    took, _ = transfer_times(
        model, placement, t.src, t.dst, t.nbytes, t.step, len(pattern.steps), cost
    )
    rnd = np.random.default_rng(SEED)
    extra = np.zeros((DRAWS, t.src.size))
    streamer = np.zeros(t.src.size, dtype=np.bool_)  # unmeasured: all drawn as before
    if answers.streamer:
        streamer = streaming_receiver(placement.node, t, rendezvous)
    for size in np.unique(t.nbytes[race]):
        for own in (False, True):  # a rank beside the stream answers, or the streamer itself
            at = np.flatnonzero(race & (t.nbytes == size) & (streamer == own))
            if at.size:
                extra[:, at] = _drawn(rnd, answers, int(size), own, at.size)
    behind = None
    if pairs is not None and pairs.any():
        behind = np.zeros((DRAWS, t.src.size))
        for size in np.unique(t.nbytes[pairs]):
            deep = answers.behind_own_stream_s(int(size))
            assert deep is not None  # answers.back is measured
            at = np.flatnonzero(pairs & (t.nbytes == size))
            behind[:, at] = deep[rnd.integers(0, deep.size, (DRAWS, at.size))]
    return Draws(t, took, race, extra, behind, answers.first_fragment_s())


def _drawn(
    rnd: np.random.Generator, answers: AnswerWaits, size: int, streaming: bool, n: int
) -> NDArray[np.float64]:
    """``DRAWS`` rows of ``n`` racing answers' waits behind ``size``-byte streams: half lose."""
    waits = answers.waits_s(size, streaming)
    assert waits is not None  # sizes without waits left the race
    lost = rnd.random((DRAWS, n)) < RACE_SHARE
    met = waits[rnd.integers(0, waits.size, (DRAWS, n))]
    left_s = answers.answered_s(size, streaming)
    if math.isfinite(left_s):  # what is left of the racing part when the answer comes
        met = np.minimum(met, rnd.random((DRAWS, n)) * left_s)
    return np.asarray(np.where(lost, met, 0.0), dtype=np.float64)


def cost_s(
    model: ClusterModel,
    placement: Placement,
    pattern: Pattern,
    cost: CostModel,
    answers: AnswerWaits,
) -> float:
    """The mean time the waiting answers add to ``pattern`` on ``placement`` (0: none race)."""
    drawn = draws(model, placement, pattern, cost, answers)
    if drawn is None:
        return 0.0
    # Waits never shorten the count: below 0 is the mean's rounding. The mean of the
    # differences: draws that add nothing add exactly 0.
    return max(0.0, float((drawn.waited_s(pattern.p) - drawn.plain_s(pattern.p)).mean()))
