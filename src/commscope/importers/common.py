"""What every importer shares: reading the file, one-line errors, building valid records.

An importer reads the whole file into a ``Collector`` before anything touches the store, so a
malformed line leaves nothing half-stored. Sizes measured twice (two tables in one file, or a
repeated size) become one record with one sample per occurrence.
"""

from __future__ import annotations

import math
import os
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from commscope import limits, strict
from commscope.data.record_parse import record_from_dict
from commscope.data.records import Coll, Point
from commscope.errors import InputError, UsageError

PAIR_LABELS = ("intra-socket", "inter-socket", "intra-node", "inter-node", "unknown")
_MAX_LINE_SHOWN = 60
MAX_ITERS = 10**12  # iterations behind one reported figure
MAX_WINDOW = 1 << 16  # messages in flight an OSU comment may name
_WINDOW = re.compile(r"window\s+size\s*[:=]\s*([^\s\]]*)", re.IGNORECASE)


@dataclass(frozen=True)
class Imported:
    """The records read from one file, ready to store as a run."""

    format: str
    file: str
    records: tuple[Point | Coll, ...]
    nranks: int | None  # largest process count the file names (2 for point-to-point only)
    notes: tuple[str, ...] = field(default=())  # tables or rows skipped, and why

    @property
    def n_points(self) -> int:
        """Point-to-point records."""
        return sum(1 for r in self.records if isinstance(r, Point))

    @property
    def n_colls(self) -> int:
        """Collective records."""
        return len(self.records) - self.n_points


def read_lines(path: str | os.PathLike[str]) -> list[str]:
    """The file's lines, without line ends.

    Raises:
        UsageError: the file cannot be read or is not text.
    """
    where = Path(path)
    try:
        return where.read_text(encoding="utf-8", errors="strict").splitlines()
    except FileNotFoundError:
        raise UsageError(f"{where}: no such file; give the path of the benchmark output") from None
    except IsADirectoryError:
        raise UsageError(f"{where} is a directory; give the path of the benchmark output") from None
    except UnicodeDecodeError:
        raise UsageError(f"{where} is not a text file; give the benchmark's text output") from None
    except OSError as err:
        why = err.strerror
        raise UsageError(f"{where} cannot be read ({why}); check its permissions") from None


def malformed(path: str, lineno: int, line: str, reason: str, expected: str) -> InputError:
    """One-line error naming the file, the line number, the offending text and the fix."""
    shown = " ".join(line.split())
    if len(shown) > _MAX_LINE_SHOWN:
        shown = shown[: _MAX_LINE_SHOWN - 3] + "..."
    return InputError(f"{path} line {lineno}: {reason} in {shown!r}; expected {expected}")


def number(text: str) -> float | None:
    """A finite number written in ASCII digits (``12``, ``0.5``, ``1.5e-6``), or None."""
    try:
        return strict.real(text, -sys.float_info.max, sys.float_info.max)
    except strict.NumberError:
        return None


def integer(text: str) -> int | None:
    """A non-negative whole number written in ASCII digits, or None."""
    try:
        return strict.whole(text, 0, 2**63 - 1)
    except strict.NumberError:
        return None


def window_size(body: str) -> int | None:
    """The window an OSU comment names ("[ pairs: 1 ] [ window size: 64 ]"), None if none.

    Raises:
        strict.NumberError: the named window is not a whole number from 1 to MAX_WINDOW.
    """
    found = _WINDOW.search(body)
    return None if found is None else strict.whole(found[1], 1, MAX_WINDOW)


class Collector:
    """Gathers samples per record key, in file order, then builds validated records.

    Every value is checked as it is added, against the bounds of :mod:`commscope.limits`:
    a size of one message, a time that is finite and positive (a zero or infinite time,
    e.g. from a rate of 5e-324, is refused rather than stored), a process count.
    """

    def __init__(self, path: str, lines: list[str], expected: str) -> None:
        self.path = path
        self._lines = lines
        self._expected = expected
        self._points: dict[tuple[str, str, int], dict[str, Any]] = {}
        self._colls: dict[tuple[str, str, int], dict[str, Any]] = {}
        self._where: dict[tuple[str, str, str, int], int] = {}

    def fail(self, lineno: int, reason: str) -> InputError:
        """The one-line error for ``reason`` at ``lineno`` of the file."""
        line = self._lines[lineno - 1] if 0 < lineno <= len(self._lines) else ""
        return malformed(self.path, lineno, line, reason, self._expected)

    def _check(self, lineno: int, nbytes: int, seconds: float, what: str) -> None:
        if not 0 <= nbytes <= limits.MAX_MESSAGE_BYTES:
            raise self.fail(
                lineno,
                f"size {nbytes} is beyond one message (0 to {limits.MAX_MESSAGE_BYTES} bytes)",
            )
        if not (math.isfinite(seconds) and limits.MIN_TIME_S <= seconds <= limits.MAX_TIME_S):
            raise self.fail(
                lineno,
                f"{what} gives a time of {seconds:g} s, not a measurement"
                f" (a time is above {limits.MIN_TIME_S:g} s and at most"
                f" {limits.MAX_TIME_S:g} s)",
            )

    def point(
        self,
        lineno: int,
        *,
        op: str,
        pair: str,
        nbytes: int,
        bytes_per_sample: int,
        sample_s: float,
        window: int | None = None,
        iters: int = 1,
        what: str = "the row",
    ) -> None:
        """Add one sample of a point-to-point measurement read at ``lineno``.

        ``what`` names the value the time came from, for errors ("a rate of 0 Msg/sec").
        """
        self._check(lineno, nbytes, sample_s, what)
        if not 1 <= iters <= MAX_ITERS:
            raise self.fail(lineno, f"{iters} iterations is not a count from 1 to {MAX_ITERS}")
        key = (op, pair, nbytes)
        record = self._points.get(key)
        if record is None:
            record = {
                "type": "point",
                "op": op,
                "pair": pair,
                "ranks": [0, 1],
                "bytes": nbytes,
                "bytes_per_sample": bytes_per_sample,
                "iters_per_sample": iters,
                "warmup": 0,
                "samples_s": [],
                "stop": "imported",
            }
            if window is not None:
                record["window"] = window
            self._points[key] = record
            self._where[("p", op, pair, nbytes)] = lineno
        elif bytes_per_sample and record["bytes_per_sample"] != bytes_per_sample:
            # Another window: keep one meaning per sample, the first table's.
            sample_s *= record["bytes_per_sample"] / bytes_per_sample
            self._check(lineno, nbytes, sample_s, what)
        record["samples_s"].append(sample_s)

    def coll(
        self,
        lineno: int,
        *,
        op: str,
        group: str,
        nranks: int,
        nbytes: int,
        time_s: float,
        what: str = "the row",
    ) -> None:
        """Add one reported time of a collective read at ``lineno``."""
        self._check(lineno, nbytes, time_s, what)
        if not 1 <= nranks <= limits.MAX_RANKS:
            raise self.fail(
                lineno, f"{nranks} processes is not a count from 1 to {limits.MAX_RANKS}"
            )
        key = (op, group, nbytes)
        record = self._colls.get(key)
        if record is None:
            record = {
                "type": "coll",
                "op": op,
                "group": group,
                "nranks": nranks,
                "bytes": nbytes,
                "method": "imported",
                "times_s": [],
                "flags": [],
                "stop": "imported",
            }
            self._colls[key] = record
            self._where[("c", op, group, nbytes)] = lineno
        record["times_s"].append(time_s)
        record["flags"].append(0)

    def records(self) -> tuple[Point | Coll, ...]:
        """Every record, validated against the schema (points first, then collectives)."""
        out: list[Point | Coll] = []
        for tag, table in (("p", self._points), ("c", self._colls)):
            for key, data in table.items():
                lineno = self._where[(tag, key[0], key[1], key[2])]
                record = record_from_dict(data, f"{self.path} line {lineno}")
                if isinstance(record, (Point, Coll)):  # always: the type is ours
                    out.append(record)
        return tuple(out)
