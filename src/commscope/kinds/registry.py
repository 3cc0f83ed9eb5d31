"""The registry of kinds, ``KINDS``, and what `show`, `run` and the report ask it.

Loading it loads every kind's module (numpy, Rich): ``commscope.kinds`` hands its names out
on first use. CONTRIBUTING.md walks through adding a kind.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from commscope.data.run_data import RunData
from commscope.kinds import coll, contention, loggp, matrix, mbw, node, p2p, program, rma, tcp
from commscope.kinds.base import Kind, View
from commscope.kinds.benchmarks import DEFAULT_RUN, Benchmark
from commscope.kinds.figures import Figure, FigureSpec

KINDS: tuple[Kind[Any], ...] = (
    tcp.KIND,
    p2p.KIND,
    coll.KIND,
    contention.KIND,
    loggp.KIND,
    node.KIND,
    matrix.KIND,
    rma.KIND,
    mbw.KIND,
    program.KIND,
)


def benchmark(name: str) -> Benchmark:
    """The engine benchmark ``commscope run NAME`` measures (all flags off for other names)."""
    found = [b for kind in KINDS for b in kind.benchmarks if b.name == name]
    return found[0] if found else Benchmark(name)


def engine_benchmarks() -> list[str]:
    """Every ``commscope run NAME`` the engine measures over MPI, ``all`` first."""
    return [DEFAULT_RUN] + [b.name for kind in KINDS for b in kind.benchmarks]


def one_process(kind_name: str) -> str | None:
    """What a run's title calls kind ``kind_name`` when one process measures it (None: ranks)."""
    return next((k.one_process for k in KINDS if k.name == kind_name), None)


def transport(kind_name: str) -> str:
    """What carries the messages of a run of kind ``kind_name``: MPI unless its kind says."""
    return next((k.transport for k in KINDS if k.name == kind_name), "MPI")


def measures(run_name: str, name: str) -> bool:
    """Whether ``commscope run RUN_NAME`` measures benchmark ``name`` (``all`` runs several)."""
    return run_name == name or (run_name == DEFAULT_RUN and benchmark(name).in_default_run)


def summaries(run: RunData, view: View) -> list[tuple[Kind[Any], Any]]:
    """Each kind's summary of ``run``, None where the run has none of its records."""
    return [(kind, kind.summarize(run, view)) for kind in KINDS]


def run_figures(run: RunData) -> list[Figure]:
    """Every figure of ``run`` a check can judge, kind by kind (keys are unique)."""
    return [f for kind in KINDS for f in kind.figures(run)]


def figure_specs() -> dict[str, FigureSpec]:
    """Every kind's figure specs by name."""
    return {spec.name: spec for kind in KINDS for spec in kind.figure_specs}


def to_json(found: list[tuple[Kind[Any], Any]]) -> dict[str, Any]:
    """Every kind's `show --json` keys, with empty values for kinds the run lacks."""
    out: dict[str, Any] = {}
    for kind, summary in found:
        out.update(kind.to_json(summary))
    return out


def terminal(found: list[tuple[Kind[Any], Any]], full: bool = True) -> list[Any]:
    """Every kind's terminal renderables, in the registry's order; short unless ``full``."""
    out = []
    for kind, summary in found:
        if summary is not None:
            show = kind.terminal if full or kind.brief is None else kind.brief
            out += show(summary)
    return out


def report_contexts(runs: Sequence[RunData], view: View | None = None) -> list[dict[str, Any]]:
    """The report's context of each run: its page, then each kind's entry and template.

    The kinds' lines on the summary card, from their entries, go under ``card_figures`` and
    ``card_warnings`` (in the registry's order); what carries the run's messages under
    ``transport``.
    """
    from commscope.report import html  # matplotlib, Jinja2: only for a report

    contexts = []
    for run in runs:
        context = html.run_context(run)
        context["section_templates"] = []
        context["card_figures"] = []
        context["card_warnings"] = []
        context["transport"] = transport(run.info.kind)
        for kind, summary in summaries(run, view or View()):
            if kind.report is None:
                continue
            entry = None if summary is None else kind.report(summary)
            context[kind.name] = entry
            context["section_templates"].append(kind.template)
            if entry and kind.card_figures:
                context["card_figures"] += kind.card_figures(entry)
            if entry and kind.card_warnings:
                context["card_warnings"] += kind.card_warnings(entry)
        contexts.append(context)
    return contexts


def render_report(
    runs: Sequence[RunData], view: View | None = None, trend: dict[str, Any] | None = None
) -> str:
    """The HTML report of ``runs`` (and a trend entry) as text."""
    from commscope.report import html

    return html.render(report_contexts(runs, view), trend)


def write_report(
    runs: Sequence[RunData],
    path: str | os.PathLike[str],
    flag: str | None = None,
    trend: dict[str, Any] | None = None,
) -> Path:
    """Write the HTML report of ``runs`` (and a trend entry) to ``path``, atomically."""
    from commscope import safe_write
    from commscope.report import html

    safe_write.check_target(path, flag)  # before the analysis
    return safe_write.write_text(path, html.render(report_contexts(runs), trend), flag)
