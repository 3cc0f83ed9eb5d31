"""How far a wait for a rendezvous answer reaches: six counts of the same drawn waits.

The model prices the answers that wait behind a busy node's queue (``predict.answers``) by
drawing each racing answer's wait and counting the pattern rank by rank: a wait delays both
ranks of its transfer, and through them every later step that depends on them. This prints,
from a stored tables run and for each ring and placement, six counts of the same draws:

- chained: the model's count (what ``predict`` prices);
- own link: each sender's waits summed over the steps, the largest sum of any sender: as if a
  wait delayed only the link it idled, reaching no other rank;
- receiver only: the model's count, but a wait delays its transfer's receiver and not its
  sender, whose send completes once answered (its data then sits in its socket);
- arrival: the model's count, but the race of each answer decided by when the ranks come in
  the count itself (the receiver's node already streams when the sender comes later than that
  stream's two ranks; within ``--tie-ms`` of it, the coin of ``RACE_SHARE``), and a late
  sender's answer meets what is left of the stream's answered part;
- sender gates: a transfer starts once its sender is done with its earlier steps, whatever
  its receiver does (Open MPI's ring Allreduce posts each receive a step ahead, so a receiver
  late in its own send still answers), and its end, waits included, delays both ranks: a wait
  travels downstream only;
- wires apart: each connection's wire counted apart from its ranks: a handshake transfer's
  first fragment takes the wire once its sender comes and the wire is free, the receiver
  answers once that fragment is in and it has come, after its wait, and the rest follows;
  the sender is done once answered (the rest sits in its socket), the receiver once the
  rest is in.

With ``--captured FILE`` (what ``bench/exchange_capture.py --answers-out`` wrote), a last
column: the model's count with every racing answer waiting a draw of the answers captured
in the same operation on the same placement, less what one that met no queue took (the
median of those with under 3000 B ahead: the tables' own answer). No coin and no cap: how
long the answers waited in the real run, to tell whether the count or the waits are off.

Beside them, the racing answers and the mean wait priced for each, and the chained count with
every answer priced as a third rank's, as before the level measured the streaming rank's own
("as third": where it is measured, the answer whose receiver itself streams is priced from
it). ``--queue-run`` takes the answers' waits from another run's level queue (one that
measured that kind, in ``--queue-store``) with the same tables. Compare with what the
answers cost a run: the measured time less the count without them (`validate predict` prints
it in brackets). Not a test: it prints figures.

    .venv/bin/python bench/answer_chaining.py --store S --tables RUN --nodes 8 --procs 8
        [--rate 50mbit] [--ops allreduce:ring,allgather:ring] [--sizes 256K,1MiB,4MiB]
        [--queue-run RUN [--queue-store S]] [--captured FILE]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
from pathlib import Path

import numpy as np
from exchange_capture import IDLE_BYTES  # what an answer may find ahead and meet no queue
from numpy.typing import NDArray

from commscope import predict
from commscope.analysis import contention
from commscope.data.store import Store
from commscope.predict import answers as am
from commscope.predict import cost_tables
from commscope.predict.answers import AnswerWaits, Draws, step_spans
from commscope.units import parse_size
from commscope.validate.forcing import forced
from commscope.validate.predict import checked_placements, pattern_of


def own_link_s(drawn: Draws, p: int) -> float:
    """Mean over draws of the largest sum of one sender's waits."""
    own = np.zeros((drawn.extra.shape[0], p))
    for i in np.flatnonzero(drawn.race):
        own[:, drawn.transfers.src[i]] += drawn.extra[:, i]
    return float(own.max(axis=1).mean())


def receiver_only_s(drawn: Draws, p: int) -> float:
    """Mean over draws of the count with each wait delaying only its receiver, less the plain."""
    t = drawn.transfers
    ready = np.zeros((drawn.extra.shape[0], p))
    for a, b in step_spans(t.step):
        s, d = t.src[a:b], t.dst[a:b]
        sent = np.maximum(ready[:, s], ready[:, d]) + drawn.took[a:b]
        for k in range(b - a):
            ready[:, s[k]] = np.maximum(ready[:, s[k]], sent[:, k])
            ready[:, d[k]] = np.maximum(ready[:, d[k]], sent[:, k] + drawn.extra[:, a + k])
    return float((ready.max(axis=1) - drawn.plain_s(p)).mean())


def _sender_gated(drawn: Draws, p: int, extra: NDArray[np.float64]) -> NDArray[np.float64]:
    """Per draw, the count with each transfer gated by its sender alone: its makespan."""
    t = drawn.transfers
    ready = np.zeros((extra.shape[0], p))
    for a, b in step_spans(t.step):
        s, d = t.src[a:b], t.dst[a:b]
        end = ready[:, s] + drawn.took[a:b] + extra[:, a:b]
        for k in range(b - a):
            ready[:, s[k]] = np.maximum(ready[:, s[k]], end[:, k])
            ready[:, d[k]] = np.maximum(ready[:, d[k]], end[:, k])
    return np.asarray(ready.max(axis=1), dtype=np.float64)


def sender_gated_s(drawn: Draws, p: int) -> float:
    """Mean over draws of the count gated by senders only, with waits, less it without."""
    plain = _sender_gated(drawn, p, np.zeros((1, drawn.took.size)))[0]
    return float((_sender_gated(drawn, p, drawn.extra) - plain).mean())


def _linked(
    drawn: Draws,
    bulk: NDArray[np.bool_],
    first: NDArray[np.float64],
    extra: NDArray[np.float64],
    p: int,
) -> NDArray[np.float64]:
    """Per draw, the count with each connection's wire apart from its ranks: its makespan.

    A handshake transfer's first fragment (``first`` of its time) takes the wire once the
    sender comes and the wire is free; the receiver answers once that fragment is in and it
    has come itself, after its wait; the rest follows on the wire. The sender is done once
    answered (the rest sits in its socket), the receiver once the rest is in. Other
    transfers start once both ranks come, as the model counts them.
    """
    t = drawn.transfers
    rows = extra.shape[0]
    ready = np.zeros((rows, p))
    free: dict[tuple[int, int], NDArray[np.float64]] = {}
    for a, b in step_spans(t.step):
        done = ready.copy()
        for i in range(a, b):
            s, d = int(t.src[i]), int(t.dst[i])
            if not bulk[i]:
                end = np.maximum(ready[:, s], ready[:, d]) + drawn.took[i] + extra[:, i]
                done[:, s] = np.maximum(done[:, s], end)
                done[:, d] = np.maximum(done[:, d], end)
                continue
            head = np.maximum(ready[:, s], free.get((s, d), 0.0)) + first[i]
            answered = np.maximum(head, ready[:, d]) + extra[:, i]
            tail = answered + drawn.took[i] - first[i]
            free[(s, d)] = tail
            done[:, s] = np.maximum(done[:, s], answered)
            done[:, d] = np.maximum(done[:, d], tail)
        ready = done
    return np.asarray(ready.max(axis=1), dtype=np.float64)


def linked_s(drawn: Draws, node: NDArray[np.int64], answers: AnswerWaits, p: int) -> float:
    """Mean over draws of the count with wires apart from ranks, with waits, less it without."""
    t = drawn.transfers
    bulk = answers.rendezvous(t.nbytes) & (node[t.src] != node[t.dst])
    first = drawn.took * np.minimum(answers.eager.bytes / np.maximum(t.nbytes, 1), 1.0)
    plain = _linked(drawn, bulk, first, np.zeros((1, drawn.took.size)), p)[0]
    return float((_linked(drawn, bulk, first, drawn.extra, p) - plain).mean())


def captured_waits(path: Path) -> dict[tuple[str, str, int, str, int], NDArray[np.float64]]:
    """Per (op, algorithm, procs, placement, bytes) captured: the answers' waits, s.

    Each answer's delay less the median delay of those that met no queue, none below 0.
    """
    found = {}
    for line in path.read_text().splitlines():
        c = json.loads(line)
        delays = np.asarray(c["delays_s"], dtype=np.float64)
        if delays.size == 0:
            continue
        idle = delays[np.asarray(c["ahead_bytes"]) < IDLE_BYTES]
        base = float(np.median(idle)) if idle.size else float(delays.min())
        key = (c["op"], c["algorithm"], int(c["procs"]), c["placement"], int(c["bytes"]))
        found[key] = np.maximum(delays - base, 0.0)
    return found


def captured_s(drawn: Draws, p: int, waits: NDArray[np.float64]) -> float:
    """Mean over draws of the count with captured waits for the racing answers, less without."""
    rnd = np.random.default_rng(am.SEED)
    extra = np.zeros_like(drawn.extra)
    at = np.flatnonzero(drawn.race)
    extra[:, at] = waits[rnd.integers(0, waits.size, (extra.shape[0], at.size))]
    plain = drawn.plain_s(p)
    return float((dataclasses.replace(drawn, extra=extra).waited_s(p) - plain).mean())


def arrival_s(
    drawn: Draws, node: NDArray[np.int64], answers: AnswerWaits, p: int, tie_s: float
) -> float:
    """Mean over draws of the count with each race decided by arrival, less the plain count."""
    t = drawn.transfers
    rnd = np.random.default_rng(am.SEED)
    rows = drawn.extra.shape[0]
    bulk = answers.rendezvous(t.nbytes) & (node[t.src] != node[t.dst])
    ready = np.zeros((rows, p))
    for a, b in step_spans(t.step):
        s, d = t.src[a:b], t.dst[a:b]
        start = np.maximum(ready[:, s], ready[:, d])
        wait = np.zeros_like(start)
        for i in np.flatnonzero(drawn.race[a:b]):
            size = int(t.nbytes[a + i])
            waits = answers.waits_s(size)
            assert waits is not None  # racing transfers have waits measured
            left_s = answers.answered_s(size)
            # the receiver's node's streams to a third rank, as answers.racing counts them
            third = (node[s] == node[d[i]]) & ~((s == d[i]) & (d == s[i])) & bulk[a:b]
            streams = np.flatnonzero(third)
            late = ready[:, s[i]] - start[:, streams].min(axis=1)
            tie = np.abs(late) <= tie_s
            lost = np.where(tie, rnd.random(rows) < am.RACE_SHARE, late > 0)
            left = np.where(tie, rnd.random(rows) * left_s, np.maximum(left_s - late, 0.0))
            met = waits[rnd.integers(0, waits.size, rows)]
            wait[:, i] = np.where(lost, np.minimum(met, left), 0.0)
        end = start + drawn.took[a:b] + wait
        for k in range(b - a):
            ready[:, s[k]] = np.maximum(ready[:, s[k]], end[:, k])
            ready[:, d[k]] = np.maximum(ready[:, d[k]], end[:, k])
    return float((ready.max(axis=1) - drawn.plain_s(p)).mean())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--store", type=Path, required=True)
    ap.add_argument("--tables", required=True, help="a tables run in --store, with level queue")
    ap.add_argument("--nodes", type=int, required=True, help="the vcluster's nodes it ran on")
    ap.add_argument("--procs", type=int, required=True)
    ap.add_argument("--rate", default="50mbit")
    ap.add_argument("--ops", default="allreduce:ring,allgather:ring")
    ap.add_argument("--sizes", default="256K,1MiB,4MiB")
    ap.add_argument("--mpi", default="openmpi")
    ap.add_argument("--tie-ms", type=float, default=0.0, help="arrivals this close: a coin")
    ap.add_argument("--queue-run", type=int, help="price the answers from this run's level queue")
    ap.add_argument("--queue-store", type=Path, help="the store of --queue-run (--store)")
    ap.add_argument("--captured", type=Path, help="answers captured (exchange_capture.py)")
    args = ap.parse_args()
    with Store.open(args.store, write=False) as store:
        run_id, cells = cost_tables.table_cells(store, args.tables, "measure tables first")
        eager, waits = cost_tables.rendezvous_of(store, run_id)
    if args.queue_run is not None:
        with Store.open(args.queue_store or args.store, write=False) as store:
            waits = tuple(cost_tables.queue_waits(store, args.queue_run))
    model = predict.model_from_vcluster([f"csnode{i + 1}" for i in range(args.nodes)], args.rate)
    cost = predict.TableCost.from_tables(contention.tables(cells), f"run {run_id}", model)
    answers = AnswerWaits.of(eager, waits)
    if answers is None:
        raise SystemExit(f"--tables {args.tables}: no eager limit or answer waits recorded")
    print("op, bytes, placement, racing answers, mean wait priced each (ms);")
    print("answers' cost (ms): chained (the model's), own link, arrival, receiver only,")
    print("sender gates, wires apart;")
    print("chained with every answer priced as a third rank's")
    as_third = dataclasses.replace(answers, streamer=())
    captured = captured_waits(args.captured) if args.captured else {}
    if captured:
        print("then, where captured: chained with the captured waits, and their mean (ms)")
    for op_alg in args.ops.split(","):
        op, alg = op_alg.split(":")
        for size in (parse_size(x) for x in args.sizes.split(",")):
            pattern = pattern_of(forced(op, alg, args.mpi, args.procs), args.procs, size, 32)
            for placement in checked_placements(model, args.procs):
                drawn = am.draws(model, placement, pattern, cost, answers)
                if drawn is None or not drawn.race.any():
                    continue
                chained = am.cost_s(model, placement, pattern, cost, answers)
                each = float(drawn.extra[:, drawn.race].mean())
                own = own_link_s(drawn, args.procs)
                arrive = arrival_s(drawn, placement.node, answers, args.procs, args.tie_ms / 1e3)
                receiver = receiver_only_s(drawn, args.procs)
                down = sender_gated_s(drawn, args.procs)
                linked = linked_s(drawn, placement.node, answers, args.procs)
                third = am.cost_s(model, placement, pattern, cost, as_third)
                print(
                    f"{op} ({alg}) {size:>8} {placement.label:>4}: {int(drawn.race.sum()):3d}"
                    f" racing, {each * 1e3:5.2f} ms each; {chained * 1e3:6.1f} /"
                    f" {own * 1e3:6.1f} / {arrive * 1e3:6.1f} / {receiver * 1e3:6.1f}"
                    f" / {down * 1e3:6.1f} / {linked * 1e3:6.1f};"
                    f" {third * 1e3:6.1f}"
                    + (
                        f"; {captured_s(drawn, args.procs, met) * 1e3:6.1f}"
                        f" ({met.mean() * 1e3:.2f})"
                        if (met := captured.get((op, alg, args.procs, placement.label, size)))
                        is not None
                        else ""
                    )
                )


if __name__ == "__main__":
    main()
