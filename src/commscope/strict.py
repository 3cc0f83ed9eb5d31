"""Numbers from users and files, read by one rule: ASCII digits, finite, within stated bounds.

Also the patterns of names shared by several parts: a kernel TCP congestion control's, shared
by the vcluster and runs, and a host's, shared by hostfiles and pairs files; and
:func:`visible`, the one way text from a store or a user is shown where a control character
would do harm (a terminal, an HTML report, a JUnit file).

``str.isdigit`` and ``int``/``float`` accept more than a number written in ASCII digits
(``'8²'.isdigit()`` is true, ``int('١٢')`` is 12, ``float(' inf')`` and ``float('1_0')`` parse),
so text is matched against an ASCII pattern first, then converted, then bounded. Every failure
is a :class:`NumberError` whose message says what is wrong and what to give instead; callers
put where the value came from (a file and line, an option) in front.
"""

from __future__ import annotations

import math
import re

from commscope.limits import MAX_NUMBER_CHARS

_WHOLE = re.compile(r"[+-]?[0-9]+")
_REAL = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_SHOWN = 24

# A TCP congestion control's name as the kernel lists it (cubic, bbr, reno; at most 15
# characters, TCP_CA_NAME_MAX less the NUL): checked where a user gives one and where a record
# says one ran. The record schema (records-v1.json) has the same pattern.
CONGESTION_CONTROL_NAME = re.compile(r"[a-z][a-z0-9_]{0,15}")

# A host name commscope puts in a launcher's arguments (hostfiles, --hosts, pairs files):
# letters, digits, dots, dashes and underscores, no option-like leading dash, no shell
# metacharacter, space or control character, at most MAX_HOST_NAME_CHARS (253).
HOST_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,252}")


class NumberError(ValueError):
    """A value that breaks the rule; the message is a phrase naming the value and the fix."""


# What no output shows as itself: C0 and C1 controls and DEL (ESC recolours a terminal, a
# newline adds a line to a one-line file), the Unicode line separators, lone surrogates (not
# encodable as UTF-8: a write would fail) and the two noncharacters XML forbids.
_UNSHOWN = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff\ufffe\uffff]")


def visible(text: str, keep: str = "") -> str:
    r"""``text`` with each character of :data:`_UNSHOWN` written as an escape, but ``keep``.

    ESC becomes ``\x1b``, a lone surrogate ``\udcff``; ``keep`` names characters left as
    they are (``"\t\n"`` where a line break is the output's own, as on a terminal).
    """

    def escape(match: re.Match[str]) -> str:
        char = match.group()
        if char in keep:
            return char
        code = ord(char)
        return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"

    return _UNSHOWN.sub(escape, text)


def shown(text: object) -> str:
    """``text`` quoted for a message, cut short when long."""
    quoted = repr(text) if isinstance(text, str) else str(text)
    return quoted if len(quoted) <= _SHOWN else quoted[: _SHOWN - 4] + "...'"


def whole_range(lo: int, hi: int) -> str:
    """How a whole-number bound reads in a fix: "a whole number from 1 to 64"."""
    return f"a whole number from {lo} to {hi}"


def real_range(lo: float, hi: float, above: bool = False) -> str:
    """How a number bound reads in a fix: "a number above 0 and at most 3600"."""
    if above:
        return f"a number above {lo:g} and at most {hi:g}"
    return f"a number from {lo:g} to {hi:g}"


def check_whole(value: object, lo: int, hi: int) -> int:
    """``value`` if it is an int (not a bool) with ``lo <= value <= hi``.

    Raises:
        NumberError: anything else.
    """
    fix = whole_range(lo, hi)
    if isinstance(value, bool) or not isinstance(value, int):
        raise NumberError(f"{shown(value)} is not a whole number; give {fix}")
    if not lo <= value <= hi:
        raise NumberError(f"{shown(value)} is out of range; give {fix}")
    return value


def check_real(
    value: object, lo: float, hi: float, above: bool = False, text: str | None = None
) -> float:
    """``value`` as a float if it is a finite number within the bounds.

    Args:
        value: an int or float (a bool is refused).
        lo: the lower bound; excluded when ``above``.
        hi: the upper bound, included.
        above: the value must exceed ``lo`` (times, sizes and rates that must be positive).
        text: how the value was written, shown in errors instead of the value.

    Raises:
        NumberError: not a number, not finite, or out of bounds.
    """
    fix = real_range(lo, hi, above)
    named = shown(value if text is None else text)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise NumberError(f"{named} is not a number; give {fix}")
    number = float(value) if not isinstance(value, int) or abs(value) < 2**1000 else math.inf
    if not math.isfinite(number):
        raise NumberError(f"{named} is not a finite number; give {fix}")
    if number > hi or number < lo or (above and number == lo):
        raise NumberError(f"{named} is out of range; give {fix}")
    return number


def _text(text: str, pattern: re.Pattern[str], fix: str, what: str) -> str:
    body = text.strip()
    if len(body) > MAX_NUMBER_CHARS:
        raise NumberError(
            f"{shown(text)} has {len(body)} characters, too long for a number; give {fix}"
        )
    if not pattern.fullmatch(body):
        raise NumberError(f"{shown(text)} is not {what} in ASCII digits; give {fix}")
    return body


def whole(text: str, lo: int, hi: int) -> int:
    """Parse a whole number written in ASCII digits, ``lo <= n <= hi``.

    Raises:
        NumberError: other characters, too many of them, or out of bounds.
    """
    return check_whole(int(_text(text, _WHOLE, whole_range(lo, hi), "a whole number")), lo, hi)


def real(text: str, lo: float, hi: float, above: bool = False) -> float:
    """Parse a decimal number (``12``, ``-0.5``, ``1.5e-6``) within the bounds.

    ``inf``, ``nan``, underscores and non-ASCII digits are refused; so is a value that
    overflows to infinity (``1e999``). See :func:`check_real` for the bounds.

    Raises:
        NumberError: not such a number, or out of bounds.
    """
    body = _text(text, _REAL, real_range(lo, hi, above), "a number")
    return check_real(float(body), lo, hi, above, body)
