"""Helpers shared by subcommands: options with environment defaults, store, output."""

from __future__ import annotations

import argparse
import datetime
import functools
import os
import re
import sys
from collections.abc import Callable
from typing import IO, TYPE_CHECKING, Any

from commscope import limits, strict
from commscope.cli import json_text
from commscope.data.store import Store
from commscope.errors import InputError, UsageError

if TYPE_CHECKING:
    from rich.console import Console


SWITCHES = ("store_true", "store_false")


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
    shown = "[default:" in help  # the help says it in words: never two defaults
    if default is not None and not shown and kwargs.get("action") not in SWITCHES:
        text += " [default: %(default)s]"
    parser.add_argument(flag, default=default, help=text, **kwargs)


def open_store(args: argparse.Namespace, write: bool = True, create: bool = True) -> Store:
    """Open the store named by the global --store option; read-only unless ``write``.

    ``create`` False: a writing command that needs an existing store never creates one.
    """
    return Store.open(args.store, write=write, create=create)


def print_json(data: Any) -> None:
    """Machine-readable output: sizes in bytes, times in seconds, bandwidths in bytes/s.

    Strict JSON: a number that is not finite is written as null (:mod:`.json_text`).
    """
    sys.stdout.write(json_text.text(data) + "\n")


# C0 controls but tab and newline, DEL, and C1 controls (0x9b is a one-byte CSI).
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def terminal_text(text: str) -> str:
    r"""``text`` with control characters shown as ``\xNN``, so none reaches the terminal raw.

    Labels, file names and messages come from users, files and other programs; an ESC in a
    label must print as ``\x1b``, not recolour or clear the terminal.
    """
    return strict.visible(text, keep="\t\n")  # a lone surrogate too: print would fail on it


@functools.cache
def _console_class() -> type[Console]:
    from rich.console import Console

    class LiteralConsole(Console):
        """A rich console that prints every string as it is: no markup, no emoji codes.

        Every str printed or put in a table (cells, titles, headers) passes through
        :meth:`render_str`, where control characters are neutralised; a label such as
        ``[/]`` then prints as typed instead of raising a markup error. Styled output is
        built as ``rich.text.Text`` with a style.
        """

        def render_str(self, text: str, **kwargs: Any) -> Any:
            return super().render_str(terminal_text(text), **kwargs)

        def on_broken_pipe(self) -> None:
            # rich exits 1 here; the reader (`head`) going away ends the command quietly
            # with 0 instead, as other Unix tools do (cli.main catches this).
            self.quiet = True
            raise BrokenPipeError

    return LiteralConsole


def console(stderr: bool = False, file: IO[str] | None = None, width: int | None = None) -> Console:
    """Console for human-readable output (no colour codes when piped).

    Strings are printed literally (see :func:`terminal_text`); style with ``rich.text.Text``.
    ``file`` replaces stdout (or stderr) and ``width`` the width the console finds.
    """
    cls = _console_class()  # rich is imported on first output, not at start
    probe = cls(stderr=stderr, file=file)
    # Piped output gets a width that keeps tables readable instead of rich's 80 columns.
    return cls(
        highlight=False,
        markup=False,
        emoji=False,
        stderr=stderr,
        file=file,
        width=width or (None if probe.is_terminal else 140),
    )


def whole(lo: int, hi: int) -> Callable[[str], int]:
    """An argparse type: a whole number in ASCII digits from ``lo`` to ``hi``."""

    def parse(text: str) -> int:
        try:
            return strict.whole(text, lo, hi)
        except strict.NumberError as err:
            raise argparse.ArgumentTypeError(str(err)) from None

    return parse


def number(lo: float, hi: float, above: bool = False) -> Callable[[str], float]:
    """An argparse type: a finite decimal number within the bounds (``lo`` excluded if above)."""

    def parse(text: str) -> float:
        try:
            return strict.real(text, lo, hi, above)
        except strict.NumberError as err:
            raise argparse.ArgumentTypeError(str(err)) from None

    return parse


# Counts passed on as C ints, and positive figures in general, when no tighter bound applies.
positive_int = whole(1, 2**31 - 1)
positive_float = number(0.0, 1e15, above=True)
ranks = whole(1, limits.MAX_RANKS)
seconds = number(0.0, limits.MAX_COMMAND_S, above=True)


def check_label(text: str, flag: str = "--label") -> str:
    """``text`` if it is a usable label: 1 to MAX_LABEL_CHARS printable characters.

    Raises:
        InputError: empty, too long, a control character, or not encodable as UTF-8.
    """
    fix = (
        f"give 1 to {limits.MAX_LABEL_CHARS} printable characters (letters, digits,"
        " spaces, punctuation)"
    )
    if not text.strip():
        raise InputError(f"{flag} is empty; {fix}")
    if len(text) > limits.MAX_LABEL_CHARS:
        raise InputError(f"{flag} has {len(text)} characters; {fix}")
    bad = _CONTROL.search(text) or re.search(r"[\n\t\u2028\u2029]", text)
    if bad:
        raise InputError(f"{flag} holds the control character \\x{ord(bad.group()):02x}; {fix}")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise InputError(f"{flag} is not valid text (undecodable bytes); {fix}") from None
    return text


def label(text: str) -> str:
    """An argparse type for labels (see :func:`check_label`)."""
    try:
        return check_label(text)
    except InputError as err:
        raise argparse.ArgumentTypeError(str(err).removeprefix("--label ")) from None


def date_text(unix: float) -> str:
    """A time as people read a run's date: ``2026-12-06 03:16`` (local time)."""
    return datetime.datetime.fromtimestamp(unix).strftime("%Y-%m-%d %H:%M")


def require(condition: bool, message: str) -> None:
    """Raise a UsageError (exit 2) with ``message`` unless ``condition``."""
    if not condition:
        raise UsageError(message)
