"""NetPIPE 3.x output files (np.out): one row per size, "bytes Mbps seconds".

NetPIPE's throughput is in Mbps of 2^20 bits per second and its time is the one-way time
(half the round trip) in seconds, printed with 8 decimals, which leaves sub-microsecond times
with two significant digits. The sample is therefore the time recomputed from the throughput
(printed with six decimals) whenever both are above zero; the two must agree to within the
time column's rounding, which also catches files that are not NetPIPE output. Extra numeric
columns (some builds print more) are ignored; a size seen twice gets two samples.
"""

from __future__ import annotations

from commscope.importers.common import Collector, Imported, integer, malformed, number

MBPS = float(1 << 20)  # bits per second in NetPIPE's Mbps
_ROUNDING_S = 5e-9  # half the last printed digit of the time column
_AGREEMENT = 0.01  # relative slack on top of the rounding
_EXPECTED = (
    "NetPIPE output: rows of 'bytes Mbps seconds', Mbps being 2^20 bit/s and seconds"
    " the one-way time"
)


def parse(path: str, lines: list[str], pair: str = "unknown") -> Imported:
    """Read a NetPIPE output file into ping-pong records.

    Args:
        path: the file's name, used in errors.
        lines: its lines.
        pair: pair label given to the records.

    Raises:
        InputError: a line is malformed or a number in it breaks its bounds (names the file
            and line).
    """
    out = Collector(path, lines, _EXPECTED)
    for lineno, line in enumerate(lines, start=1):
        text = line.strip()
        if not text or text.startswith("#"):
            continue
        tokens = text.split()
        size = integer(tokens[0])
        values = [number(t) for t in tokens[1:]]
        if size is None or len(values) < 2 or any(v is None or v < 0 for v in values):
            raise malformed(
                path,
                lineno,
                line,
                "not a size followed by two or more non-negative numbers",
                _EXPECTED,
            )
        mbps, seconds = float(values[0] or 0.0), float(values[1] or 0.0)
        sample = seconds
        if size > 0 and mbps > 0:
            sample = size * 8 / (mbps * MBPS)
            if abs(sample - seconds) > _ROUNDING_S + _AGREEMENT * seconds:
                raise malformed(
                    path,
                    lineno,
                    line,
                    f"{mbps:g} Mbps and {seconds:g} s disagree for {size} bytes",
                    _EXPECTED,
                )
        out.point(
            lineno,
            op="pingpong",
            pair=pair,
            nbytes=size,
            bytes_per_sample=size,
            sample_s=sample,
            what=f"{mbps:g} Mbps and {seconds:g} s",
        )
    records = out.records()
    if not records:
        raise malformed(path, len(lines), lines[-1] if lines else "", "no data rows", _EXPECTED)
    return Imported("netpipe", path, records, 2)
