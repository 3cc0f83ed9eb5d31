"""What a benchmark kind is: its records, its summary, and how the summary is shown.

A kind binds the records it owns to the analysis that summarises them, the JSON `show --json`
prints, the terminal tables (built here, printed by the CLI) and its report section (an entry
in each run's report context and the template that draws it).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from commscope.analysis.coll import DEFAULT_TRIM
from commscope.data.run_data import RunData
from commscope.kinds.benchmarks import Benchmark
from commscope.kinds.figures import Figure, FigureSpec

if TYPE_CHECKING:
    from jinja2 import Template

S = TypeVar("S")


@dataclass(frozen=True)
class View:
    """How the user asked to see runs: the collectives' confidence level and trim."""

    confidence: float | None = None  # None: the level the run was measured at
    trim: float = DEFAULT_TRIM


@dataclass(frozen=True)
class Kind(Generic[S]):
    """One benchmark kind.

    Attributes:
        name: the kind's name; its report entry's key in a run's context.
        records: the record classes (``commscope.data.records``) it owns.
        summarize: the analysis of a run's records; None when the run has none of them.
        to_json: ``show --json`` keys for a summary (None gives the keys' empty values, so
            the output has the same keys for every run).
        terminal: Rich renderables for ``show --full``, in order: every table.
        brief: the short form ``show`` and ``run`` print by default (key figures, verdicts,
            each warning once); None: the kind's ``terminal`` is short already.
        report: the run's report entry for a summary, or None when the kind has no section.
        template: the Jinja2 template drawing the report entry: its name in
            ``report/templates/``, or a template compiled from ``report.html.environment()``
            (a kind kept outside the package).
        figure_specs: the figures a check can judge (:mod:`commscope.kinds.figures`).
        figures: a run's figures with their raw samples ([] when it has none of them).
        benchmarks: what ``commscope run NAME`` measures for it through the engine.
        one_process: what a run's title calls the kind when one process measures it, with no
            MPI and no ranks (node compute); None for runs of ranks.
        card_figures: the report's summary card lines (what, value) from the kind's report
            entry (``report/summary_card``); None: the card shows none of the kind's own.
        card_warnings: the summary card's warnings from the kind's report entry; None: none.
        transport: what carries the messages of the kind's runs, as the report names it.
    """

    name: str
    records: tuple[type, ...]
    summarize: Callable[[RunData, View], S | None]
    to_json: Callable[[S | None], dict[str, Any]]
    terminal: Callable[[S], list[Any]]
    report: Callable[[S], Any] | None = None
    template: str | Template | None = None
    figure_specs: tuple[FigureSpec, ...] = ()
    figures: Callable[[RunData], list[Figure]] = lambda run: []
    brief: Callable[[S], list[Any]] | None = None
    benchmarks: tuple[Benchmark, ...] = ()
    one_process: str | None = None
    card_figures: Callable[[Any], list[tuple[str, str]]] | None = None
    card_warnings: Callable[[Any], list[str]] | None = None
    transport: str = "MPI"
