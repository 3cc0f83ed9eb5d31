"""Engine JSON lines into records: decoded, validated against records-v1.json, built.

``parse_record`` turns one line into a record dataclass of ``records`` or raises a one-line
RecordError naming where the line came from.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from functools import cache
from importlib import resources
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from commscope.data.records import (
    RECORD_TYPES,
    SCHEMA_FILE,
    SCHEMA_VERSION,
    Coll,
    Contention,
    End,
    Header,
    Linpack,
    LogGP,
    MpiInfo,
    PairInfo,
    Point,
    Queue,
    RankInfo,
    Record,
    Stream,
    StreamDirection,
    TimerInfo,
)
from commscope.errors import RecordError

if TYPE_CHECKING:
    from jsonschema import Draft202012Validator

# Messages from jsonschema quote the offending value, which can be a long sample array.
_MAX_REASON = 200


@cache
def load_schema() -> dict[str, Any]:
    """Return the records JSON Schema shipped in the package (read once).

    Returns:
        The parsed schema. Callers must not modify it.
    """
    text = (resources.files("commscope.data") / "schema" / SCHEMA_FILE).read_text("utf-8")
    schema: dict[str, Any] = json.loads(text)
    return schema


@cache
def _validator(record_type: str) -> Draft202012Validator:
    # One validator per record type gives errors about that type, not about all three
    # branches of the schema's oneOf. jsonschema is imported here, on the first validation,
    # so that commands which parse no record start without it.
    from jsonschema import Draft202012Validator

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
    record_type = data.get("type") if isinstance(data, dict) else None
    if record_type not in RECORD_TYPES:
        raise _fail(
            where,
            "expected a JSON object whose 'type' is "
            f"{', '.join(RECORD_TYPES[:-1])} or {RECORD_TYPES[-1]}",
        )
    if record_type == "header" and data.get("schema_version") != SCHEMA_VERSION:
        raise _fail(
            where,
            f"schema_version {data.get('schema_version')!r}, this commscope reads {SCHEMA_VERSION}",
        )
    if validate:
        from jsonschema.exceptions import best_match

        error = best_match(_validator(record_type).iter_errors(data))
        if error is not None:
            path = "/".join(str(p) for p in error.absolute_path)
            location = f"{record_type} {path}" if path else record_type
            raise _fail(where, f"{location}: {error.message}")
    try:
        if record_type == "end":
            return End(points=int(data["points"]), elapsed_s=float(data["elapsed_s"]), raw=data)
        build: Callable[[dict[str, Any], str], Record] = _BUILDERS[record_type]
        return build(data, where)
    except (KeyError, TypeError, ValueError) as err:  # only reachable without validation
        raise _fail(where, f"{record_type} is malformed ({type(err).__name__}: {err})") from None


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
    n = len(d["samples_s"])
    switches = tuple((int(i), int(a), int(b)) for i, a, b in d.get("switches", ()))
    beyond = [i for i, _, _ in switches if i >= n]
    if beyond:
        raise _fail(where, f"point switches name sample {beyond[0]} of {n}")
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
        switches=switches,
    )


def _coll(d: dict[str, Any], where: str) -> Coll:
    n = len(d["times_s"])
    if len(d["flags"]) != n or len(d.get("stage", [0] * n)) != n:
        raise _fail(where, "coll times_s, flags and stage must have one entry per launch")
    delays = d.get("start_delays_s", [])
    if delays and len(delays) != n:
        raise _fail(where, "coll start_delays_s must have one entry per launch")
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
        start_delays_s=tuple(float(x) for x in delays),
    )


def _contention(d: dict[str, Any], where: str) -> Contention:
    pairs = tuple((int(a), int(b)) for a, b in d["pairs"])
    if len(pairs) != int(d["cf"]):
        raise _fail(where, f"contention cf {d['cf']} but {len(pairs)} pairs")
    samples = tuple(tuple(float(t) for t in rep) for rep in d["samples_s"])
    if any(len(rep) != 2 * len(pairs) for rep in samples):
        raise _fail(where, "contention samples_s must hold one time per process of the pairs")
    after = tuple(tuple(float(t) for t in rep) for rep in d.get("after_idle_s", ()))
    if after and (len(after) != len(samples) or any(len(rep) != 2 * len(pairs) for rep in after)):
        raise _fail(where, "contention after_idle_s must have the shape of samples_s")
    return Contention(
        d["level"],
        int(d["cf"]),
        int(d["bytes"]),
        pairs,
        int(d["nruns"]),
        d["start"],
        samples,
        raw=d,
        in_flight=int(d.get("in_flight", 1)),
        idle_s=float(d.get("idle_s", 0.0)),
        after_idle_s=after,
    )


def _queue(d: dict[str, Any], where: str) -> Queue:
    reps = len(d["stream_s"])
    if len(d["idle_s"]) != reps or len(d["loaded_s"]) != reps:
        raise _fail(where, "queue stream_s, idle_s and loaded_s must have one entry per repetition")
    return Queue(
        int(d["bytes"]),
        (int(d["stream"][0]), int(d["stream"][1])),
        (int(d["ping"][0]), int(d["ping"][1])),
        int(d["ping_bytes"]),
        int(d["messages"]),
        tuple(float(t) for t in d["stream_s"]),
        tuple(tuple(float(t) for t in rep) for rep in d["idle_s"]),
        tuple(tuple(float(t) for t in rep) for rep in d["loaded_s"]),
        raw=d,
    )


def _stream(d: dict[str, Any], where: str) -> Stream:
    def known(value: Any) -> int | None:
        return None if value is None else int(value)

    directions = tuple(
        StreamDirection(
            int(x["from"]),
            int(x["to"]),
            int(x["sent_bytes"]),
            int(x["messages"]),
            float(x["send_s"]),
            int(x["received_bytes"]),
            float(x["first_s"]),
            float(x["last_s"]),
            tuple(int(b) for b in x["bins_bytes"]),
            known(x.get("retrans")),
            known(x.get("segs_out")),
            known(x.get("snd_mss")),
        )
        for x in d["directions"]
    )
    if not directions:  # only reachable without validation
        raise _fail(where, "stream has no directions")
    a, b = (int(r) for r in d["ranks"])
    return Stream(
        d["pair"],
        (a, b),
        int(d["mean_bytes"]),
        int(d["max_bytes"]),
        float(d["duration_s"]),
        float(d["interval_s"]),
        directions,
        raw=d,
    )


def _linpack(d: dict[str, Any], where: str) -> Linpack:
    if len(d["gflops"]) != len(d["times_s"]):
        raise _fail(where, "linpack times_s and gflops must have one entry per solve")
    return Linpack(
        int(d["cores"]),
        int(d["threads"]),
        int(d["n"]),
        tuple(float(t) for t in d["times_s"]),
        tuple(float(g) for g in d["gflops"]),
        float(d["residual"]),
        tuple(int(c) for c in d["affinity"]),
        raw=d,
    )


def _loggp(d: dict[str, Any], where: str) -> LogGP:
    a, b = (int(r) for r in d["ranks"])
    if a == b:
        raise _fail(where, f"loggp ranks are both {a}; a pair needs two ranks")
    times = {
        k: tuple(float(t) for t in d[k])
        for k in ("prtt_1_0_s", "prtt_n_0_s", "prtt_n_d_s", "send_s", "recv_s", "timer_s")
    }
    samples, n = len(times["prtt_1_0_s"]), int(d["n"])
    if any(len(times[k]) != samples for k in ("prtt_n_0_s", "prtt_n_d_s", "recv_s")):
        raise _fail(
            where,
            "loggp prtt_1_0_s, prtt_n_0_s, prtt_n_d_s and recv_s must have one entry per sample",
        )
    if len(times["send_s"]) != n * samples:
        raise _fail(where, f"loggp send_s must hold n = {n} send times per sample")
    return LogGP(
        d["pair"],
        (a, b),
        int(d["bytes"]),
        n,
        float(d["delay_s"]),
        float(d["wait_s"]),
        times["prtt_1_0_s"],
        times["prtt_n_0_s"],
        times["prtt_n_d_s"],
        times["send_s"],
        times["recv_s"],
        times["timer_s"],
        d["stop"],
        raw=d,
    )


_BUILDERS: dict[str, Callable[[dict[str, Any], str], Record]] = {
    "header": _header,
    "point": _point,
    "coll": _coll,
    "contention": _contention,
    "queue": _queue,
    "stream": _stream,
    "linpack": _linpack,
    "loggp": _loggp,
}
