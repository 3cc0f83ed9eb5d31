"""The engine's JSON-lines records as frozen dataclasses, validated against records-v1.json.

Each line the engine writes is one record: a header first, then one point per measured
(op, pair, bytes), then an end record. ``parse_record`` turns one line into a dataclass or
raises a one-line RecordError naming where the line came from.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache, cached_property
from importlib import resources
from types import MappingProxyType
from typing import Any

import numpy as np
from jsonschema import Draft202012Validator
from jsonschema.exceptions import best_match

from commscope.errors import RecordError

SCHEMA_VERSION = 1
SCHEMA_FILE = "records-v1.json"
RECORD_TYPES = ("header", "point", "coll", "contention", "stream", "linpack", "loggp", "end")
# Messages from jsonschema quote the offending value, which can be a long sample array.
_MAX_REASON = 200


@dataclass(frozen=True)
class RankInfo:
    """Where one rank ran."""

    rank: int
    node: str
    node_index: int
    socket: int
    cpu: int
    pid: int
    affinity: tuple[int, ...] = ()


@dataclass(frozen=True)
class PairInfo:
    """A pair of ranks measured together and how far apart they are."""

    label: str
    ranks: tuple[int, int]


@dataclass(frozen=True)
class MpiInfo:
    """The MPI library the engine ran with."""

    library_version: str
    standard: str


@dataclass(frozen=True)
class TimerInfo:
    """The timer the engine chose and what it costs."""

    name: str
    resolution_s: float
    overhead_s: float
    frequency_hz: float | None = None


@dataclass(frozen=True)
class Header:
    """First record of an engine run: what ran, where, and with which options."""

    schema_version: int
    engine_version: str
    mpi: MpiInfo | None  # None for transport "tcp"
    nranks: int
    ranks: tuple[RankInfo, ...]
    timer: TimerInfo
    pairs: tuple[PairInfo, ...]
    options: Mapping[str, Any] = field(hash=False)
    started_unix: float
    socket_source: str | None
    raw: dict[str, Any] = field(compare=False, repr=False)

    @property
    def nodes(self) -> tuple[str, ...]:
        """Distinct node names, in the order of the first rank on each."""
        ordered = sorted(self.ranks, key=lambda r: r.rank)
        return tuple(dict.fromkeys(r.node for r in ordered))

    @property
    def transport(self) -> str:
        """What carried the messages: "mpi" (the engine) or "tcp" (commscope-tcp)."""
        return str(self.raw.get("transport", "mpi"))

    @property
    def pair_labels(self) -> tuple[str, ...]:
        """Distinct pair labels (intra-socket, inter-socket, inter-node), in header order."""
        return tuple(dict.fromkeys(p.label for p in self.pairs))


@dataclass(frozen=True)
class Point:
    """Raw samples of one measured (op, pair, bytes).

    For op "pingpong" a sample is a one-way time (round trip / 2); for "bw" and "bibw" a
    sample is the time for one window of messages, carrying ``bytes_per_sample`` bytes.
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

    @property
    def key(self) -> tuple[str, str, int]:
        """(op, pair, bytes): what identifies this point within a run."""
        return (self.op, self.pair, self.bytes)

    @property
    def n_samples(self) -> int:
        """Number of samples."""
        return len(self.samples_s)

    @cached_property
    def median_s(self) -> float:
        """Median of the samples, in seconds."""
        return float(np.median(np.asarray(self.samples_s, dtype=float)))

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

    @cached_property
    def median_s(self) -> float:
        """Median of the valid launch times (NaN when none is valid)."""
        valid = self.valid_times_s
        return float(np.median(valid)) if valid else float("nan")


@dataclass(frozen=True)
class Contention:
    """Seed 001's t(m, cf): cf pairs exchanging ``bytes`` at once over one level's channel.

    ``samples_s[r][i]`` is process i's time in repetition r (pairs in order, a then b):
    the time of ``nruns`` Irecv + Isend + Waitall divided by 2 * nruns, as in the paper;
    with ``in_flight`` W > 1, W receives and W sends per iteration, divided by 2 * W * nruns.
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
        return float(np.median([max(rep) for rep in self.samples_s]))


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
    """Seed 000's network test: both directions at once, exponentially sized messages."""

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


@dataclass(frozen=True)
class Linpack:
    """Seed 000's node test: every solve of one dense Ax = b of order ``n`` on ``cores`` cores.

    ``times_s[i]`` is solve i's wall time (LU with partial pivoting plus the triangular
    solves), ``gflops[i]`` its rate by (2/3 n^3 + 2 n^2) / t; ``residual`` is the largest HPL
    scaled residual of the solves, and ``affinity`` the cpus the process was pinned to.
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
        return float(np.median(self.times_s))

    @cached_property
    def median_gflops(self) -> float:
        """Median rate of the solves, in GFLOPS."""
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
        return float(np.median(self.prtt_1_0_s))


@dataclass(frozen=True)
class End:
    """Last record of an engine run."""

    points: int
    elapsed_s: float
    raw: dict[str, Any] = field(compare=False, repr=False)


Record = Header | Point | Coll | Contention | Stream | Linpack | LogGP | End


@cache
def load_schema() -> dict[str, Any]:
    """Return the records JSON Schema shipped in the package (read once).

    Returns:
        The parsed schema. Callers must not modify it.
    """
    text = (resources.files("commscope") / "schema" / SCHEMA_FILE).read_text("utf-8")
    schema: dict[str, Any] = json.loads(text)
    return schema


@cache
def _validator(record_type: str) -> Draft202012Validator:
    # One validator per record type gives errors about that type, not about all three
    # branches of the schema's oneOf.
    schema = load_schema()
    sub = {"$schema": schema["$schema"], "$defs": schema["$defs"], "$ref": f"#/$defs/{record_type}"}
    return Draft202012Validator(sub)


def _fail(where: str, reason: str) -> RecordError:
    reason = " ".join(reason.split())
    if len(reason) > _MAX_REASON:
        reason = reason[: _MAX_REASON - 3] + "..."
    return RecordError(
        f"{where}: not a valid record: {reason}"
        f" (expected schema {SCHEMA_FILE}; if the engine wrote it, rebuild it with"
        " 'commscope engine build')"
    )


def _reject_constant(name: str) -> float:
    # Python's json accepts NaN and Infinity; the engine must never write them.
    raise ValueError(f"{name} is not allowed in a record")


def parse_record(line: str, where: str) -> Record:
    """Decode and validate one JSON line.

    Args:
        line: one line of engine output (a trailing newline is fine).
        where: where the line came from, e.g. "engine output line 7", used in errors.

    Returns:
        The Header, Point or End the line holds.

    Raises:
        RecordError: the line is not JSON or does not follow the schema.
    """
    try:
        data = json.loads(line, parse_constant=_reject_constant)
    except (ValueError, RecursionError) as err:  # RecursionError: absurdly deep nesting
        raise _fail(where, f"not JSON ({err})") from None
    return record_from_dict(data, where)


def record_from_dict(data: Any, where: str, validate: bool = True) -> Record:
    """Build a record from an already decoded JSON object.

    Args:
        data: the decoded object; kept as the record's ``raw``.
        where: where the object came from, used in errors.
        validate: check the object against the schema first. Only skip this for objects
            that were validated before (e.g. read back from the store).

    Returns:
        The Header, Point or End the object describes.

    Raises:
        RecordError: the object does not follow the schema.
    """
    kind = data.get("type") if isinstance(data, dict) else None
    if kind not in RECORD_TYPES:
        raise _fail(where, "expected a JSON object whose 'type' is "
                    f"{', '.join(RECORD_TYPES[:-1])} or {RECORD_TYPES[-1]}")
    if kind == "header" and data.get("schema_version") != SCHEMA_VERSION:
        raise _fail(
            where,
            f"schema_version {data.get('schema_version')!r}, this commscope reads {SCHEMA_VERSION}",
        )
    if validate:
        error = best_match(_validator(kind).iter_errors(data))
        if error is not None:
            path = "/".join(str(p) for p in error.absolute_path)
            location = f"{kind} {path}" if path else kind
            raise _fail(where, f"{location}: {error.message}")
    try:
        if kind == "header":
            return _header(data, where)
        if kind == "point":
            return _point(data, where)
        if kind == "coll":
            return _coll(data, where)
        if kind == "contention":
            return _contention(data, where)
        if kind == "stream":
            return _stream(data, where)
        if kind == "linpack":
            return _linpack(data, where)
        if kind == "loggp":
            return _loggp(data, where)
        return End(points=int(data["points"]), elapsed_s=float(data["elapsed_s"]), raw=data)
    except (KeyError, TypeError, ValueError) as err:  # only reachable without validation
        raise _fail(where, f"{kind} is malformed ({type(err).__name__}: {err})") from None


def _header(d: dict[str, Any], where: str) -> Header:
    ranks = tuple(
        RankInfo(
            rank=int(r["rank"]),
            node=r["node"],
            node_index=int(r["node_index"]),
            socket=int(r["socket"]),
            cpu=int(r["cpu"]),
            pid=int(r["pid"]),
            affinity=tuple(int(c) for c in r.get("affinity", ())),
        )
        for r in d["ranks"]
    )
    # The schema cannot say that the rank list covers exactly 0..nranks-1.
    if sorted(r.rank for r in ranks) != list(range(int(d["nranks"]))):
        raise _fail(where, f"header ranks do not list ranks 0..{int(d['nranks']) - 1} once each")
    timer = d["timer"]
    freq = timer.get("frequency_hz")
    return Header(
        schema_version=int(d["schema_version"]),
        engine_version=d["engine_version"],
        mpi=MpiInfo(d["mpi"]["library_version"], d["mpi"]["standard"]) if "mpi" in d else None,
        nranks=int(d["nranks"]),
        ranks=ranks,
        timer=TimerInfo(
            name=timer["name"],
            resolution_s=float(timer["resolution_s"]),
            overhead_s=float(timer["overhead_s"]),
            frequency_hz=None if freq is None else float(freq),
        ),
        pairs=tuple(
            PairInfo(p["label"], (int(p["ranks"][0]), int(p["ranks"][1]))) for p in d["pairs"]
        ),
        options=MappingProxyType(dict(d["options"])),
        started_unix=float(d["started_unix"]),
        socket_source=d.get("socket_source"),
        raw=d,
    )


def _point(d: dict[str, Any], where: str) -> Point:
    a, b = (int(r) for r in d["ranks"])
    if a == b:
        raise _fail(where, f"point ranks are both {a}; a pair needs two ranks")
    window = d.get("window")
    return Point(
        op=d["op"],
        pair=d["pair"],
        ranks=(a, b),
        bytes=int(d["bytes"]),
        bytes_per_sample=int(d["bytes_per_sample"]),
        window=None if window is None else int(window),
        iters_per_sample=int(d["iters_per_sample"]),
        warmup=int(d["warmup"]),
        samples_s=tuple(float(s) for s in d["samples_s"]),
        stop=d["stop"],
        raw=d,
    )


def _coll(d: dict[str, Any], where: str) -> Coll:
    n = len(d["times_s"])
    if len(d["flags"]) != n or len(d.get("stage", [0] * n)) != n:
        raise _fail(where, "coll times_s, flags and stage must have one entry per launch")
    root = d.get("root")
    return Coll(
        op=d["op"],
        group=d["group"],
        nranks=int(d["nranks"]),
        bytes=int(d["bytes"]),
        root=None if root is None else int(root),
        method=d["method"],
        buffers=d.get("buffers"),
        times_s=tuple(float(t) for t in d["times_s"]),
        flags=tuple(int(f) for f in d["flags"]),
        stage=tuple(int(x) for x in d.get("stage", [0] * n)),
        windows_s=tuple(float(w) for w in d.get("windows_s", ())),
        stop=d["stop"],
        raw=d,
    )


def _contention(d: dict[str, Any], where: str) -> Contention:
    pairs = tuple((int(a), int(b)) for a, b in d["pairs"])
    if len(pairs) != int(d["cf"]):
        raise _fail(where, f"contention cf {d['cf']} but {len(pairs)} pairs")
    samples = tuple(tuple(float(t) for t in rep) for rep in d["samples_s"])
    if any(len(rep) != 2 * len(pairs) for rep in samples):
        raise _fail(where, "contention samples_s must hold one time per process of the pairs")
    return Contention(d["level"], int(d["cf"]), int(d["bytes"]), pairs, int(d["nruns"]),
                      d["start"], samples, raw=d,
                      in_flight=int(d.get("in_flight", 1)))


def _stream(d: dict[str, Any], where: str) -> Stream:
    def known(value: Any) -> int | None:
        return None if value is None else int(value)

    directions = tuple(
        StreamDirection(int(x["from"]), int(x["to"]), int(x["sent_bytes"]), int(x["messages"]),
                        float(x["send_s"]), int(x["received_bytes"]), float(x["first_s"]),
                        float(x["last_s"]), tuple(int(b) for b in x["bins_bytes"]),
                        known(x.get("retrans")), known(x.get("segs_out")),
                        known(x.get("snd_mss")))
        for x in d["directions"]
    )
    if not directions:  # only reachable without validation
        raise _fail(where, "stream has no directions")
    a, b = (int(r) for r in d["ranks"])
    return Stream(d["pair"], (a, b), int(d["mean_bytes"]), int(d["max_bytes"]),
                  float(d["duration_s"]), float(d["interval_s"]), directions, raw=d)


def _linpack(d: dict[str, Any], where: str) -> Linpack:
    if len(d["gflops"]) != len(d["times_s"]):
        raise _fail(where, "linpack times_s and gflops must have one entry per solve")
    return Linpack(int(d["cores"]), int(d["threads"]), int(d["n"]),
                   tuple(float(t) for t in d["times_s"]), tuple(float(g) for g in d["gflops"]),
                   float(d["residual"]), tuple(int(c) for c in d["affinity"]), raw=d)


def _loggp(d: dict[str, Any], where: str) -> LogGP:
    a, b = (int(r) for r in d["ranks"])
    if a == b:
        raise _fail(where, f"loggp ranks are both {a}; a pair needs two ranks")
    times = {k: tuple(float(t) for t in d[k])
             for k in ("prtt_1_0_s", "prtt_n_0_s", "prtt_n_d_s", "send_s", "recv_s", "timer_s")}
    samples, n = len(times["prtt_1_0_s"]), int(d["n"])
    if any(len(times[k]) != samples for k in ("prtt_n_0_s", "prtt_n_d_s", "recv_s")):
        raise _fail(where, "loggp prtt_1_0_s, prtt_n_0_s, prtt_n_d_s and recv_s must have one"
                    " entry per sample")
    if len(times["send_s"]) != n * samples:
        raise _fail(where, f"loggp send_s must hold n = {n} send times per sample")
    return LogGP(d["pair"], (a, b), int(d["bytes"]), n, float(d["delay_s"]),
                 float(d["wait_s"]), times["prtt_1_0_s"], times["prtt_n_0_s"],
                 times["prtt_n_d_s"], times["send_s"], times["recv_s"], times["timer_s"],
                 d["stop"], raw=d)
