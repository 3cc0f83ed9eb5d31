"""Units: sizes, times and rates read from users and written for them.

Parsing is strict (ASCII digits, stated bounds; see ``commscope.strict``); writing gives one
figure the same text everywhere. Rates print in decimal units (1 MB/s = 10^6 bytes/s), sizes in
binary ones (1 KiB = 1024 bytes), as the tables do. tc link rates are bits per second.
"""

from __future__ import annotations

import math
import re

from commscope.errors import InputError, UsageError
from commscope.limits import MAX_MESSAGE_BYTES, MAX_NUMBER_CHARS
from commscope.strict import shown

_UNITS = {
    "": 1,
    "b": 1,
    "k": 1 << 10,
    "kib": 1 << 10,
    "m": 1 << 20,
    "mib": 1 << 20,
    "g": 1 << 30,
    "gib": 1 << 30,
    "kb": 10**3,
    "mb": 10**6,
    "gb": 10**9,
}
_KIB = 1024
_TC_RATE = re.compile(r"([0-9]{1,15}(?:\.[0-9]{1,15})?)([kmgt]i?)?(bit|bps)", re.IGNORECASE)
_SI = {"": 1, "k": 10**3, "m": 10**6, "g": 10**9, "t": 10**12}
_SIZE = re.compile(r"([0-9]+)\s*([a-z]*)")
MAX_SIZES = 10_000  # sizes one list may name
_FORMS = "a byte count such as 0, 4096, 64K, 4MiB, 1G (binary) or 10KB, 1MB, 1GB (decimal)"


def parse_size(text: str, flag: str | None = None, most: int = MAX_MESSAGE_BYTES) -> int:
    """Parse a message size in bytes.

    Plain integers are bytes. K/KiB, M/MiB, G/GiB are binary (1K = 1024); KB, MB, GB are
    decimal (1KB = 1000). Suffixes are case-insensitive; digits are ASCII only.

    Args:
        text: the size as typed by the user.
        flag: the option it came from, named in errors.
        most: the largest size accepted; by default the largest message the engine sends
            (an MPI int count of bytes, 2 GiB - 1).

    Returns:
        The size in bytes.

    Raises:
        InputError: the text is not a size in one of the accepted forms, or above ``most``.
    """
    where = f"{flag}: " if flag else ""
    body = text.strip().lower()
    match = _SIZE.fullmatch(body) if len(body) <= MAX_NUMBER_CHARS else None
    if match is None or match.group(2) not in _UNITS:
        raise InputError(f"{where}size {shown(text)} is not understood; give {_FORMS}")
    value = int(match.group(1)) * _UNITS[match.group(2)]
    if value > most:
        raise InputError(
            f"{where}size {shown(text)} is {value} bytes, above the limit of"
            f" {most} bytes; give a smaller size"
        )
    return value


def parse_size_list(text: str, flag: str | None = None) -> list[int]:
    """Parse comma-separated sizes, e.g. "0,8,1K,1MiB".

    Args:
        text: the list as typed by the user.
        flag: the option it came from, named in errors.

    Returns:
        The sizes in bytes, sorted, without duplicates.

    Raises:
        InputError: the list is empty or one item is not a size.
    """
    where = f"{flag}: " if flag else ""
    items = [item.strip() for item in text.split(",")]
    if not any(items):
        raise InputError(f"{where}size list {shown(text)} is empty; give sizes like 0,8,1K,1MiB")
    if "" in items:
        raise InputError(
            f"{where}size list {shown(text)} has an empty item; remove the extra comma"
        )
    if len(items) > MAX_SIZES:
        raise InputError(f"{where}size list has {len(items)} sizes; give at most {MAX_SIZES}")
    return sorted({parse_size(item, flag) for item in items})


def netpipe_bases(max_bytes: int) -> list[int]:
    """Return NetPIPE's base sizes up to ``max_bytes``: 1, 2, 3, 4, 6, 8, 12, 16, 24, ...

    After 2, steps alternate x4/3 and x3/2, so the bases are every power of two and 1.5 times
    every power of two.
    """
    bases = [1] if max_bytes >= 1 else []
    power = 2
    while power <= max_bytes:
        bases.append(power)
        if power * 3 // 2 <= max_bytes:
            bases.append(power * 3 // 2)
        power *= 2
    return bases


def netpipe_schedule(max_bytes: int, perturbation: int = 3, include_zero: bool = True) -> list[int]:
    """Return the NetPIPE message-size schedule up to ``max_bytes``.

    Each base size b (see ``netpipe_bases``) is measured at b - perturbation, b and
    b + perturbation, which exposes protocol thresholds that sit just off a round size.

    Args:
        max_bytes: largest size; always part of the schedule.
        perturbation: offset around each base; 0 gives the bases only.
        include_zero: also measure empty messages.

    Returns:
        Sizes in bytes, sorted and unique, none below 0 or above ``max_bytes``.

    Raises:
        UsageError: ``max_bytes`` or ``perturbation`` is negative.
    """
    if max_bytes < 0:
        raise UsageError(f"maximum size {max_bytes} is negative; give a size of 0 or more")
    if perturbation < 0:
        raise UsageError(f"perturbation {perturbation} is negative; give 0 or more")
    sizes = {max_bytes}
    if include_zero:
        sizes.add(0)
    for base in netpipe_bases(max_bytes):
        for size in (base - perturbation, base, base + perturbation):
            if 1 <= size <= max_bytes:
                sizes.add(size)
    return sorted(sizes)


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


_TIME_UNITS = (("s", 1.0), ("ms", 1e-3), ("us", 1e-6), ("ns", 1e-9))


def time_unit(seconds: float) -> tuple[str, float]:
    """The unit a duration reads best in, and its scale: ("ns", 1e-9) ... ("s", 1.0).

    The largest unit in which it shows as 1 or more at three significant figures, so that
    999.96 us reads "1.00 ms", not "1000 us".
    """
    for unit, scale in _TIME_UNITS:
        if abs(float(_sig3(seconds / scale))) >= 1:
            return unit, scale
    return _TIME_UNITS[-1]


def time_text(seconds: float) -> str:
    """A duration in its unit, three significant figures: "151 ns", "17.0 us", "2.50 ms".

    Zero reads "0 s". Every duration shown to users (terminal lines, warnings, the report)
    goes through here.
    """
    if seconds == 0:
        return "0 s"
    if not math.isfinite(seconds):
        return f"{seconds} s"
    unit, scale = time_unit(seconds)
    return f"{_sig3(seconds / scale)} {unit}"


def time_span_text(low_s: float, high_s: float) -> str:
    """A range of durations in one unit, the larger's: "150-900 ns", "1.10-2.40 ms"."""
    unit, scale = time_unit(max(abs(low_s), abs(high_s)))
    return f"{_sig3(low_s / scale)}-{_sig3(high_s / scale)} {unit}"


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
    rounded = round(value, digits)  # 0.99996 rounds to 1.00: two decimals, not three
    if rounded != 0:
        digits = max(0, 2 - int(math.floor(math.log10(abs(rounded)))))
    return f"{rounded:.{digits}f}"


def parse_tc_rate(rate: str) -> int:
    """Return a tc rate (``100mbit``, ``1gbit``, ``1.5gbit``, ``125mbps``) in bits per second.

    Units follow tc: ``bit``/``bps`` (bytes per second) with an optional SI prefix
    (k, m, g, t) or IEC prefix (ki, mi, gi, ti).

    Raises:
        InputError: not tc's syntax.
    """
    match = _TC_RATE.fullmatch(rate.strip())
    if not match:
        raise InputError(f"bad rate {shown(rate)}: use tc's syntax, e.g. 100mbit, 1gbit, 10gbit")
    number, prefix, unit = match.group(1), (match.group(2) or "").lower(), match.group(3).lower()
    scale = 1024 ** (" kmgt".index(prefix[0])) if prefix.endswith("i") else _SI[prefix]
    return int(float(number) * scale * (8 if unit == "bps" else 1))


def sockbuf_text(nbytes: int) -> str:
    """How a socket buffer size reads in labels: "default", "64 KiB"."""
    return "default" if nbytes == 0 else size_text(nbytes)
