"""A bench's store, built once and reused: building 10^6 rows takes minutes, timing seconds."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path


def built(path: Path, build: Callable[[Path], None]) -> Path:
    """``path``, built by ``build`` unless a finished one is there.

    The store is built under another name and renamed when ``build`` returns, so a build cut
    short is never taken for a finished one.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists():
        return path
    partial = path.with_name(path.name + ".partial")
    for stale in (partial, Path(f"{partial}-wal"), Path(f"{partial}-shm")):
        stale.unlink(missing_ok=True)
    start = time.perf_counter()
    build(partial)
    os.replace(partial, path)
    print(f"built {path} in {time.perf_counter() - start:.0f} s")
    return path
