"""The status vocabulary monitoring reads: OK, WARNING, CRITICAL, UNKNOWN, and its one rule.

The values are the monitoring-plugins convention (Nagios, Icinga, Node Health Check): a
command that monitoring runs exits with its status. The rule: a command that could not
decide (it failed, was misused or was refused) says UNKNOWN, never OK and never CRITICAL,
whatever part failed. :func:`unknown_on_error` applies it in one place.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager

from commscope.errors import CommscopeError

OK, WARNING, CRITICAL, UNKNOWN = 0, 1, 2, 3
NAMES = {OK: "OK", WARNING: "WARNING", CRITICAL: "CRITICAL", UNKNOWN: "UNKNOWN"}


def name(status: int) -> str:
    """The status' name as monitoring shows it ("OK", "WARNING", ...)."""
    return NAMES[status]


def worst(statuses: Iterable[int]) -> int:
    """The worst of ``statuses`` (OK for none): UNKNOWN > CRITICAL > WARNING > OK."""
    return max(statuses, default=OK)


@contextmanager
def unknown_on_error() -> Iterator[None]:
    """Any commscope error raised inside exits UNKNOWN (3), whatever part raised it."""
    try:
        yield
    except CommscopeError as err:
        err.exit_code = UNKNOWN
        raise
