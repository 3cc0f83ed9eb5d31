"""OSU Micro-Benchmarks one-sided tests (OSU 7.4) as the engine's one-sided series.

The tests: osu_put_latency, osu_get_latency, osu_put_bw, osu_get_bw and osu_acc_latency.

Each test prints a title ("# OSU MPI_Put Latency Test v7.4"), how the window was made
("# Window creation: MPI_Win_allocate"), the synchronisation ("# Synchronization:
MPI_Win_flush"), the datatype, a column header ("# Size          Latency (us)" or
"# Size      Bandwidth (MB/s)") and one row per size. The rows become the engine's one-sided
series, OP_MODE_SYNC:

- the synchronisation: MPI_Win_flush (OSU's default: a shared lock held over the test, a flush
  per operation) is commscope's lock, MPI_Win_fence is fence, MPI_Win_post/start/complete/wait
  is pscw. OSU's lock/unlock per operation, lock_all and flush_local have no commscope
  counterpart and are refused (all or nothing).
- latency: the reported time of one operation and its synchronisation (under fence and pscw
  OSU halves a round of two epochs, as the engine does).
- bandwidth: MB/s (10^6 bytes/s) over a window of 64 operations per epoch (OSU's default; a
  "window size" comment overrides it): a sample is the time of the window at that rate.
"""

from __future__ import annotations

import re

from commscope import strict
from commscope.importers import common
from commscope.importers.common import Collector, Imported, integer, malformed, number

DEFAULT_WINDOW = 64
TITLE = re.compile(
    r"^#\s*OSU\s+MPI_(?P<op>\w+?)(?:-\w+)?\s+(?P<what>[\w\s-]+?)\s+Test\b", re.IGNORECASE
)
_SYNC = re.compile(r"^#\s*Synchronization:\s*(?P<sync>\S+)")
_OPS = {"put": "put", "get": "get", "accumulate": "acc"}
_MODES = {"latency": "lat", "bandwidth": "bw"}
SYNCS = {
    "MPI_Win_flush": "lock",
    "MPI_Win_fence": "fence",
    "MPI_Win_post/start/complete/wait": "pscw",
}
_EXPECTED = (
    "OSU one-sided output: a '# OSU MPI_Put Latency Test' title, '# Synchronization: ...',"
    " a '# Size ...' header, then rows of a size and a value"
)


def is_rma(lines: list[str]) -> bool:
    """Whether the file holds an OSU one-sided test (its title names an MPI_ call)."""
    return any(TITLE.match(line.strip()) for line in lines)


class _Test:
    """The test being read: operation, mode, its synchronisation and window."""

    def __init__(self, op: str, mode: str) -> None:
        self.op = op
        self.mode = mode
        self.sync: str | None = None
        self.window = DEFAULT_WINDOW
        self.header_seen = False


def _test_for(path: str, lineno: int, line: str) -> _Test:
    title = TITLE.match(line.strip())
    op = _OPS.get(title["op"].lower()) if title else None
    mode = _MODES.get(" ".join(title["what"].lower().split())) if title else None
    if title is None or op is None or mode is None or (op == "acc" and mode == "bw"):
        raise malformed(
            path,
            lineno,
            line,
            "not a supported OSU one-sided test",
            "osu_put_latency, osu_get_latency, osu_put_bw, osu_get_bw or osu_acc_latency",
        )
    return _Test(op, mode)


def parse(path: str, lines: list[str], pair: str = "unknown") -> Imported:
    """Read OSU one-sided output into records.

    Raises:
        InputError: a line is malformed, a test has an unsupported synchronisation or no
            '# Synchronization' line, or a number breaks its bounds (names the file and line).
    """
    out = Collector(path, lines, _EXPECTED)
    test: _Test | None = None
    for lineno, line in enumerate(lines, start=1):
        text = line.strip()
        if not text:
            continue
        if text.startswith("#"):
            body = text.lstrip("#").strip()
            if TITLE.match(text) or text.lower().startswith("# osu"):
                test = _test_for(path, lineno, line)
            elif test is not None and (sync := _SYNC.match(text)):
                test.sync = SYNCS.get(sync["sync"])
                if test.sync is None:
                    raise out.fail(
                        lineno,
                        f"synchronisation {sync['sync']} has no commscope counterpart; run OSU"
                        " with -s flush, -s fence or -s pscw",
                    )
            elif test is not None and body.lower().startswith("size"):
                test.header_seen = True
            elif test is not None:
                try:
                    test.window = common.window_size(body) or test.window
                except strict.NumberError as err:
                    raise out.fail(lineno, f"window size {err}") from None
            continue
        if test is None or not test.header_seen:
            raise malformed(path, lineno, line, "data before a title and column header", _EXPECTED)
        if test.sync is None:
            raise out.fail(lineno, "the test has no '# Synchronization:' line")
        _row(out, test, path, lineno, line, pair)
    records = out.records()
    if not records:
        raise malformed(path, len(lines), lines[-1] if lines else "", "no data rows", _EXPECTED)
    return Imported("osu", path, records, 2)


def _row(out: Collector, test: _Test, path: str, lineno: int, line: str, pair: str) -> None:
    tokens = line.split()
    size = integer(tokens[0])
    value = number(tokens[1]) if len(tokens) > 1 else None
    if size is None or value is None or value < 0:
        raise malformed(path, lineno, line, "not a size and a non-negative number", _EXPECTED)
    op = f"{test.op}_{test.mode}_{test.sync}"
    if test.mode == "lat":
        out.point(
            lineno,
            op=op,
            pair=pair,
            nbytes=size,
            bytes_per_sample=size,
            sample_s=value / 1e6,
            window=1,
            what=f"a latency of {value:g} us",
        )
        return
    if value <= 0 or size == 0:
        raise malformed(
            path, lineno, line, "a bandwidth row needs a size and a rate above 0", _EXPECTED
        )
    moved = test.window * size
    out.point(
        lineno,
        op=op,
        pair=pair,
        nbytes=size,
        bytes_per_sample=moved,
        sample_s=moved / (value * 1e6),
        window=test.window,
        what=f"a rate of {value:g} MB/s",
    )
