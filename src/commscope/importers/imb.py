"""Intel MPI Benchmarks (IMB-MPI1) text output.

Each benchmark's table follows a block of comment lines naming it ("# Benchmarking PingPong",
"# #processes = 2") and a column header ("#bytes #repetitions t[usec] Mbytes/sec", or
"... t_min[usec] t_max[usec] t_avg[usec] ..."). Times are in microseconds; the Mbytes/sec
column is not used, since its unit changed between IMB versions (2^20 or 10^6 bytes). How
each table becomes records:

- PingPong: t[usec] is half the round trip, a ping-pong sample as is.
- Uniband and Biband: Msg/sec x size is the rate (both directions for Biband); a sample is
  the time of a window of 64 messages at that rate, as the engine's bw and bibw define it.
- Every other table with times (PingPing, Sendrecv, Exchange, the collectives, Barrier) is a
  collective record named after the benchmark, holding its t_avg (or t[usec]) as one launch;
  group "world" when it ran on the most processes in the file, else "ranks 0-(N-1)".
- Multi-group tables (-multi) and non-blocking overlap tables are skipped with a note.
- IMB-RMA tables become one-sided series (``imb_rma``).
"""

from __future__ import annotations

import re

from commscope import strict
from commscope.importers import imb_rma
from commscope.importers.common import Collector, Imported, integer, malformed, number
from commscope.limits import MAX_RANKS

WINDOW = 64  # IMB's message window for Uniband and Biband
_BENCH = re.compile(r"^#\s*Benchmarking\s+(?P<name>\S+)")
_PROCS = re.compile(r"^#\s*#processes\s*=\s*(?P<n>.*)$")
_FAILED = ("out-of-mem", "int-overflow", "time-out")
_EXPECTED = (
    "IMB output: '# Benchmarking NAME', '# #processes = N', a '#bytes #repetitions"
    " ...' header, then rows of numbers"
)


class _Table:
    """The benchmark being read."""

    def __init__(self, name: str, lineno: int) -> None:
        self.name = name
        self.lineno = lineno
        self.nprocs: int | None = None
        self.columns: list[str] = []
        self.rows: list[tuple[int, str, list[float]]] = []  # (line number, text, values)
        self.skip: str | None = "a multi-group table" if name.startswith("Multi-") else None
        self.mode: str | None = None  # IMB-RMA: NON-AGGREGATE or AGGREGATE


def parse(path: str, lines: list[str], pair: str = "unknown") -> Imported:
    """Read IMB-MPI1 output into records.

    Args:
        path: the file's name, used in errors.
        lines: its lines.
        pair: pair label given to point-to-point records.

    Raises:
        InputError: a line is malformed or a number in it breaks its bounds (names the file
            and line).
    """
    tables: list[_Table] = []
    notes: list[str] = []
    for lineno, line in enumerate(lines, start=1):
        text = line.strip()
        if not text:
            continue
        table = tables[-1] if tables else None
        if text.startswith(("#bytes", "#repetitions")):
            if table is None:
                raise malformed(
                    path,
                    lineno,
                    line,
                    "a column header before any '# Benchmarking' line",
                    _EXPECTED,
                )
            if table.rows:  # the rows read so far were laid out by the first header
                raise malformed(
                    path,
                    lineno,
                    line,
                    f"a second column header in the table of {table.name} (line {table.lineno})",
                    _EXPECTED,
                )
            table.columns = text.split()
            continue
        if text.startswith("#"):
            if bench := _BENCH.match(text):
                tables.append(_Table(bench["name"], lineno))
            elif table is not None and (mode := imb_rma.MODE.match(text)):
                table.mode = mode["mode"]
            elif table is not None and (procs := _PROCS.match(text)):
                if table.rows:
                    raise malformed(
                        path,
                        lineno,
                        line,
                        f"a second process count in the table"
                        f" of {table.name} (line {table.lineno})",
                        _EXPECTED,
                    )
                try:
                    table.nprocs = strict.whole(procs["n"], 1, MAX_RANKS)
                except strict.NumberError as err:
                    raise malformed(path, lineno, line, f"#processes {err}", _EXPECTED) from None
            continue
        if table is None or not table.columns:
            raise malformed(
                path, lineno, line, "data before a benchmark's column header", _EXPECTED
            )
        tokens = text.split()
        failed = next((f for f in _FAILED if f in text), None)
        if failed:
            notes.append(
                f"line {lineno}: {table.name} {tokens[0]} bytes failed in IMB ({failed}), skipped"
            )
            continue
        values = [number(t) for t in tokens]
        if len(tokens) != len(table.columns) or any(v is None or v < 0 for v in values):
            raise malformed(
                path,
                lineno,
                line,
                f"not {len(table.columns)} non-negative numbers under {' '.join(table.columns)!r}",
                _EXPECTED,
            )
        table.rows.append((lineno, line, [float(v or 0.0) for v in values]))
    out = Collector(path, lines, _EXPECTED)
    most = max((t.nprocs or 2 for t in tables), default=2)
    for table in tables:
        if not table.skip and imb_rma.handles(table.name):
            notes += imb_rma.store(out, table, path, pair, _EXPECTED)
            continue
        reason = table.skip or _store(out, table, path, pair, most)
        if reason and table.rows:
            notes.append(f"line {table.lineno}: {table.name} skipped ({reason})")
    records = out.records()
    if not records:
        raise malformed(
            path, len(lines), lines[-1] if lines else "", "no IMB table with times", _EXPECTED
        )
    return Imported("imb", path, records, most, tuple(notes))


def _store(out: Collector, table: _Table, path: str, pair: str, most: int) -> str | None:
    """Add ``table``'s rows to ``out``; return why it was skipped, or None."""
    cols = table.columns
    if any(c.startswith("t_ovrl") for c in cols):
        return "non-blocking overlap tables are not imported"
    time_col = next((cols.index(c) for c in ("t_avg[usec]", "t[usec]") if c in cols), None)
    size_col = cols.index("#bytes") if "#bytes" in cols else None
    reps_col = cols.index("#repetitions") if "#repetitions" in cols else None
    rate_col = cols.index("Msg/sec") if "Msg/sec" in cols else None
    name = table.name
    if name in ("Uniband", "Biband") and rate_col is None:
        return "no Msg/sec column"
    if name not in ("Uniband", "Biband") and time_col is None:
        return "no time column"
    for lineno, line, values in table.rows:
        tokens = line.split()
        size = 0 if size_col is None else integer(tokens[size_col])
        if size is None:
            raise malformed(path, lineno, line, "#bytes is not a whole number", _EXPECTED)
        reps = 1 if reps_col is None else integer(tokens[reps_col])
        if reps is None:
            raise malformed(path, lineno, line, "#repetitions is not a whole number", _EXPECTED)
        if rate_col is not None and name in ("Uniband", "Biband"):
            rate = values[rate_col]
            if rate <= 0:
                raise malformed(path, lineno, line, "Msg/sec must be above 0", _EXPECTED)
            messages = WINDOW * (2 if name == "Biband" else 1)
            out.point(
                lineno,
                op="bw" if name == "Uniband" else "bibw",
                pair=pair,
                nbytes=size,
                bytes_per_sample=messages * size,
                sample_s=messages / rate,
                window=WINDOW,
                iters=max(reps, 1),
                what=f"{rate:g} Msg/sec",
            )
        elif time_col is None:  # unreachable: checked above
            return "no time column"
        elif name == "PingPong":
            out.point(
                lineno,
                op="pingpong",
                pair=pair,
                nbytes=size,
                bytes_per_sample=size,
                sample_s=values[time_col] / 1e6,
                iters=max(reps, 1),
                what=f"{cols[time_col]} {values[time_col]:g}",
            )
        else:
            nprocs = table.nprocs or 2
            group = "world" if nprocs == most else f"ranks 0-{nprocs - 1}"
            op = re.sub(r"[^a-z0-9_]", "_", name.lower())
            out.coll(
                lineno,
                op=op,
                group=group,
                nranks=nprocs,
                nbytes=size,
                time_s=values[time_col] / 1e6,
                what=f"{cols[time_col]} {values[time_col]:g}",
            )
    return None
