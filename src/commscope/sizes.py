"""Message sizes: parsing "4MiB"-style text and the NetPIPE size schedule."""

from __future__ import annotations

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
        raise InputError(f"{where}size {shown(text)} is {value} bytes, above the limit of"
                         f" {most} bytes; give a smaller size")
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
        raise InputError(f"{where}size list {shown(text)} has an empty item; remove the extra"
                         " comma")
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
