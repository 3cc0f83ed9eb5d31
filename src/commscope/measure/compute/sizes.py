"""Which N a node sweep takes, and how much memory its points may use.

N grows geometrically from 100 (100 x 2^(k/2), two significant digits) up to the largest N
whose two N x N matrices fit in the memory budget: a share of MemAvailable or a size.
"""

from __future__ import annotations

import math

from commscope import strict
from commscope.errors import ComputeError, UsageError
from commscope.units import parse_size

N_MIN = 100
DEFAULT_MEMORY = "50%"
MAX_MEMORY_BYTES = 1 << 50  # --max-memory as a size: 1 PiB at most


def geometric_sizes(n_cap: int, n_min: int = N_MIN) -> list[int]:
    """N = n_min x 2^(k/2) to two significant digits, up to ``n_cap`` (added when 10 % beyond)."""
    sizes: list[int] = []
    k = 0
    while True:
        raw = n_min * 2 ** (k / 2)
        digits = int(math.floor(math.log10(raw))) - 1
        n = int(round(raw, -digits))
        if n > n_cap:
            break
        sizes.append(n)
        k += 1
    if n_cap >= n_min and (not sizes or n_cap > 1.1 * sizes[-1]):
        sizes.append(n_cap)
    return sizes


def available_memory() -> int:
    """MemAvailable of /proc/meminfo, in bytes."""
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    raise ComputeError("/proc/meminfo has no MemAvailable; give --max-memory as a size")


def memory_budget(text: str, available: int) -> int:
    """Bytes the sweep may use: "50%" of MemAvailable, or a size such as "8GiB"."""
    spec = text.strip()
    if spec.endswith("%"):
        try:
            share = strict.real(spec[:-1], 0, 100, above=True) / 100
        except strict.NumberError:
            raise UsageError(
                f"--max-memory {strict.shown(text)}: give a share such as 50% or a size like 8GiB"
            ) from None
        return int(available * share)
    return parse_size(spec, "--max-memory", most=MAX_MEMORY_BYTES)


def memory_cap(budget: int) -> int:
    """The largest N whose point fits in ``budget`` bytes (two N x N matrices)."""
    from commscope.measure.compute import linpack

    return math.isqrt(budget // linpack.matrix_bytes(1))
