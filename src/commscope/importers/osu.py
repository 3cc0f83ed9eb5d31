"""OSU Micro-Benchmarks text output: osu_latency, osu_bw, osu_bibw and the collectives.

A file holds one or more tests, each a title line ("# OSU MPI Latency Test v7.1"), comment
lines ("# Datatype: MPI_CHAR.", "# [ pairs: 1 ] [ window size: 64 ]"), a column header
("# Size          Latency (us)", "# Size       Avg Latency(us)   Min Latency(us) ...") and one
row per size. How each becomes records:

- osu_latency reports the one-way time (half the round trip): a ping-pong sample as is.
- osu_bw and osu_bibw report MB/s (10^6 bytes/s) over a window of messages (64 unless the
  output names another): the sample is the time that window takes at the reported rate,
  window x size / rate for bw and 2 x window x size / rate for bibw (both directions move),
  with bytes_per_sample set to match, so the stored bandwidth is exactly the reported one.
- Collectives report the average latency over ranks in microseconds: one launch time. The
  output does not say how many processes ran, so the caller must.
- osu_mbw_mr reports MB/s and messages/s summed over its pairs ("# [ pairs: N ]"): a point of
  op mbw_k<N>, as `commscope run mbw` stores it, whose sample is the time one window of every
  pair takes at the reported rate (N x window x size / rate); messages/s must agree with
  MB/s / size, as osu_mbw_mr computes it.
"""

from __future__ import annotations

import re

from commscope import strict
from commscope.data.point_ops import MBW_OP_PREFIX, mbw_pairs
from commscope.data.records import Coll, Point
from commscope.errors import UsageError
from commscope.importers import common, osu_rma
from commscope.importers.common import Collector, Imported, integer, malformed, number

DEFAULT_WINDOW = 64
_TITLE = re.compile(r"^#\s*OSU\s+MPI(?:-[\w.]+)?\s+(?P<name>.+?)\s+Test\b", re.IGNORECASE)
_PAIRS = re.compile(r"\bpairs\s*:\s*([^\s\]]*)", re.IGNORECASE)
_MBW = "multiple bandwidth / message rate"
MAX_PAIRS = 1 << 19
_COLLECTIVES = {
    "allgather": "allgather",
    "allgatherv": "allgatherv",
    "allreduce": "allreduce",
    "all-to-all personalized exchange": "alltoall",
    "all-to-allv personalized exchange": "alltoallv",
    "alltoall": "alltoall",
    "alltoallv": "alltoallv",
    "barrier": "barrier",
    "broadcast": "bcast",
    "bcast": "bcast",
    "gather": "gather",
    "gatherv": "gatherv",
    "reduce": "reduce",
    "reduce_scatter": "reduce_scatter",
    "reduce_scatter_block": "reduce_scatter_block",
    "scatter": "scatter",
    "scatterv": "scatterv",
}
_P2P = {"latency": "pingpong", "bandwidth": "bw", "bi-directional bandwidth": "bibw"}
_EXPECTED = (
    "OSU output: a '# OSU MPI ... Test' title, a '# Size ...' header, then rows of a"
    " size and a value"
)


class _Table:
    """The test being read: what it measures and how its columns are laid out."""

    def __init__(self, name: str, op: str, is_coll: bool) -> None:
        self.name = name
        self.op = op
        self.is_coll = is_coll
        self.window = DEFAULT_WINDOW
        self.has_size = True
        self.iterations_col: int | None = None
        self.header_seen = False
        self.pairs: int | None = None  # osu_mbw_mr: pairs sending at once


def _table_for(name: str) -> _Table | None:
    key = " ".join(name.lower().split())
    if key in _P2P:
        return _Table(name, _P2P[key], False)
    if key == _MBW:
        return _Table(name, "mbw", False)
    if key.endswith(" latency") and key[: -len(" latency")] in _COLLECTIVES:
        return _Table(name, _COLLECTIVES[key[: -len(" latency")]], True)
    return None


def _header(table: _Table, text: str) -> bool:
    """Read a '# Size ...' column header into ``table``; False if ``text`` is not one."""
    columns = [c for c in re.split(r"\s{2,}", text) if c]
    if not columns:
        return False
    first = columns[0].lower()
    if first.split()[0] == "size":
        table.has_size = True
    elif table.op == "barrier" and "latency" in first:
        table.has_size = False
    else:
        return False
    table.header_seen = True
    names = [c.lower() for c in columns]
    table.iterations_col = next((i for i, c in enumerate(names) if c.startswith("iteration")), None)
    return True


def parse(
    path: str, lines: list[str], pair: str = "unknown", nranks: int | None = None
) -> Imported:
    """Read OSU output into records.

    Args:
        path: the file's name, used in errors.
        lines: its lines.
        pair: pair label given to point-to-point records.
        nranks: processes the collectives ran on (the output does not say).

    Raises:
        InputError: a line is malformed or a number in it breaks its bounds (names the file
            and line).
        UsageError: collectives are present but ``nranks`` was not given.
    """
    if osu_rma.is_rma(lines):  # osu_put_latency and the other one-sided tests
        return osu_rma.parse(path, lines, pair)
    out = Collector(path, lines, _EXPECTED)
    table: _Table | None = None
    for lineno, line in enumerate(lines, start=1):
        text = line.strip()
        if not text:
            continue
        if text.startswith("#"):
            body = text.lstrip("#").strip()
            title = _TITLE.match(text)
            if title:
                table = _table_for(title["name"])
                if table is None:
                    raise malformed(
                        path,
                        lineno,
                        line,
                        f"OSU test {title['name']!r} is not supported",
                        "osu_latency, osu_bw, osu_bibw or a blocking"
                        " collective such as osu_allreduce",
                    )
                if table.is_coll and nranks is None:
                    raise UsageError(
                        f"{path} line {lineno}: OSU output does not say how many"
                        " processes ran the collectives; give --nranks N"
                    )
            elif table is not None and not table.header_seen and _header(table, body):
                pass
            elif table is not None:
                try:
                    table.window = common.window_size(body) or table.window
                except strict.NumberError as err:
                    raise out.fail(lineno, f"window size {err}") from None
            if table is not None and (pairs := _PAIRS.search(body)):
                try:
                    table.pairs = strict.whole(pairs[1], 1, MAX_PAIRS)
                except strict.NumberError as err:
                    raise out.fail(lineno, f"pairs {err}") from None
            continue
        if table is None or not table.header_seen:
            raise malformed(
                path, lineno, line, "data before an OSU title and column header", _EXPECTED
            )
        _row(out, table, path, lineno, line, pair, nranks)
    records = out.records()
    if not records:
        raise malformed(path, len(lines), lines[-1] if lines else "", "no data rows", _EXPECTED)
    has_coll = any(isinstance(r, Coll) for r in records)
    # osu_mbw_mr's N pairs ran on 2N processes
    ranks = max((2 * (mbw_pairs(r.op) or 1) for r in records if isinstance(r, Point)), default=2)
    return Imported("osu", path, records, nranks if has_coll else ranks)


def _row(
    out: Collector, table: _Table, path: str, lineno: int, line: str, pair: str, nranks: int | None
) -> None:
    tokens = line.split()
    if table.op == "mbw":
        _mbw_row(out, table, path, lineno, line, pair)
        return
    if table.has_size:
        size = integer(tokens[0])
        value = number(tokens[1]) if len(tokens) > 1 else None
    else:
        size, value = 0, number(tokens[0])
    if size is None or value is None or value < 0:
        what = "a size and a non-negative number" if table.has_size else "a non-negative number"
        raise malformed(path, lineno, line, f"not {what}", _EXPECTED)
    iters = 1
    if table.iterations_col is not None and table.iterations_col < len(tokens):
        iters = integer(tokens[table.iterations_col]) or 1
    if table.is_coll:
        out.coll(
            lineno,
            op=table.op,
            group="world",
            nranks=nranks or 1,
            nbytes=size,
            time_s=value / 1e6,
            what=f"a latency of {value:g} us",
        )
    elif table.op == "pingpong":
        out.point(
            lineno,
            op="pingpong",
            pair=pair,
            nbytes=size,
            bytes_per_sample=size,
            sample_s=value / 1e6,
            iters=iters,
            what=f"a latency of {value:g} us",
        )
    else:
        moved = table.window * size * (2 if table.op == "bibw" else 1)
        if value <= 0 or size == 0:
            raise malformed(
                path,
                lineno,
                line,
                "a bandwidth row needs a size and a rate above 0 to give a time",
                _EXPECTED,
            )
        out.point(
            lineno,
            op=table.op,
            pair=pair,
            nbytes=size,
            bytes_per_sample=moved,
            sample_s=moved / (value * 1e6),
            window=table.window,
            iters=iters,
            what=f"a rate of {value:g} MB/s",
        )


def _mbw_row(out: Collector, table: _Table, path: str, lineno: int, line: str, pair: str) -> None:
    """One osu_mbw_mr row: size, MB/s over all pairs, messages/s over all pairs."""
    if table.pairs is None:
        raise malformed(
            path, lineno, line, "osu_mbw_mr data before its '# [ pairs: N ]' line", _EXPECTED
        )
    tokens = line.split()
    size = integer(tokens[0])
    values = [number(t) for t in tokens[1:]]
    if size is None or size == 0 or len(tokens) not in (2, 3) or None in values:
        why = "not a size above 0, MB/s and (optionally) messages/s"
        raise malformed(path, lineno, line, why, _EXPECTED)
    mbs = float(values[0] or 0)
    rate = float(values[-1] or 0) if len(values) == 2 else mbs * 1e6 / size  # -r 0: no rate
    # Both printed with two decimals: MB/s / size may differ from messages/s by that rounding.
    slack = 0.005 * 1e6 / size + 0.005 + 1e-9 * rate
    if mbs <= 0 or abs(rate - mbs * 1e6 / size) > slack:
        raise out.fail(
            lineno,
            f"{rate:g} messages/s is not {mbs:g} MB/s / {size} bytes above 0,"
            " as osu_mbw_mr prints it",
        )
    moved = table.pairs * table.window * size
    out.point(
        lineno,
        op=f"{MBW_OP_PREFIX}{table.pairs}",
        pair=pair,
        nbytes=size,
        bytes_per_sample=moved,
        sample_s=moved / (mbs * 1e6),
        window=table.window,
        what=f"a rate of {mbs:g} MB/s",
    )
