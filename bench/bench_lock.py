"""The machine-wide lock benches hold around each step that runs MPI or SimGrid."""

from __future__ import annotations

import contextlib
import fcntl
from collections.abc import Iterator


@contextlib.contextmanager
def locked(path: str | None) -> Iterator[None]:
    """Hold ``path`` as flock(1) would, for one step (the machine is shared); nothing without
    a path."""
    if not path:
        yield
        return
    with open(path, "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)
