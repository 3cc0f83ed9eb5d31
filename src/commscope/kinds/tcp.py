"""The TCP kind: runs of commscope-tcp, their ends, granted buffers, ping-pong and streams.

The report's TCP section compares runs with each other, so it is built across runs by
``commscope.report.tcp_section``; this kind has no per-run report entry.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rich.table import Table

from commscope.analysis import p2p
from commscope.data.records import Point, Stream
from commscope.data.run_data import RunData
from commscope.data.store import RunInfo
from commscope.kinds.base import Kind, View
from commscope.units import size_text, sockbuf_text


@dataclass(frozen=True)
class TcpRun:
    """One stored TCP run with what the views need."""

    info: RunInfo
    points: list[Point]
    streams: list[Stream]

    @property
    def tcp(self) -> dict[str, Any]:
        """The header's "tcp" member ({} before the client wrote its header)."""
        return dict((self.info.header or {}).get("tcp") or {})

    @property
    def ends(self) -> dict[str, dict[str, Any]]:
        """Client and server ends by role."""
        return {str(e.get("role")): e for e in self.tcp.get("ends", [])}

    @property
    def sockbuf(self) -> int:
        """Socket buffer size asked for (0: system default)."""
        return int(self.info.request.get("tcp", {}).get("sockbuf", 0))


def end_text(end: dict[str, Any]) -> str:
    """One end's facts, e.g. "csnode1 10.77.0.2 on eth0 (MTU 1500, 10000 Mb/s)"."""
    speed = end.get("speed_mbps")
    facts = [
        f"MTU {end['mtu']}" if end.get("mtu") is not None else "MTU unknown",
        f"{speed} Mb/s" if speed is not None else "speed unknown",
    ]
    iface = end.get("interface") or "no interface found"
    return f"{end.get('node')} {end.get('address')} on {iface} ({', '.join(facts)})"


def _capped(asked: int, granted: int, cap: int | None) -> bool:
    return asked > 0 and cap is not None and granted < 2 * asked and granted >= 2 * cap


def granted_text(run: TcpRun, role: str) -> str:
    """One end's granted send/receive buffers: "128 KiB/128 KiB"."""
    end = run.ends.get(role)
    return f"{size_text(end['sndbuf'])}/{size_text(end['rcvbuf'])}" if end else ""


def cap_notes(run: TcpRun) -> list[str]:
    """The kernel caps that cut this run's buffer request short, e.g. "net.core.wmem_max"."""
    caps = set()
    for end in run.ends.values():
        for key, cap in (("sndbuf", "wmem_max"), ("rcvbuf", "rmem_max")):
            if _capped(run.sockbuf, int(end[key]), end.get(cap)):
                caps.add(f"net.core.{cap} = {end[cap]}")
    return sorted(caps)


def _pingpong(points: list[Point]) -> tuple[p2p.PairFigures | None, p2p.CurveFigures | None]:
    figs = p2p.pair_figures(points)
    pair = figs[0] if figs else None
    return pair, pair.curve("pingpong") if pair else None


def summary_view(runs: list[TcpRun]) -> list[Any]:
    """One row per run: buffers asked and granted, latency, peak, saturation, stream rates."""
    table = Table(
        title="TCP: buffers granted (send/receive), ping-pong and stream (MB/s = 10^6 bytes/s)"
    )
    cols = (
        "run",
        "sockbuf",
        "client",
        "server",
        "latency (us)",
        "peak (MB/s)",
        "at",
        "saturation",
        "stream c->s",
        "stream s->c",
        "retransmitted",
    )
    for col in cols:
        table.add_column(col, justify="left" if col in ("sockbuf", "client", "server") else "right")
    notes = []
    for run in runs:
        pair, curve = _pingpong(run.points)
        lat = pair.latency_s if pair else None
        rates = ["", ""]
        retrans = ""
        if run.streams:
            dirs = run.streams[0].directions
            rates = [f"{d.rate_Bps / 1e6:.1f}" for d in dirs] + [""] * (2 - len(dirs))
            retrans = " / ".join("?" if d.retrans is None else str(d.retrans) for d in dirs)
        table.add_row(
            str(run.info.id),
            sockbuf_text(run.sockbuf),
            granted_text(run, "client"),
            granted_text(run, "server"),
            "" if lat is None else f"{lat * 1e6:.2f}",
            ""
            if curve is None or curve.peak_bandwidth_Bps is None
            else f"{curve.peak_bandwidth_Bps / 1e6:.1f}",
            "" if curve is None or curve.peak_bytes is None else size_text(curve.peak_bytes),
            ""
            if curve is None or curve.saturation_bytes is None
            else size_text(curve.saturation_bytes),
            rates[0],
            rates[1],
            retrans,
        )
        if cap_notes(run):
            notes.append(
                f"run {run.info.id}: {prog_text(run.sockbuf)} was capped by "
                f"{', '.join(cap_notes(run))} (the kernel grants twice the request"
                " up to twice the cap)"
            )
        if run.info.status != "complete":
            notes.append(f"run {run.info.id} is {run.info.status}: {run.info.message}")
    return [table, *notes]


def prog_text(sockbuf: int) -> str:
    """The option a run was made with, e.g. "--sockbuf 512 KiB"."""
    return f"--sockbuf {sockbuf_text(sockbuf)}"


def run_json(run: TcpRun) -> dict[str, Any]:
    """A run's TCP figures with full key names: bytes, seconds, bytes/s."""
    pair, curve = _pingpong(run.points)
    return {
        "run": run.info.id,
        "status": run.info.status,
        "label": run.info.label,
        "message": run.info.message,
        "sockbuf_requested": run.sockbuf,
        "pair": pair.pair if pair else (run.streams[0].pair if run.streams else None),
        "ends": list(run.ends.values()),
        "points": len(run.points),
        "latency_s": pair.latency_s if pair else None,
        "latency_bytes": pair.latency_bytes if pair else None,
        "peak_bandwidth_Bps": curve.peak_bandwidth_Bps if curve else None,
        "peak_bytes": curve.peak_bytes if curve else None,
        "saturation_bytes": curve.saturation_bytes if curve else None,
        "stream": [
            {
                "from": d.src,
                "to": d.dst,
                "rate_Bps": d.rate_Bps,
                "received_bytes": d.received_bytes,
                "seconds": d.last_s,
                "messages": d.messages,
                "retrans": d.retrans,
                "segs_out": d.segs_out,
                "snd_mss": d.snd_mss,
                "mean_bytes": s.mean_bytes,
                "max_bytes": s.max_bytes,
            }
            for s in run.streams
            for d in s.directions
        ],
    }


def terminal(run: TcpRun) -> list[Any]:
    """Both ends, then the summary row of one run."""
    ends = [
        f"{role} {end_text(run.ends[role])}" for role in ("client", "server") if role in run.ends
    ]
    return [*ends, *summary_view([run])]


def summarize(run: RunData, view: View) -> TcpRun | None:
    """A TCP run's view; None for runs of other kinds."""
    return TcpRun(run.info, run.points, run.streams) if run.info.kind == "tcp" else None


KIND = Kind(
    name="tcp",
    records=(Point, Stream),
    summarize=summarize,
    to_json=lambda run: {"tcp": run_json(run) if run else None},
    terminal=terminal,
    transport="TCP",  # the report draws its curves beside MPI's
)
