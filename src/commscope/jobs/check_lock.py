"""One measuring check of a baseline at a time: a lock file beside the store.

The file (``STORE.check-NAME.lock``) is created with O_CREAT|O_EXCL, which succeeds for one
process only, on a local filesystem and on NFS from version 3 on, and holds JSON: the pid,
the host, when it was taken and when its holder's check must have ended (its bound: the
measurement timeouts and the allocation's wait). A second check of the same baseline finds
it and is refused, naming the holder.

A lock is stale, and taken over, when its pid is gone on this host, or when its bound has
passed (a holder on another host, whose pid cannot be looked at, or one that hung). Taking
over renames the stale file away first and reads what was renamed: when two checks found
the same stale lock, only one renames that file; a fresh lock renamed by mistake is put back
and the check refused.
"""

from __future__ import annotations

import json
import os
import re
import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from commscope.errors import CommscopeError, StoreError


def path_for(store: str, baseline: str) -> Path:
    """The lock file of ``baseline``'s checks: beside the store, named after both."""
    name = re.sub(r"[^A-Za-z0-9._-]", "_", baseline)[:64]  # baseline names are so already
    return Path(f"{store}.check-{name}.lock")


@contextmanager
def held(store: str, baseline: str, bound_s: float) -> Iterator[Path]:
    """Hold the lock of ``baseline``'s checks while the block runs; ``bound_s``: its most.

    Raises:
        CommscopeError: another check of the baseline holds the lock (pid, host, since when).
        StoreError: the lock file cannot be created beside the store.
    """
    path = path_for(store, baseline)
    now = time.time()
    mine = {
        "pid": os.getpid(),
        "host": socket.gethostname(),
        "since_unix": now,
        "until_unix": now + bound_s,
    }
    _take(path, baseline, mine)
    try:
        yield path
    finally:
        if _read(path) == mine:  # never remove a lock another check took over
            path.unlink(missing_ok=True)


WRITING_S = 5.0  # a lock file younger than this and not yet readable is being written


def _take(path: Path, baseline: str, mine: dict[str, Any]) -> None:
    for _ in range(20):
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except OSError as err:
            # sshfs answers EPERM, not EEXIST, for a file that exists: look for it.
            if not isinstance(err, FileExistsError) and not os.path.lexists(path):
                raise StoreError(
                    f"check --baseline {baseline}: cannot create its lock {path}"
                    f" ({err.strerror}); the store's folder must be writable for a check"
                    " that measures"
                ) from None
            holder = _read(path)
            if holder is None and _age(path) < WRITING_S:
                time.sleep(0.25)  # its holder is writing it
                continue
            if holder is not None and not stale(holder):
                raise CommscopeError(running(baseline, holder)) from None
            _take_over(path, baseline, holder)
            continue
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            json.dump(mine, out)
        return
    raise CommscopeError(f"check of baseline {baseline}: its lock {path} keeps changing; try again")


def _take_over(path: Path, baseline: str, seen: dict[str, Any] | None) -> None:
    """Remove the stale lock ``seen``; a lock that is no longer it is put back and refuses."""
    aside = path.with_name(f"{path.name}.{os.getpid()}.stale")
    try:
        os.rename(path, aside)
    except FileNotFoundError:
        return  # another check removed it first
    found = _read(aside)
    if found == seen:
        aside.unlink(missing_ok=True)
        return
    try:
        os.link(aside, path)  # a fresh lock: back where it was, unless a newer one is there
    except FileExistsError:
        pass
    aside.unlink(missing_ok=True)
    if found is not None:
        raise CommscopeError(running(baseline, found))


def _age(path: Path) -> float:
    try:
        return time.time() - path.stat().st_mtime
    except OSError:
        return 0.0


def _read(path: Path) -> dict[str, Any] | None:
    """The lock's content; None when it is gone, being written or not a lock's."""
    try:
        found = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    keys = ("pid", "host", "since_unix", "until_unix")
    return found if isinstance(found, dict) and all(k in found for k in keys) else None


def stale(holder: dict[str, Any], now: float | None = None) -> bool:
    """Whether a lock's holder can no longer be checking: its bound passed, or its pid is gone."""
    if (time.time() if now is None else now) > float(holder["until_unix"]):
        return True
    if holder["host"] != socket.gethostname():
        return False
    try:
        os.kill(int(holder["pid"]), 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False  # alive, another user's
    return False


def running(baseline: str, holder: dict[str, Any]) -> str:
    """The refusal: which check runs, where, since when."""
    since = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(float(holder["since_unix"])))
    return (
        f"check of baseline {baseline} already running (pid {holder['pid']} on"
        f" {holder['host']} since {since}); wait for it to end"
    )
