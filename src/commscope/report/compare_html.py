"""The HTML page of `commscope compare`: overlay figures and per-size tables of several runs."""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from markupsafe import Markup

from commscope import __version__
from commscope.analysis.compare import ALPHA, CompareRow, compare_runs, grouped, shows_rate
from commscope.data.point_ops import P2P
from commscope.data.records import Coll, Point
from commscope.data.store import Store
from commscope.report.compare_figures import Line, overlay_plot
from commscope.report.html import environment, write_atomic
from commscope.safe_write import check_target

OP_TITLES = {
    "pingpong": "ping-pong one-way time",
    "bw": "unidirectional bandwidth",
    "bibw": "bidirectional bandwidth",
    "bw_each": "unidirectional bandwidth, a receive buffer per message",
    "bibw_each": "bidirectional bandwidth, a receive buffer per message",
}


def _lines(rows: list[CompareRow], labels: Sequence[str], rate: bool) -> list[Line]:
    out = []
    for i, label in enumerate(labels):
        x, y, sig = [], [], []
        for r in rows:
            v = r.values[i]
            if v is None:
                continue
            x.append(float(r.bytes))
            y.append((v.bandwidth_Bps or np.nan) / 1e6 if rate else v.median_s * 1e6)
            d = r.differences[i - 1] if i > 0 else None
            sig.append(bool(d and d.significant))
        out.append(Line(label, np.array(x), np.array(y, dtype=float), np.array(sig, dtype=bool)))
    return out


def render_compare(store: Store, run_ids: Sequence[int], labels: Sequence[str]) -> str:
    """The comparison page as HTML text."""
    infos = [store.get_run(r) for r in run_ids]
    data: list[tuple[int, list[Point | Coll]]] = [
        (r, [*store.points(r), *store.colls(r)]) for r in run_ids
    ]
    rows = compare_runs(data)
    sections: list[dict[str, Any]] = []
    for (family, op, pair), members in grouped(rows):  # a row's kind is its records' family
        rate = shows_rate(family, op)
        what = OP_TITLES.get(op, op) if family == P2P else f"{op} (collective)"
        ylabel = "bandwidth (MB/s)" if rate else "median time (us, log)"
        svg = overlay_plot(_lines(members, labels, rate), ylabel, log_y=not rate)
        sections.append(
            {
                "title": f"{what}, {pair}",
                "rate": rate,
                "rows": members,
                "svg": Markup(svg),  # matplotlib SVG; labels escaped by it
                "n_significant": sum(
                    1 for r in members for d in r.differences if d and d.significant
                ),
            }
        )
    return (
        environment()
        .get_template("compare.html.j2")
        .render(
            runs=list(zip(infos, labels, strict=True)),
            sections=sections,
            alpha=ALPHA,
            version=__version__,
            generated=time.strftime("%Y-%m-%d %H:%M:%S %Z"),
        )
    )


def write_compare(
    store: Store,
    run_ids: Sequence[int],
    labels: Sequence[str],
    path: str | os.PathLike[str],
    flag: str | None = None,
) -> Path:
    """Write the comparison page atomically and return its full path.

    The path is checked before the page is rendered; ``flag`` names the option that gave it.
    """
    check_target(path, flag)
    return write_atomic(render_compare(store, run_ids, labels), path, flag)
