"""TCP in the HTML report: ends, streams, the socket-buffer sweep, and TCP beside MPI.

``build(runs)`` returns the template context of the report's TCP section (None when the
report holds no TCP run); the partial template ``tcp_section.html.j2`` shows it. The runs of
one ``commscope run tcp`` (one per socket buffer size) form the sweep. When the report also
holds MPI runs with ping-pong points, or several TCP runs, their ping-pong curves share the
throughput, signature and saturation plots, each line named by its transport and run.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from markupsafe import Markup

from commscope.analysis import curve as curves
from commscope.analysis import tcp as tcp_analysis
from commscope.data.run_data import RunData
from commscope.report.plotting import figure, finish, size_axis, to_svg
from commscope.units import sockbuf_text

LOG_RATIO = 20.0  # peaks further apart than this: the throughput axis turns logarithmic


def _link(request: Mapping[str, Any]) -> tuple[float | None, str | None]:
    """The virtual cluster's tbf rate a run was measured under, in bytes/s."""
    where = request.get("where") or {}
    if where.get("kind") != "vcluster" or not where.get("rate"):
        return None, None
    from commscope.units import parse_tc_rate

    try:
        return parse_tc_rate(str(where["rate"])) / 8, f"virtual cluster tbf rate {where['rate']}"
    except ValueError:
        return None, None


def tcp_run(run: RunData, name: str) -> tcp_analysis.TcpRun:
    """The TCP figures' view of one stored run."""
    info = run.info
    request = info.request or {}
    header_tcp = (info.header or {}).get("tcp") or {}
    ends = tuple(tcp_analysis.EndFacts.from_header(e) for e in header_tcp.get("ends", []))
    link_Bps, link_source = _link(request)
    sockbuf = int((request.get("tcp") or {}).get("sockbuf", header_tcp.get("sockbuf_requested", 0)))
    return tcp_analysis.TcpRun(
        name,
        sockbuf,
        ends,
        tuple(run.points),
        tuple(run.streams),
        link_Bps,
        link_source,
    )


def _plain(text: str) -> str:
    """A label matplotlib draws as written: a '$' would start mathtext."""
    return text.replace("$", r"\$")


@dataclass(frozen=True)
class Line:
    """One ping-pong curve in the overlay: its label, transport and saturation point."""

    label: str
    transport: str  # "MPI" or "TCP"
    curve: curves.Curve
    saturation_bytes: int | None


def lines(runs: Sequence[Mapping[str, Any]]) -> list[Line]:
    """The ping-pong curve of every pair of every run, MPI runs first, named by run."""
    out: list[Line] = []
    for r in runs:
        transport = r["transport"]  # MPI or TCP: the run's kind says (kinds.report_contexts)
        points = r["run"].points if r.get("figures") else []
        for f in r.get("figures") or []:
            c = curves.curve_of(points, "pingpong", f.pair)
            figs = f.curve("pingpong")
            if c is not None and figs is not None:
                out.append(
                    Line(
                        _plain(f"{transport} {r['name']}: {f.pair}"),
                        transport,
                        c,
                        figs.saturation_bytes,
                    )
                )
    return sorted(out, key=lambda line: line.transport != "MPI")


def _draw(lines_: Sequence[Line], x_of: Any, y_of: Any, ax: Any) -> None:
    for k, line in enumerate(lines_):
        keep = line.curve.bytes > 0
        ax.plot(
            x_of(line.curve)[keep],
            y_of(line.curve)[keep],
            "-" if line.transport == "MPI" else "--",
            marker=".",
            markersize=3,
            color=f"C{k % 10}",
            label=line.label,
        )


def throughput_plot(lines_: Sequence[Line]) -> str:
    """Ping-pong bandwidth against size; MPI solid, TCP dashed."""
    with figure() as (fig, (ax,)):
        _draw(
            lines_,
            lambda c: c.bytes.astype(float),
            lambda c: np.nan_to_num(c.bandwidth_Bps) / 1e6,
            ax,
        )
        size_axis(ax, "x", 1, max(2.0, *(float(x.curve.bytes.max()) for x in lines_)))
        peaks = [float(np.nanmax(x.curve.bandwidth_Bps, initial=0.0)) for x in lines_]
        log = min(peaks) > 0 and max(peaks) / min(peaks) > LOG_RATIO
        if log:  # a slow link would lie flat on the axis beside a fast one
            ax.set_yscale("log")
        finish(
            ax,
            "message size",
            "ping-pong bandwidth (MB/s, 10^6 bytes/s" + (", log)" if log else ")"),
        )
        return to_svg(fig)


def signature_plot(lines_: Sequence[Line]) -> str:
    """Ping-pong throughput against one-way time, log time axis."""
    with figure() as (fig, (ax,)):
        _draw(lines_, lambda c: c.time_s * 1e6, lambda c: np.nan_to_num(c.bandwidth_Bps) / 1e6, ax)
        ax.set_xscale("log")
        finish(ax, "one-way time (us, log)", "throughput (MB/s)")
        return to_svg(fig)


def saturation_plot(lines_: Sequence[Line]) -> str:
    """Size against one-way time, log-log; dotted: each line's saturation point."""
    with figure() as (fig, (ax,)):
        _draw(lines_, lambda c: c.time_s * 1e6, lambda c: c.bytes.astype(float), ax)
        for k, line in enumerate(lines_):
            if line.saturation_bytes:
                ax.axhline(line.saturation_bytes, color=f"C{k % 10}", linestyle=":", linewidth=1)
        ax.set_xscale("log")
        size_axis(ax, "y", 1, max(2.0, *(float(x.curve.bytes.max()) for x in lines_)))
        finish(ax, "one-way time (us, log)", "message size (dotted: saturation point)")
        return to_svg(fig)


def plots(runs: Sequence[Mapping[str, Any]]) -> list[tuple[str, str, Markup]]:
    """Throughput, signature and saturation of every TCP run's ping-pong beside MPI's.

    Only when there is something to put side by side: an MPI run with ping-pong points, or
    more than one TCP curve (the buffer sweep).
    """
    found = lines(runs)
    tcp = [x for x in found if x.transport == "TCP"]
    if not tcp or len(tcp) == len(found) == 1:
        return []
    side = "TCP beside MPI" if len(tcp) < len(found) else "TCP per socket buffer size"
    out = [
        (
            "TCP throughput",
            f"{side}: ping-pong bandwidth against message size; MPI solid, TCP dashed",
            throughput_plot(found),
        ),
        (
            "TCP signature",
            f"{side}: ping-pong throughput against transfer time; the first point is the latency",
            signature_plot(found),
        ),
        (
            "TCP saturation",
            f"{side}: message size against time, log-log; from the saturation"
            " point on, time grows linearly with size",
            saturation_plot(found),
        ),
    ]
    # Figures are SVG that matplotlib produced from numbers and escaped labels.
    return [(title, caption, Markup(svg)) for title, caption, svg in out]


def build(runs: Sequence[Mapping[str, Any]]) -> dict[str, Any] | None:
    """The TCP section's context from the report's run contexts (``html.run_context``)."""
    tcp = [tcp_run(r["run"], r["name"]) for r in runs if r["transport"] == "TCP"]
    if not tcp:
        return None
    return {
        "runs": tcp,
        "ends": [(t.name, e) for t in tcp for e in t.ends],
        "streams": [row for t in tcp for row in tcp_analysis.stream_rows(t)],
        "sweep": tcp_analysis.sweep_rows(tcp),
        "findings": tcp_analysis.findings(tcp),
        "plots": plots(runs),
        "sockbuf_text": sockbuf_text,
    }
