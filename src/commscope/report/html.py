"""The HTML report: one file, autoescaped Jinja2, figures inline, written atomically.

First a summary card (per run, the figures an admin quotes and each warning once) and a
table of contents. Per run: what ran where (machine, MPI, options, or the imported file),
the figures, the key figures per pair and operation, the Hockney fit of each protocol
regime, plain-language findings, and tables of more than ``FOLD_ROWS`` rows folded away.
Nothing is fetched: styles are inline, figures are SVG, and the page's
Content-Security-Policy forbids scripts.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from jinja2 import Environment, PackageLoader, select_autoescape
from markupsafe import Markup

from commscope import __version__, safe_write, strict
from commscope.analysis import coll as coll_analysis
from commscope.analysis import curve as curves
from commscope.analysis import findings, load, p2p, tcp_loss
from commscope.analysis import recv_buffers as rbuf
from commscope.data import mpi_config
from commscope.data.records import Coll, Point
from commscope.data.run_data import RunData
from commscope.data.store import RunInfo
from commscope.report import (
    figures,
    node_section,
    simulation_section,
    summary_card,
    tcp_section,
)
from commscope.units import size_text, time_text

_SCALAR_OPTIONS = 12  # header options shown in the machine table; the rest stay in the store
FOLD_ROWS = 15  # a table or list longer than this is folded into <details>


def _num(value: float | None, scale: float, digits: int) -> str:
    return "" if value is None else f"{value * scale:.{digits}f}"


def _shown(value: Any) -> Any:
    r"""Each value a template prints: text with its control characters written as ``\xNN``.

    Autoescaping stops markup, not an ESC or a NUL from a stored host name, which HTML has
    no place for; markup made here (figures, already escaped) passes as it is.
    """
    if isinstance(value, str) and not isinstance(value, Markup):
        return strict.visible(value, keep="\t\n")
    return value


def environment() -> Environment:
    """Jinja2 environment with autoescaping everywhere and the report's number filters."""
    env = Environment(
        loader=PackageLoader("commscope", "report/templates"),
        autoescape=select_autoescape(default=True, default_for_string=True),
        finalize=_shown,
    )
    env.filters["us"] = lambda s: _num(s, 1e6, 2)
    env.filters["mbs"] = lambda b: _num(b, 1e-6, 1)
    env.filters["pct"] = lambda f: "" if f is None else f"{f * 100:+.0f} %"
    env.filters["size"] = lambda n: "" if n is None else size_text(n)
    env.filters["bytes"] = lambda n: "" if n is None else size_text(n, exact=True)
    env.filters["duration"] = lambda s: "" if s is None else time_text(s)
    env.filters["date"] = lambda t: time.strftime("%Y-%m-%d %H:%M:%S %Z", time.localtime(t))
    env.filters["coll_warning"] = coll_analysis.warning_text
    env.globals["FOLD_ROWS"] = FOLD_ROWS
    return env


def write_atomic(text: str, path: str | os.PathLike[str], flag: str | None = None) -> Path:
    """Write ``text`` to ``path`` whole or not at all (see :mod:`commscope.safe_write`).

    Raises:
        UsageError: ``path`` is a directory, a device or another non-regular file, its folder
            is missing, or the write failed; ``flag`` (e.g. ``"-o"``) names the option.
    """
    return safe_write.write_text(path, text, flag)


def run_name(info: RunInfo) -> str:
    """A run's name in headings: "run 3" or "run 3 LABEL"."""
    return f"run {info.id}" + (f" {info.label}" if info.label else "")


def _options(header: dict[str, Any]) -> list[tuple[str, str]]:
    """The engine options worth a glance, lists shortened to their length and range."""
    out = []
    for key, value in (header.get("options") or {}).items():
        if isinstance(value, list):
            sizes = [v for v in value if isinstance(v, int)]
            text = f"{len(value)} values"
            if key == "sizes" and sizes:
                text += f", {size_text(min(sizes))} to {size_text(max(sizes))}"
            out.append((key, text))
        elif isinstance(value, (str, int, float, bool)) and value != "":
            out.append((key, str(value)))
    return out[:_SCALAR_OPTIONS]


def _plots(
    points: list[Point],
    figs: list[p2p.PairFigures],
    colls: list[tuple[Coll, coll_analysis.CollSummary]],
) -> list[tuple[str, str, Markup]]:
    found = [curves.curve_of(points, op, f.pair) for f in figs for op in p2p.OP_ORDER]
    cs = [c for c in found if c is not None]
    plots: list[tuple[str, str, str]] = []
    if cs:
        has_pp = any(c.op == "pingpong" for c in cs)
        plots.append(("Throughput", "bandwidth against message size", figures.throughput_plot(cs)))
        if has_pp:
            plots += [
                (
                    "Signature",
                    "ping-pong throughput against transfer time; the first point is the latency",
                    figures.signature_plot(cs),
                ),
                (
                    "Saturation",
                    "message size against time, log-log; from the saturation point"
                    " on, time grows linearly with size",
                    figures.saturation_plot(cs, figs),
                ),
                (
                    "Protocol regimes",
                    "ping-pong time with the Hockney fit t = alpha + m / beta of each regime",
                    figures.regimes_plot(cs, figs),
                ),
            ]
        plots.append(("Short messages", "up to 1 KiB, linear axes", figures.short_plot(cs)))
        if any(int(c.bytes.max()) > figures.SHORT_MAX for c in cs):
            plots.append(("Long messages", "above 1 KiB, linear axes", figures.long_plot(cs)))
    if colls:
        rows = [(f"{c.op} {c.group}", s) for c, s in colls]
        plots.append(("Collectives", "time against size per operation", figures.coll_plot(rows)))
    # Figures are SVG that matplotlib produced from numbers and escaped labels.
    return [(title, caption, Markup(svg)) for title, caption, svg in plots]


def run_context(run: RunData) -> dict[str, Any]:
    """Everything the template shows about one run."""
    info, points, colls = run.info, run.points, run.colls
    header = info.header or {}
    contrasts = rbuf.contrasts(points)
    rows = p2p.size_rows(points)
    key = p2p.key_figures(points)  # what `show` prints first, for the summary card
    interrupted = (p2p.interrupted_summary(points), p2p.merged(p2p.interrupted(points)))
    points = rbuf.drawn_points(points, contrasts)
    figs = p2p.pair_figures(points)
    summarized = [
        (c, coll_analysis.summarize(c))
        for c in sorted(colls, key=lambda c: (c.op, c.group, c.bytes))
    ]
    return {
        "run": run,
        "info": info,
        "name": run_name(info),
        "header": header,
        "library": (header.get("mpi") or {}).get("library_version", "").splitlines()[:1],
        "nodes": list(dict.fromkeys(r.get("node", "") for r in header.get("ranks", []))),
        "options": _options(header),
        "imported": (info.request or {}).get("imported"),
        "load_warnings": load.warnings(run.ends),
        "tcp_loss_warnings": tcp_loss.warnings(run.ends),
        "congestion_control": tcp_loss.congestion_text(run.ends),
        "socket_queue": tcp_loss.socket_queue_text(run.ends),
        "idle_restart": tcp_loss.idle_restart_text(run.ends),
        "idle_restart_nodes": tcp_loss.idle_restart_nodes(run.ends),
        "key_figures": key,
        "figures": figs,
        "key_rows": sum(len(f.curves) for f in figs),
        "regime_rows": sum(len(c.regimes) for f in figs for c in f.curves),
        "findings": findings.findings(
            figs, mpi_config.naming_limits(info.mpi, run.protocol_limits)
        ),
        "mpi_settings": mpi_config.settings_text(info.request or {}),
        "protocol_limits": run.protocol_limits.text() if run.protocol_limits else None,
        "recv_buffers": rbuf.describe(
            rbuf.run_policies(info.header, points), rbuf.recorded(info.header)
        ),
        "recv_contrasts": contrasts,
        "interrupted_summary": interrupted[0],
        "interrupted": interrupted[1],
        "rows": rows,
        "each_columns": any(
            r.bandwidth_each_Bps is not None or r.bidirectional_each_Bps is not None for r in rows
        ),
        "colls": summarized,
        "plots": _plots(points, figs, summarized),
    }


def render(runs: Sequence[dict[str, Any]], trend: dict[str, Any] | None = None) -> str:
    """Render the report of runs as HTML text.

    ``runs`` are run contexts: ``run_context`` plus each kind's entry and its template
    (``commscope.kinds.report_contexts`` builds them). ``trend``: a baseline's figures over
    the runs (``commscope.report.trend_section.build``), drawn after the summary card.
    """
    node_section.add_balance_lines(runs)
    return (
        environment()
        .get_template("report.html.j2")
        .render(
            runs=runs,
            cards=[summary_card.card(run) for run in runs],
            version=__version__,
            generated=time.strftime("%Y-%m-%d %H:%M:%S %Z"),
            tcp=tcp_section.build(runs),
            simulation=simulation_section.build(runs),
            trend=trend,
        )
    )
