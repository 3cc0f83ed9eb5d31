"""Benchmark kinds, one module each: its records, summary, JSON, terminal tables, report entry.

``KINDS`` is the registry `show`, `run` and the report go through; CONTRIBUTING.md walks
through adding a kind. The registry (``kinds/registry.py``) loads every kind's module, with
numpy and Rich, so it is loaded on first use of one of its names: the CLI's parser reads the
kinds' light declarations (``benchmarks``, ``run_commands``) without it.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from commscope.kinds.benchmarks import DEFAULT_RUN, Benchmark

if TYPE_CHECKING:
    from commscope.kinds.base import Kind, View
    from commscope.kinds.registry import (
        KINDS,
        benchmark,
        engine_benchmarks,
        figure_specs,
        measures,
        one_process,
        render_report,
        report_contexts,
        run_figures,
        summaries,
        terminal,
        to_json,
        transport,
        write_report,
    )

__all__ = [
    "DEFAULT_RUN",
    "KINDS",
    "Benchmark",
    "Kind",
    "benchmark",
    "engine_benchmarks",
    "View",
    "figure_specs",
    "measures",
    "one_process",
    "run_figures",
    "render_report",
    "report_contexts",
    "summaries",
    "terminal",
    "to_json",
    "transport",
    "write_report",
]
_REGISTRY = set(__all__) - {"DEFAULT_RUN", "Benchmark"}


def __getattr__(name: str) -> Any:
    """A name of the registry, which is loaded now if it was not yet."""
    if name not in _REGISTRY:  # a kind's module not imported yet is imported, not looked up
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    # Not kept here: a kind registered in the registry (a test's) is seen through this name too.
    return getattr(importlib.import_module("commscope.kinds.registry"), name)
