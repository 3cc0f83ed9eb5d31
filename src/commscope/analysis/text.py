"""Numbers as short human text: sizes in B/KiB/MiB, times in us/ms/s, rates in MB/s or GB/s.

Findings and reports share these so that one figure reads the same everywhere. Rates use
decimal units (1 MB/s = 10^6 bytes/s), sizes binary ones (1 KiB = 1024 bytes), as the tables do.
"""

from __future__ import annotations

import math

_KIB = 1024


def size_text(nbytes: float, exact: bool = False) -> str:
    """A message size: "3075 B", "4 KiB", "128.0 KiB", "1.5 MiB".

    Exact multiples of 1 KiB or 1 MiB print without decimals; other sizes of 1 KiB and more
    print with one decimal so that 131069 B does not pass for exactly 128 KiB, or, with
    ``exact``, in bytes.
    """
    whole = float(nbytes).is_integer()
    if nbytes < _KIB or (exact and not (whole and int(nbytes) % _KIB == 0)):
        return f"{nbytes:.0f} B"
    for unit, scale in (("GiB", _KIB**3), ("MiB", _KIB**2), ("KiB", _KIB)):
        if round(nbytes / scale, 1) >= 1:  # 1048573 B reads "1.0 MiB", not "1024.0 KiB"
            value = nbytes / scale
            if whole and int(nbytes) % scale == 0:
                return f"{int(value)} {unit}"
            return f"{value:.1f} {unit}"
    return f"{nbytes:.0f} B"  # unreachable: the loop ends with KiB


def time_text(seconds: float) -> str:
    """A duration with three significant figures: "0.151 us", "17.0 us", "2.50 ms"."""
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if seconds >= scale:
            return f"{_sig3(seconds / scale)} {unit}"
    return f"{_sig3(seconds / 1e-6)} us"


def rate_text(bytes_per_s: float) -> str:
    """A bandwidth in decimal units: "850 MB/s", "11.0 GB/s"."""
    if bytes_per_s >= 1e9:
        return f"{_sig3(bytes_per_s / 1e9)} GB/s"
    return f"{_sig3(bytes_per_s / 1e6)} MB/s"


def percent_text(fraction: float) -> str:
    """A fraction as a whole percentage: 0.352 -> "35 %"."""
    return f"{fraction * 100:.0f} %"


def _sig3(value: float) -> str:
    if value == 0 or not math.isfinite(value):
        return f"{value:g}"
    digits = max(0, 2 - int(math.floor(math.log10(abs(value)))))
    return f"{value:.{digits}f}"
