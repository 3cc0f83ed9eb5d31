"""How long a small message waits behind its node's outgoing stream (contention level "queue").

Above its eager limit an MPI sends a message only after the receiver answers, and the answer
leaves the receiver's node through the queue that holds whatever that node is sending
meanwhile. A queue record times round trips of a small message whose answer leaves a node
while the node streams m-byte messages out, and the same round trips with nothing else
running. The wait of a loaded round trip is its time less the idle round trips' median; the
bytes queued ahead of it are that wait at the stream's rate, the depth of the queue the
answer met. Three kinds: the answer of a third rank on the streaming node (behind the node's
shaped queue); the stream's sender answering the stream's receiver ("back": behind the
stream's own connection, every byte the sender has handed its socket and its MPI); and the
stream's sender answering another rank ("streamer": its own connection, behind the node's
queue, from the rank that streams, as each hop of a ring with one rank per node answers).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from commscope.data.records import Queue

QUANTILES = (0.1, 0.5, 0.9)
ANSWERERS = ("third", "back", "streamer")  # who answers a wait, in the order they are listed
ANSWERER = {
    "third": "third rank",
    "back": "stream's sender",
    "streamer": "stream's sender, to another rank",
}


@dataclass(frozen=True)
class QueueWait:
    """The waits of one stream size.

    Attributes:
        bytes: the stream's message size.
        idle_s: median round trip with nothing else running.
        idle_max_s: the longest idle round trip: a loaded one beyond it waited.
        waits_s: every loaded round trip less ``idle_s``, sorted.
        stream_Bps: median over repetitions of the stream's rate, until its receiver had it.
        kind: who answered (``ANSWERERS``): a third rank on the stream's node, the stream's
            sender over the stream's connection ("back"), or the stream's sender to a rank
            other than its receiver ("streamer").
    """

    bytes: int
    idle_s: float
    idle_max_s: float
    waits_s: NDArray[np.float64]
    stream_Bps: float
    kind: str = "third"

    @property
    def back(self) -> bool:
        """The answers came from the stream's sender over the stream's connection."""
        return self.kind == "back"

    @property
    def samples(self) -> int:
        """Round trips timed under load."""
        return int(self.waits_s.size)

    def quantile(self, q: float) -> float:
        """The wait at quantile ``q`` (NaN without samples)."""
        return float(np.quantile(self.waits_s, q)) if self.samples else float("nan")

    @property
    def waiting_share(self) -> float:
        """Share of loaded round trips longer than every idle one (NaN without samples)."""
        if not self.samples:
            return float("nan")
        return float(np.mean(self.waits_s + self.idle_s > self.idle_max_s))

    def queued_bytes(self, q: float) -> float:
        """Bytes ahead of the answer at quantile ``q``: the wait at the stream's rate."""
        return max(self.quantile(q), 0.0) * self.stream_Bps

    def to_json(self) -> dict[str, Any]:
        """``show --json``: the figures above, times in seconds."""
        return {
            "bytes": self.bytes,
            "answerer": ANSWERER[self.kind],
            "idle_round_trip_s": self.idle_s,
            "samples": self.samples,
            "wait_s": {f"p{round(q * 100)}": self.quantile(q) for q in QUANTILES},
            "waiting_share": self.waiting_share,
            "stream_Bps": self.stream_Bps,
            "queued_bytes": {f"p{round(q * 100)}": self.queued_bytes(q) for q in QUANTILES},
        }


def wait_of(record: Queue) -> QueueWait:
    """The waits of one queue record."""
    idle = np.array([t for rep in record.idle_s for t in rep])
    loaded = np.array([t for rep in record.loaded_s for t in rep])
    idle_s = float(np.median(idle)) if idle.size else float("nan")
    rates = [record.bytes * record.messages / t for t in record.stream_s if t > 0]
    return QueueWait(
        record.bytes,
        idle_s,
        float(idle.max()) if idle.size else float("nan"),
        np.sort(loaded - idle_s),
        float(np.median(rates)) if rates else float("nan"),
        record.kind,
    )


def waits(records: list[Queue]) -> list[QueueWait]:
    """One :class:`QueueWait` per record: by who answered (``ANSWERERS``), then by size."""
    return [wait_of(r) for r in sorted(records, key=lambda r: (ANSWERERS.index(r.kind), r.bytes))]
