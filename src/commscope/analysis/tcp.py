"""TCP-level figures across the runs of a report: ends, streams, the socket-buffer sweep.

A ``commscope run tcp`` makes one run per socket buffer size asked for (kind "tcp"): rank 0 is
the client, rank 1 the server. Each run's header names both ends as their kernels saw them
(interface, MTU, link speed, granted SO_SNDBUF/SO_RCVBUF and the caps wmem_max/rmem_max);
its records are ping-pong points and, in stream mode, one stream record with both directions.

- stream rows: MB/s received each way against the link's nominal rate when it is known (the
  slower end's ``/sys/class/net/IF/speed``, else the virtual cluster's tbf rate), and the
  segments the sender retransmitted;
- sweep rows: per requested buffer size, what each end was granted (the kernel doubles the
  request and caps it at twice net.core.wmem_max/rmem_max), the ping-pong latency and peak,
  and the stream rates;
- findings: plain sentences about the above.

Pure functions: run facts in, frozen dataclasses and sentences out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from commscope.analysis import p2p
from commscope.data.records import Point, Stream
from commscope.units import percent_text, rate_text, size_text

ROLES = ("client", "server")  # rank 0 and rank 1
LOW_SHARE = 0.5  # a stream below this share of the link gets a finding of its own


@dataclass(frozen=True)
class EndFacts:
    """One end of a TCP run's connection."""

    role: str
    node: str
    address: str
    interface: str | None
    mtu: int | None
    speed_mbps: int | None
    sndbuf: int  # granted
    rcvbuf: int
    wmem_max: int | None
    rmem_max: int | None

    @classmethod
    def from_header(cls, end: Mapping[str, Any]) -> EndFacts:
        """From one member of the header's ``tcp.ends``."""

        def opt(key: str) -> int | None:
            value = end.get(key)
            return int(value) if isinstance(value, (int, float)) else None

        return cls(
            str(end.get("role", "")),
            str(end.get("node", "")),
            str(end.get("address", "")),
            None if end.get("interface") is None else str(end["interface"]),
            opt("mtu"),
            opt("speed_mbps"),
            int(end.get("sndbuf", -1)),
            int(end.get("rcvbuf", -1)),
            opt("wmem_max"),
            opt("rmem_max"),
        )

    def caps_hit(self, requested: int) -> tuple[str, ...]:
        """The sysctl caps that cut a request of ``requested`` bytes short at this end."""
        if requested <= 0:
            return ()
        out = []
        for granted, cap, name in (
            (self.sndbuf, self.wmem_max, "net.core.wmem_max"),
            (self.rcvbuf, self.rmem_max, "net.core.rmem_max"),
        ):
            if cap is not None and granted < 2 * requested and granted >= 2 * cap:
                out.append(f"{name} = {cap}")
        return tuple(out)


@dataclass(frozen=True)
class TcpRun:
    """What the TCP figures need from one stored run."""

    name: str  # "run 5 tcp sockbuf=64 KiB"
    sockbuf: int  # requested each way, 0: the system default
    ends: tuple[EndFacts, ...]
    points: tuple[Point, ...]
    streams: tuple[Stream, ...]
    link_Bps: float | None = None  # nominal link rate from elsewhere (the vcluster's tbf)
    link_source: str | None = None

    def end(self, role: str) -> EndFacts | None:
        """The end playing ``role``."""
        return next((e for e in self.ends if e.role == role), None)

    @property
    def link(self) -> tuple[float, str] | None:
        """(nominal rate in bytes/s, where it came from), None when it is unknown.

        The slower end's link speed, else the rate given with the run; loopback and virtual
        links report no speed.
        """
        speeds = [(e.speed_mbps, e) for e in self.ends if e.speed_mbps]
        if speeds:
            mbps, end = min(speeds, key=lambda s: s[0])
            return mbps * 1e6 / 8, f"{end.interface or 'link'} at {mbps} Mb/s"
        if self.link_Bps:
            return self.link_Bps, self.link_source or "given rate"
        return None


@dataclass(frozen=True)
class StreamRow:
    """One direction of one run's stream."""

    run: str
    sockbuf: int
    direction: str  # "client -> server"
    rate_Bps: float
    link_Bps: float | None
    link_share: float | None  # rate / link
    retrans: int | None
    segs_out: int | None
    loss: float | None
    messages: int
    seconds: float
    mean_bytes: int
    max_bytes: int

    def to_json(self) -> dict[str, Any]:
        """Plain dict with full key names."""
        return asdict(self)


@dataclass(frozen=True)
class SweepRow:
    """One requested socket buffer size: granted sizes, ping-pong and stream figures."""

    run: str
    sockbuf: int
    granted: tuple[tuple[str, int, int], ...]  # (role, sndbuf, rcvbuf)
    caps_hit: tuple[str, ...]
    latency_s: float | None
    peak_Bps: float | None
    peak_bytes: int | None
    saturation_bytes: int | None
    stream_Bps: tuple[float, ...]  # client -> server, server -> client

    def to_json(self) -> dict[str, Any]:
        """Plain dict with full key names."""
        return asdict(self)


def _direction(src: int, dst: int) -> str:
    name = dict(enumerate(ROLES))
    return f"{name.get(src, f'rank {src}')} -> {name.get(dst, f'rank {dst}')}"


def stream_rows(run: TcpRun) -> list[StreamRow]:
    """Every direction of every stream of ``run``."""
    link = run.link
    out = []
    for s in run.streams:
        for d in s.directions:
            share = d.rate_Bps / link[0] if link else None
            out.append(
                StreamRow(
                    run.name,
                    run.sockbuf,
                    _direction(d.src, d.dst),
                    d.rate_Bps,
                    link[0] if link else None,
                    share,
                    d.retrans,
                    d.segs_out,
                    d.loss,
                    d.messages,
                    d.last_s,
                    s.mean_bytes,
                    s.max_bytes,
                )
            )
    return out


def _pingpong(points: Sequence[Point]) -> tuple[p2p.PairFigures | None, p2p.CurveFigures | None]:
    figs = p2p.pair_figures(list(points))
    pair = figs[0] if figs else None
    return pair, pair.curve("pingpong") if pair else None


def sweep_rows(runs: Sequence[TcpRun]) -> list[SweepRow]:
    """One row per run, the system default first, then by requested size."""
    out = []
    for run in sorted(runs, key=lambda r: (r.sockbuf, r.name)):
        pair, curve = _pingpong(run.points)
        caps = tuple(sorted({c for e in run.ends for c in e.caps_hit(run.sockbuf)}))
        out.append(
            SweepRow(
                run.name,
                run.sockbuf,
                tuple((e.role, e.sndbuf, e.rcvbuf) for e in run.ends),
                caps,
                pair.latency_s if pair else None,
                curve.peak_bandwidth_Bps if curve else None,
                curve.peak_bytes if curve else None,
                curve.saturation_bytes if curve else None,
                tuple(d.rate_Bps for s in run.streams[:1] for d in s.directions),
            )
        )
    return out


def _buffer(nbytes: int) -> str:
    return "the default buffers" if nbytes == 0 else f"{size_text(nbytes)} buffers"


def findings(runs: Sequence[TcpRun]) -> list[str]:
    """Plain sentences: streams against the link, retransmissions, caps, the best buffer."""
    out = []
    for run in runs:
        rows = stream_rows(run)
        link = run.link
        if rows and link:
            shares = ", ".join(
                f"{r.direction} {percent_text(r.link_share)}"
                for r in rows
                if r.link_share is not None
            )
            low = [r for r in rows if r.link_share is not None and r.link_share < LOW_SHARE]
            out.append(
                f"{run.name}: the stream each way reaches {shares} of the"
                f" {rate_text(link[0])} link ({link[1]})"
                + (
                    "; below half of the link: look for a slower hop, small socket"
                    " buffers or a busy host."
                    if low
                    else "."
                )
            )
        elif rows:
            rates = ", ".join(f"{r.direction} {rate_text(r.rate_Bps)}" for r in rows)
            out.append(
                f"{run.name}: the stream reaches {rates}; the link's nominal rate is"
                " unknown (loopback or a virtual link), so no share of it is given."
            )
        lost = [
            f"{r.direction} {r.retrans}"
            + (f" of {r.segs_out}, {r.loss * 100:.2g} %" if r.loss is not None else "")
            for r in rows
            if r.retrans
        ]
        if lost:
            out.append(
                f"{run.name}: the stream retransmitted segments ({', '.join(lost)}):"
                " packets were lost or reordered on the way."
            )
        caps = sorted({c for e in run.ends for c in e.caps_hit(run.sockbuf)})
        if caps:
            out.append(
                f"{run.name}: the request for {size_text(run.sockbuf)} socket buffers was"
                f" capped by {', '.join(caps)} (the kernel grants twice the request, up"
                " to twice the cap)."
            )
    sweep = [r for r in sweep_rows(runs) if r.peak_Bps]
    if len(sweep) > 1:
        best = max(sweep, key=lambda r: r.peak_Bps or 0.0)
        worst = min(sweep, key=lambda r: r.peak_Bps or 0.0)
        if best.peak_Bps and worst.peak_Bps and best is not worst:
            out.append(
                f"Socket-buffer sweep: {_buffer(best.sockbuf)} ({best.run}) reach the"
                f" highest ping-pong peak, {rate_text(best.peak_Bps)},"
                f" {percent_text(best.peak_Bps / worst.peak_Bps - 1)} above the lowest,"
                f" {rate_text(worst.peak_Bps)} with {_buffer(worst.sockbuf)}."
            )
    return out
