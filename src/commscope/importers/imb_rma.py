"""IMB-RMA tables (Intel MPI Benchmarks, one-sided part) as the engine's one-sided series.

IMB-RMA times passive-target epochs: the origin holds MPI_Win_lock(MPI_LOCK_SHARED) on the
target and completes operations with MPI_Win_flush, commscope's "lock" synchronisation. Each
benchmark prints a table per mode ("#    MODE: NON-AGGREGATE" or "AGGREGATE") whose t[usec] is
the time per operation:

- NON-AGGREGATE: every operation is followed by its flush, so t is the latency:
  Unidir_put, Unidir_get and Accumulate become put_lat_lock, get_lat_lock, acc_lat_lock.
- AGGREGATE: #repetitions operations and one flush, t is the epoch over the operations: a
  bandwidth sample of a window of #repetitions operations (put_bw_lock, get_bw_lock,
  acc_bw_lock), the epoch's time t x #repetitions.

The other tables (Bidir_*, where both ranks are origins; Get_accumulate, Fetch_and_op,
Compare_and_swap; the *_local, *_all and Truly_passive_put tables) have no commscope series
and are skipped with a note. A 0-byte row with a time of 0 is skipped too: nothing moved and
the time is below IMB's printed resolution.
"""

from __future__ import annotations

import re
from typing import Protocol

from commscope.importers.common import Collector, integer, malformed

MODE = re.compile(r"^#\s*MODE:\s*(?P<mode>NON-AGGREGATE|AGGREGATE)\s*$", re.IGNORECASE)
OPERATIONS = {"Unidir_put": "put", "Unidir_get": "get", "Accumulate": "acc"}
OTHERS = (
    "Bidir_put",
    "Bidir_get",
    "Get_accumulate",
    "Fetch_and_op",
    "Compare_and_swap",
    "Put_local",
    "Put_all_local",
    "One_put_all",
    "One_get_all",
    "All_put_all",
    "All_get_all",
    "Exchange_put",
    "Exchange_get",
    "Truly_passive_put",
)


class Table(Protocol):
    """What imb.py reads of one table."""

    name: str
    lineno: int
    mode: str | None
    columns: list[str]
    rows: list[tuple[int, str, list[float]]]


def handles(name: str) -> bool:
    """Whether ``name`` is an IMB-RMA benchmark."""
    return name in OPERATIONS or name in OTHERS


def store(out: Collector, table: Table, path: str, pair: str, expected: str) -> list[str]:
    """Add the table's rows to ``out``; the notes of what was skipped."""
    skipped = f"line {table.lineno}: {table.name} skipped"
    if table.name not in OPERATIONS:
        return [f"{skipped} (commscope measures one origin's put, get and accumulate only)"]
    if table.mode is None:
        return [f"{skipped} (no '# MODE:' line, so latency or bandwidth is unknown)"]
    cols = table.columns
    if "t[usec]" not in cols or "#bytes" not in cols or "#repetitions" not in cols:
        return [f"{skipped} (no #bytes, #repetitions and t[usec] columns)"]
    t_col, size_col, reps_col = (
        cols.index("t[usec]"),
        cols.index("#bytes"),
        cols.index("#repetitions"),
    )
    latency = table.mode.upper() == "NON-AGGREGATE"
    op = f"{OPERATIONS[table.name]}_{'lat' if latency else 'bw'}_lock"
    notes = []
    for lineno, line, values in table.rows:
        tokens = line.split()
        size, reps = integer(tokens[size_col]), integer(tokens[reps_col])
        if size is None or reps is None or reps < 1:
            raise malformed(path, lineno, line, "#bytes or #repetitions is not a count", expected)
        t_s = values[t_col] / 1e6
        if size == 0 and t_s == 0:
            notes.append(f"line {lineno}: {table.name} 0 bytes took 0 us, skipped")
            continue
        window = 1 if latency else reps
        out.point(
            lineno,
            op=op,
            pair=pair,
            nbytes=size,
            bytes_per_sample=window * size,
            sample_s=window * t_s,
            window=window,
            iters=reps,
            what=f"t[usec] {values[t_col]:g}",
        )
    return notes
