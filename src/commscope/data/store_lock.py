"""The lock of a store that other machines share: a file created exclusively.

On a shared filesystem SQLite's POSIX locks may not reach the other machines (NFS mounted
``nolock`` or without lockd, Lustre mounted ``localflock``, BeeGFS without global locks,
sshfs), so two machines could write the store at once and corrupt it, or one could read
half of another's transaction. Every write transaction and every read there first creates
``STORE.lock`` with ``O_CREAT | O_EXCL``, which the server does atomically (NFS from
version 3 on), and removes it afterwards: they take turns whatever the POSIX locks do.

SQLite's ``unix-dotfile`` VFS takes turns in the same way, with a directory, but inside
SQLite, out of reach: its lock is no POSIX lock, and taking a POSIX lock is where an NFS
client drops its cached pages of the file (the Linux client's ``do_setlk``), so a
connection kept open across another machine's write could build on stale pages. Here
SQLite's own POSIX locks stay, and with them that refresh.

The file holds the holder's host, process id and start time, for the error a waiter gets
when the bounded wait runs out. A process holds the lock once however many of its
connections ask (they take turns among themselves through SQLite), so a read inside a
write transaction does not wait for itself.
"""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

from commscope.errors import StoreError

WAIT_S = 60.0  # how long a reader or writer waits for the lock before giving up
_FIRST_POLL_S = 0.005
_LAST_POLL_S = 0.2
_HELD: dict[Path, int] = {}  # lock files this process holds, and how many blocks hold each


def lock_path(store: Path) -> Path:
    """The lock file of ``store``: beside it, its name plus ``.lock``.

    Beside the file a symbolic link leads to: two nodes may reach one store through
    different links, and must still meet at one lock.
    """
    real = Path(os.path.realpath(store))
    return real.with_name(real.name + ".lock")


@contextmanager
def held(store: Path, optional: bool = False) -> Iterator[None]:
    """Hold the lock of ``store`` while the block runs, waiting up to ``WAIT_S`` for it.

    ``optional``: when the lock file cannot be created (a folder this user may not write,
    a read-only mount), run the block without it; for readers, who change nothing.

    Raises:
        StoreError: another process held it for all of ``WAIT_S`` (the error names the
            file and its holder), or it cannot be created and is not ``optional``.
    """
    lock = lock_path(store)
    wait_s = WAIT_S
    if lock in _HELD:
        _HELD[lock] += 1
        try:
            yield
        finally:
            _HELD[lock] -= 1
        return
    if not _take(store, lock, optional, wait_s):
        yield
        return
    _HELD[lock] = 1
    try:
        _read_afresh(store)
        yield
    finally:
        del _HELD[lock]
        with suppress(FileNotFoundError):
            lock.unlink()


def _take(store: Path, lock: Path, optional: bool, wait_s: float) -> bool:
    """Create ``lock``; False when it cannot be created and it is ``optional``."""
    deadline = time.monotonic() + wait_s
    poll = _FIRST_POLL_S
    refused = 0  # failures with no lock file there: the folder refuses it
    while True:
        try:
            fd = os.open(lock, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            break
        except OSError as err:
            # sshfs reports a lock file that exists as EPERM, not EEXIST: look for it.
            if not isinstance(err, FileExistsError) and not os.path.lexists(lock):
                refused += 1
                if refused < 3:  # it may have gone between the two calls
                    continue
                if optional:
                    return False
                raise StoreError(
                    f"{store}: its lock {lock} cannot be created ({err.strerror}); the"
                    " store's folder must be writable"
                ) from None
            if time.monotonic() >= deadline:
                raise _timed_out(store, lock, wait_s) from None
            time.sleep(poll)
            poll = min(2 * poll, _LAST_POLL_S)
    try:
        os.write(fd, f"{socket.gethostname()} {os.getpid()} {time.time():.0f}\n".encode())
    except BaseException:  # an interrupt or a full disk: leave no lock behind
        os.close(fd)
        lock.unlink()
        raise
    os.close(fd)
    return True


def _read_afresh(store: Path) -> None:
    """Drop this machine's cached pages of ``store``: another machine may have written it.

    Opening the file is where an NFS client checks it for changes (close-to-open) and where
    a FUSE mount without ``kernel_cache`` forgets its pages; ``POSIX_FADV_DONTNEED`` drops
    the rest. SQLite's own cache follows: it compares the header's change counter at each
    read. Closing this descriptor gives up every POSIX lock this process holds on the file,
    which is why it happens here, where it holds none: every read and write takes this lock
    first, and the first to take it in a process has none open.
    """
    try:
        fd = os.open(store, os.O_RDONLY)
    except OSError:
        return  # not there yet: nothing is cached
    try:
        if hasattr(os, "posix_fadvise"):
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def _timed_out(store: Path, lock: Path, wait_s: float) -> StoreError:
    """The error when ``lock`` stayed held for ``wait_s``: who holds it, and the fix."""
    try:
        host, pid, since = lock.read_text(encoding="utf-8", errors="replace").split()[:3]
        age = f"{time.time() - float(since):.0f} s"
    except (OSError, ValueError):  # gone meanwhile, or not yet written
        host = pid = age = ""
    head = f"{store}: another commscope kept its lock {lock} for {wait_s:g} s"
    if not pid:
        return StoreError(f"{head}; retry, or remove {lock} if no commscope uses this store")
    if host == socket.gethostname() and not _alive(pid):
        return StoreError(
            f"{head} (held by process {pid} on this host, which has ended without removing"
            f" it); remove {lock}"
        )
    return StoreError(
        f"{head} (held by process {pid} on {host}, for {age}); retry, or remove {lock} if"
        f" that process is gone (ps -p {pid} on {host})"
    )


def _alive(pid: str) -> bool:
    try:
        os.kill(int(pid), 0)
    except PermissionError:
        return True  # another user's
    except (OSError, ValueError):
        return False
    return True
