"""The HTML report: one file, autoescaped Jinja2, figures inline, written atomically."""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path
from typing import Any

from jinja2 import Environment, PackageLoader, select_autoescape
from markupsafe import Markup

from commscope import __version__
from commscope.analysis import p2p
from commscope.report import figures
from commscope.store import Store


def _env() -> Environment:
    env = Environment(
        loader=PackageLoader("commscope", "report/templates"),
        autoescape=select_autoescape(default=True, default_for_string=True),
    )
    env.filters["us"] = lambda s: "" if s is None else f"{s * 1e6:.2f}"
    env.filters["mbs"] = lambda b: "" if b is None else f"{b / 1e6:.1f}"
    return env


def render(store: Store, run_ids: list[int]) -> str:
    """Render the report for ``run_ids`` as HTML text."""
    runs: list[dict[str, Any]] = []
    series = {}
    for run_id in run_ids:
        info = store.get_run(run_id)
        points = store.points(run_id)
        name = f"run {run_id}" + (f" {info.label}" if info.label else "")
        series[name] = points
        header = info.header or {}
        runs.append({
            "info": info,
            "name": name,
            "header": header,
            "library": (header.get("mpi") or {}).get("library_version", "").splitlines()[:1],
            "key_figures": p2p.key_figures(points),
            "rows": p2p.size_rows(points),
        })
    plots = []
    if any(series.values()):
        # Figures are SVG produced by matplotlib from numbers; its text is XML-escaped by it.
        plots = [
            ("Latency (ping-pong, one way)", Markup(figures.latency_plot(series))),
            ("Bandwidth", Markup(figures.bandwidth_plot(series))),
        ]
    return _env().get_template("report.html.j2").render(
        runs=runs, plots=plots, version=__version__,
        generated=time.strftime("%Y-%m-%d %H:%M:%S %Z"),
    )


def write_report(store: Store, run_ids: list[int], path: str | os.PathLike[str]) -> Path:
    """Write the report atomically: a reader never sees half a file."""
    text = render(store, run_ids)
    target = Path(path).resolve()
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".commscope-report-", dir=target.parent)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(text)
    os.chmod(tmp, 0o644)
    os.replace(tmp, target)
    return target
