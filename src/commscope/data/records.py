"""The engine's JSON-lines records as frozen dataclasses (schema: records-v1.json).

Each line the engine writes is one record: a header first, then one point per measured
(op, pair, bytes), then an end record. ``record_parse.parse_record`` turns one line into one
of these dataclasses.

numpy is imported inside the medians, not at the top: the store and the runner import this
module, and commands that take no median (``--help``, ``runs``) need not wait ~0.1 s for numpy.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

# The header record and its parts live in data/header.py; re-exported for readers of records.
from commscope.data.header import Header as Header
from commscope.data.header import MpiInfo as MpiInfo
from commscope.data.header import PairInfo as PairInfo
from commscope.data.header import RankInfo as RankInfo
from commscope.data.header import TimerInfo as TimerInfo

SCHEMA_VERSION = 1
SCHEMA_FILE = "records-v1.json"
RECORD_TYPES = (
    "header",
    "point",
    "coll",
    "contention",
    "queue",
    "stream",
    "linpack",
    "loggp",
    "end",
)

MIN_KEPT_SHARE = 0.25  # untouched samples needed before held-up ones are left out


@dataclass(frozen=True)
class Point:
    """Raw samples of one measured (op, pair, bytes).

    For op "pingpong" a sample is a one-way time (round trip / 2); for "bw" and "bibw" (and
    their one-buffer-per-message series "bw_each", "bibw_each") a sample is the time for one
    window of messages, carrying ``bytes_per_sample`` bytes.
    For "mbw_k<k>" (k pairs at once) a sample is the time in which every pair's window
    arrived: ``bytes_per_sample`` is k x window x bytes, the pairs are in ``raw["pairs"]``.

    ``switches`` holds (sample, a's count, b's count) for every sample in which the kernel took
    rank a's core away (during its timed region) or rank b's (since the end of its previous
    sample): involuntary context switches the engine counted. ``interrupted`` are the samples
    those held up; the medians leave them out as long as at least a quarter of the samples (and
    two) remain, and ``samples_s`` keeps every sample.
    """

    op: str
    pair: str
    ranks: tuple[int, int]
    bytes: int
    bytes_per_sample: int
    window: int | None
    iters_per_sample: int
    warmup: int
    samples_s: tuple[float, ...]
    stop: str
    raw: dict[str, Any] = field(compare=False, repr=False)
    switches: tuple[tuple[int, int, int], ...] = ()

    @property
    def key(self) -> tuple[str, str, int]:
        """(op, pair, bytes): what identifies this point within a run."""
        return (self.op, self.pair, self.bytes)

    @property
    def n_samples(self) -> int:
        """Number of samples."""
        return len(self.samples_s)

    @cached_property
    def interrupted(self) -> tuple[int, ...]:
        """Samples held up by a lost core, ascending.

        A switch of rank a in its timed region holds up that sample. Rank b's count covers a
        sample and the gap before the next one: switched out while it copies, it holds up this
        sample; while it only waits for the end of its last send (the other rank already has
        the data) or for the next command, it holds up the next exchange instead. One time
        off the core holds up one exchange, so of the two samples the longer one is taken.
        """
        out: set[int] = set()
        n = len(self.samples_s)
        for i, a, b in self.switches:
            if a:
                out.add(i)
            if b:
                out.add(i + 1 if i + 1 < n and self.samples_s[i + 1] > self.samples_s[i] else i)
        return tuple(sorted(out))

    @cached_property
    def kept_samples_s(self) -> tuple[float, ...]:
        """The samples no rank lost its core in.

        Every sample when fewer than a quarter (or two) are left: then losing the core is the
        machine's normal state (ranks sharing cores, as on the virtual cluster, where 90-99 %
        of ping-pong samples are held up), and the few untouched ones would make a curve that
        jumps between the lucky and the usual time from one size to the next.
        """
        if not self.interrupted:
            return self.samples_s
        out = set(self.interrupted)
        kept = tuple(s for i, s in enumerate(self.samples_s) if i not in out)
        enough = len(kept) >= max(2, MIN_KEPT_SHARE * len(self.samples_s))
        return kept if enough else self.samples_s

    @property
    def interrupted_share(self) -> float:
        """Share of the samples during which a rank lost its core (0 when not counted)."""
        return len(self.interrupted) / len(self.samples_s) if self.samples_s else 0.0

    @cached_property
    def median_s(self) -> float:
        """Median of the kept samples (see ``kept_samples_s``), in seconds."""
        import numpy as np

        return float(np.median(np.asarray(self.kept_samples_s, dtype=float)))

    @property
    def latency_s(self) -> float:
        """Median sample time: one-way latency for pingpong, time per window for bw/bibw."""
        return self.median_s

    @property
    def bandwidth_Bps(self) -> float:  # noqa: N802 - the unit is part of the name
        """Bytes per second at the median sample time.

        Returns 0.0 when no bytes move, NaN when the median time is zero (below the timer's
        resolution, so the rate is unknown).
        """
        if self.bytes_per_sample == 0:
            return 0.0
        if self.median_s <= 0.0:
            return float("nan")
        return self.bytes_per_sample / self.median_s


@dataclass(frozen=True)
class Coll:
    """Every launch of one collective (or timing pattern) at one size.

    ``times_s[i]`` is launch i's time: the maximum over ranks of its end minus its scheduled
    start, in synchronised global time. ``flags[i]`` is 0 for a valid launch, 1 when a rank
    started late, 2 when a rank ended after the launch's window, 3 for both.
    ``start_delays_s[i]``: how long after its scheduled start the latest rank began launch i
    (empty for records that predate it, and for imported ones).
    """

    op: str
    group: str
    nranks: int
    bytes: int
    root: int | None
    method: str
    buffers: str | None
    times_s: tuple[float, ...]
    flags: tuple[int, ...]
    stage: tuple[int, ...]
    windows_s: tuple[float, ...]
    stop: str
    raw: dict[str, Any] = field(compare=False, repr=False)
    start_delays_s: tuple[float, ...] = ()

    @property
    def key(self) -> tuple[str, str, int]:
        """(op, group, bytes): what identifies this point within a run."""
        return (self.op, self.group, self.bytes)

    @property
    def n_samples(self) -> int:
        """Number of launches, valid or not."""
        return len(self.times_s)

    @property
    def valid_times_s(self) -> tuple[float, ...]:
        """Times of the valid launches only."""
        return tuple(t for t, f in zip(self.times_s, self.flags, strict=True) if f == 0)

    @property
    def valid_start_delays_s(self) -> tuple[float, ...] | None:
        """The valid launches' start delays, in ``valid_times_s``'s order (None: not recorded)."""
        if len(self.start_delays_s) != self.n_samples:
            return None
        return tuple(d for d, f in zip(self.start_delays_s, self.flags, strict=True) if f == 0)

    @cached_property
    def median_s(self) -> float:
        """Median of the valid launch times (NaN when none is valid)."""
        import numpy as np

        valid = self.valid_times_s
        return float(np.median(valid)) if valid else float("nan")


@dataclass(frozen=True)
class Contention:
    """t(m, cf): cf pairs exchanging ``bytes`` at once over one level's channel.

    Module 1 of Peryshkova and Kurnosov 2018 (contention-aware placement).
    ``samples_s[r][i]`` is process i's time in repetition r (pairs in order, a then b):
    the time of ``nruns`` Irecv + Isend + Waitall divided by 2 * nruns, as in the paper;
    with ``in_flight`` W > 1, W receives and W sends per iteration, divided by 2 * W * nruns.
    With ``idle_s`` > 0 every repetition began after the pairs sent nothing for that long, and
    ``after_idle_s[r][i]`` is process i's first exchange of repetition r, divided by 2 * W: over
    TCP, what a connection restarted after idle takes (the samples then follow it, warm).
    """

    level: str
    cf: int
    bytes: int
    pairs: tuple[tuple[int, int], ...]
    nruns: int
    start: str
    samples_s: tuple[tuple[float, ...], ...]
    raw: dict[str, Any] = field(compare=False, repr=False)
    in_flight: int = 1
    idle_s: float = 0.0
    after_idle_s: tuple[tuple[float, ...], ...] = ()

    @property
    def key(self) -> tuple[str, str, int]:
        """(contention_<level>, cf<cf>, bytes): what identifies this point within a run."""
        return (f"contention_{self.level}", f"cf{self.cf}", self.bytes)

    @property
    def n_samples(self) -> int:
        """Number of repetitions."""
        return len(self.samples_s)

    @cached_property
    def median_s(self) -> float:
        """Median over repetitions of the slowest process: t(m, cf)."""
        import numpy as np

        return float(np.median([max(rep) for rep in self.samples_s]))

    @cached_property
    def after_idle_median_s(self) -> float | None:
        """Median over repetitions of the slowest process's exchange after idle (None: no idle)."""
        import numpy as np

        if not self.after_idle_s:
            return None
        return float(np.median([max(rep) for rep in self.after_idle_s]))


@dataclass(frozen=True)
class Queue:
    """Round trips of a small message from a node while that node streams m bytes out.

    Contention level "queue": how long an answer (an MPI's rendezvous handshake) waits behind
    its node's own outgoing data. ``stream`` is the stream's (sender, receiver), ``ping`` the
    (pinger, answerer), the answerer on the stream sender's node: a third rank there
    (``kind`` "third"), the stream's sender answering the stream's receiver ("back": the answer
    shares the stream's connection), or the stream's sender answering another rank
    ("streamer": its own connection, from the rank that streams). Per repetition r:
    ``idle_s[r]``, round trips of ``ping_bytes`` with nothing else running; ``loaded_s[r]``,
    round trips back to back while the stream sent ``messages`` messages of ``bytes``;
    ``stream_s[r]``, the stream's time, from its first send until the receiver said it had
    it all (engines before that ended it at the last send's return, which for eager messages
    is only when the kernel took them).
    """

    bytes: int
    stream: tuple[int, int]
    ping: tuple[int, int]
    ping_bytes: int
    messages: int
    stream_s: tuple[float, ...]
    idle_s: tuple[tuple[float, ...], ...]
    loaded_s: tuple[tuple[float, ...], ...]
    raw: dict[str, Any] = field(compare=False, repr=False)

    @property
    def kind(self) -> str:
        """Who answers.

        "third" (a rank beside the stream's sender), "back" (the stream's sender, to the
        stream's receiver) or "streamer" (the stream's sender, to another rank).
        """
        if self.ping[1] != self.stream[0]:
            return "third"
        return "back" if self.ping[0] == self.stream[1] else "streamer"

    @property
    def back(self) -> bool:
        """The stream's sender answers the stream's receiver, over the stream's connection."""
        return self.kind == "back"

    @property
    def key(self) -> tuple[str, str, int]:
        """(contention_queue, ping, back or streamer, bytes): what identifies this point."""
        return ("contention_queue", "ping" if self.kind == "third" else self.kind, self.bytes)

    @property
    def n_samples(self) -> int:
        """Round trips timed under load, all repetitions."""
        return sum(len(rep) for rep in self.loaded_s)

    @cached_property
    def median_s(self) -> float:
        """Median round trip under load (NaN when none was timed)."""
        import numpy as np

        loaded = [t for rep in self.loaded_s for t in rep]
        return float(np.median(loaded)) if loaded else float("nan")


@dataclass(frozen=True)
class StreamDirection:
    """One direction of a stream: what its sender sent and its receiver got, and when.

    Times are each end's own, from its start; ``bins_bytes[k]`` is what arrived during
    interval k. ``retrans`` counts the segments the sender retransmitted (None if unknown).
    """

    src: int
    dst: int
    sent_bytes: int
    messages: int
    send_s: float
    received_bytes: int
    first_s: float
    last_s: float
    bins_bytes: tuple[int, ...]
    retrans: int | None
    segs_out: int | None
    snd_mss: int | None

    @property
    def rate_Bps(self) -> float:  # noqa: N802 - the unit is part of the name
        """Bytes received per second, from the receiver's start to the last byte."""
        return self.received_bytes / self.last_s if self.last_s > 0 else 0.0

    @property
    def loss(self) -> float | None:
        """Share of segments retransmitted, when the kernel reported both counts."""
        if self.retrans is None or not self.segs_out:
            return None
        return self.retrans / self.segs_out


@dataclass(frozen=True)
class Stream:
    """Both directions at once, exponentially sized messages.

    The network test of Rechistov et al. 2012 (cluster simulation).
    """

    pair: str
    ranks: tuple[int, int]
    mean_bytes: int
    max_bytes: int
    duration_s: float
    interval_s: float
    directions: tuple[StreamDirection, ...]
    raw: dict[str, Any] = field(compare=False, repr=False)

    @property
    def key(self) -> tuple[str, str, int]:
        """(stream, pair, mean bytes): what identifies this record within a run."""
        return ("stream", self.pair, self.mean_bytes)

    @property
    def n_samples(self) -> int:
        """Number of time bins of the first direction."""
        return len(self.directions[0].bins_bytes)

    @cached_property
    def median_s(self) -> float:
        """Time of one mean-size message at the slower direction's rate (0 if none moved)."""
        slowest = min(d.rate_Bps for d in self.directions)
        return self.mean_bytes / slowest if slowest > 0 else 0.0


# A window shorter than this has too few of /proc/stat's 10 ms busy ticks to give the share of
# the cpus other processes took during a node point to a few percent.
SHARE_WINDOW_S = 1.0


@dataclass(frozen=True)
class Linpack:
    """Every solve of one dense Ax = b of order ``n`` on ``cores`` cores.

    The node test of Rechistov et al. 2012. ``times_s[i]`` is solve i's wall time (LU with
    partial pivoting plus the triangular solves), ``gflops[i]`` its rate by
    (2/3 n^3 + 2 n^2) / t; ``residual`` is the largest HPL scaled residual of the solves, and
    ``affinity`` the cpus the process was pinned to.
    """

    cores: int
    threads: int
    n: int
    times_s: tuple[float, ...]
    gflops: tuple[float, ...]
    residual: float
    affinity: tuple[int, ...]
    raw: dict[str, Any] = field(compare=False, repr=False)

    @property
    def key(self) -> tuple[str, str, int]:
        """(linpack, cores<cores>, n): what identifies this point within a run."""
        return ("linpack", f"cores{self.cores}", self.n)

    @property
    def n_samples(self) -> int:
        """Number of timed solves."""
        return len(self.times_s)

    @cached_property
    def median_s(self) -> float:
        """Median solve time, in seconds."""
        import numpy as np

        return float(np.median(self.times_s))

    @cached_property
    def median_gflops(self) -> float:
        """Median rate of the solves, in GFLOPS."""
        import numpy as np

        return float(np.median(self.gflops))


@dataclass(frozen=True)
class LogGP:
    """Netgauge's LogGP measurements of one pair at one size (Hoefler et al.).

    Per sample: ``prtt_1_0_s`` is one round trip of ``bytes``-byte messages, ``prtt_n_0_s``
    ``n`` messages sent back to back then one back, ``prtt_n_d_s`` the same with a busy delay
    of ``delay_s`` after each send but the last, ``recv_s`` the time of a receive whose
    message had arrived (the receiver waited ``wait_s`` first). ``send_s`` holds the time of
    each MPI_Send call of the delayed trains, ``n`` per sample. Send and receive times include
    one timer call; ``timer_s`` holds empty timed intervals, which cost that much.
    """

    pair: str
    ranks: tuple[int, int]
    bytes: int
    n: int
    delay_s: float
    wait_s: float
    prtt_1_0_s: tuple[float, ...]
    prtt_n_0_s: tuple[float, ...]
    prtt_n_d_s: tuple[float, ...]
    send_s: tuple[float, ...]
    recv_s: tuple[float, ...]
    timer_s: tuple[float, ...]
    stop: str
    raw: dict[str, Any] = field(compare=False, repr=False)

    @property
    def key(self) -> tuple[str, str, int]:
        """(loggp, pair, bytes): what identifies this point within a run."""
        return ("loggp", self.pair, self.bytes)

    @property
    def n_samples(self) -> int:
        """Number of samples (passes through the four measurements)."""
        return len(self.prtt_1_0_s)

    @cached_property
    def median_s(self) -> float:
        """Median round trip PRTT(1,0,s), in seconds."""
        import numpy as np

        return float(np.median(self.prtt_1_0_s))


@dataclass(frozen=True)
class End:
    """Last record of an engine run."""

    points: int
    elapsed_s: float
    raw: dict[str, Any] = field(compare=False, repr=False)


# Every record that is a measurement, stored as a point of its run (isinstance accepts the
# union itself); a new kind's record class joins it.
Measured = Point | Coll | Contention | Queue | Stream | Linpack | LogGP
Record = Header | Measured | End
