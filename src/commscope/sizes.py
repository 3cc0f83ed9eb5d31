"""Message sizes: parsing "4MiB"-style text and the NetPIPE size schedule."""

from __future__ import annotations

import re

from commscope.errors import UsageError

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
_FORMS = "a byte count such as 0, 4096, 64K, 4MiB, 1G (binary) or 10KB, 1MB, 1GB (decimal)"


def parse_size(text: str) -> int:
    """Parse a message size in bytes.

    Plain integers are bytes. K/KiB, M/MiB, G/GiB are binary (1K = 1024); KB, MB, GB are
    decimal (1KB = 1000). Suffixes are case-insensitive.

    Args:
        text: the size as typed by the user.

    Returns:
        The size in bytes.

    Raises:
        UsageError: the text is not a non-negative size in one of the accepted forms.
    """
    match = _SIZE.fullmatch(text.strip().lower())
    if match is None or match.group(2) not in _UNITS:
        raise UsageError(f"size {text!r} is not understood; give {_FORMS}")
    return int(match.group(1)) * _UNITS[match.group(2)]


def parse_size_list(text: str) -> list[int]:
    """Parse comma-separated sizes, e.g. "0,8,1K,1MiB".

    Args:
        text: the list as typed by the user.

    Returns:
        The sizes in bytes, sorted, without duplicates.

    Raises:
        UsageError: the list is empty or one item is not a size.
    """
    items = [item.strip() for item in text.split(",")]
    if not any(items):
        raise UsageError(f"size list {text!r} is empty; give sizes like 0,8,1K,1MiB")
    if "" in items:
        raise UsageError(f"size list {text!r} has an empty item; remove the extra comma")
    return sorted({parse_size(item) for item in items})


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
