"""Helpers shared by subcommands: options with environment defaults, store, output."""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import TYPE_CHECKING, Any

from commscope.errors import UsageError
from commscope.store import Store

if TYPE_CHECKING:
    from rich.console import Console


def option(
    parser: argparse.ArgumentParser | Any,
    flag: str,
    *,
    env: str | None = None,
    default: Any = None,
    help: str,
    **kwargs: Any,
) -> None:
    """Declare an option once: its flag, environment variable and default, shown in --help."""
    if env and os.environ.get(env) is not None:
        default = os.environ[env]
    text = help
    if env:
        text += f" (env {env})"
    if default is not None and kwargs.get("action") not in ("store_true", "store_false"):
        text += " [default: %(default)s]"
    parser.add_argument(flag, default=default, help=text, **kwargs)


def open_store(args: argparse.Namespace) -> Store:
    """Open the store named by the global --store option."""
    return Store.open(args.store)


def resumable_request(store: Store, ref: str) -> tuple[int, dict[str, Any]]:
    """The run id and stored request of an incomplete run to resume (UsageError if complete).

    Segments its earlier processes left "running" (they were killed before they could close
    them) are closed as "incomplete" first, so a run that completes has every segment closed.
    """
    run_id = store.resolve_run(ref)
    info = store.get_run(run_id)
    if info.status == "complete":
        raise UsageError(f"--resume {ref}: run {run_id} is complete; nothing to do")
    store.close_running_segments(run_id, "interrupted: its process ended without closing this"
                                 " segment (closed when the run was resumed)")
    return run_id, info.request


def print_json(data: Any) -> None:
    """Machine-readable output: sizes in bytes, times in seconds, bandwidths in bytes/s."""
    json.dump(data, sys.stdout, indent=2, sort_keys=False)
    sys.stdout.write("\n")


def console(stderr: bool = False) -> Console:
    """Console for human-readable output (no colour codes when piped)."""
    from rich.console import Console  # rich is imported on first output, not at start

    probe = Console(stderr=stderr)
    # Piped output gets a width that keeps tables readable instead of rich's 80 columns.
    return Console(highlight=False, stderr=stderr, width=None if probe.is_terminal else 140)


def positive_int(text: str) -> int:
    """Parse an integer >= 1 (an argparse type)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text} must be at least 1")
    return value


def positive_float(text: str) -> float:
    """Parse a number > 0 (an argparse type)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"{text} must be above 0")
    return value


def require(condition: bool, message: str) -> None:
    """Raise a UsageError (exit 2) with ``message`` unless ``condition``."""
    if not condition:
        raise UsageError(message)
