"""Which engine rank ended first: watched from this host, so a launcher's race cannot hide it.

When a rank dies, the launcher kills the others; hydra then names whichever bad exit it
meets first in rank order, which under load can be a rank it killed itself. Watching every
local rank's pidfd from the moment the header arrives tells which process ended first.
Only processes on this host whose command line is the engine are watched (a pid from
another node means nothing here).
"""

from __future__ import annotations

import os
import select
import threading
from pathlib import Path


def _is_engine(pid: int, engine_name: str) -> bool:
    try:
        argv0 = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0", 1)[0]
    except OSError:
        return False
    return os.path.basename(argv0.decode(errors="replace")) == engine_name


class ExitWatch:
    """Watch rank processes; :meth:`first` gives the ranks found ended at the first exit."""

    def __init__(self, ranks: dict[int, int], engine_name: str) -> None:
        """Watch ``ranks`` ({pid: rank}) that are engine processes on this host."""
        self._fds: dict[int, int] = {}  # pidfd -> rank
        for pid, rank in ranks.items():
            if not _is_engine(pid, engine_name):
                continue
            try:
                self._fds[os.pidfd_open(pid)] = rank
            except OSError:
                continue
        self._first: tuple[int, ...] = ()
        self._wake_r, self._wake_w = os.pipe()
        self._thread = threading.Thread(target=self._wait, daemon=True)
        if self._fds:
            self._thread.start()

    def _wait(self) -> None:
        ready, _, _ = select.select([*self._fds, self._wake_r], [], [])
        self._first = tuple(sorted(self._fds[fd] for fd in ready if fd in self._fds))

    def first(self) -> tuple[int, ...]:
        """Ranks already ended when the first one was seen to end (empty: none ended)."""
        return self._first

    def stop(self) -> None:
        """Stop watching and release the descriptors."""
        os.write(self._wake_w, b"x")
        if self._thread.is_alive():
            self._thread.join(timeout=5)
        for fd in (*self._fds, self._wake_r, self._wake_w):
            os.close(fd)
        self._fds = {}
