"""Write a file the user named, safely: whole or not at all, and only where a file belongs.

Every output path a user gives (``report -o``, ``compare -o``, ``run --report``,
``predict --write-hostfile``, ...) goes through :func:`write_text`:

* a path that exists and is not a regular file (a directory, a device node such as
  ``/dev/null``, a FIFO, a socket) is refused, never replaced;
* a commscope store, and its ``-wal``, ``-shm`` or ``-journal`` file, is refused: ``-o``
  naming the store would replace every run it holds with a report;
* a missing parent folder is an error, never created behind the user's back;
* the text goes to a temporary file in the target's folder that then replaces the target in
  one ``os.replace``, so a reader sees the old file or the new one, never half of one; the
  temporary file is removed when anything fails, including an interrupt.

A symbolic link is followed: the file it points to is replaced and the link is kept.
Only the standard library's ``os`` is used, so importing this module costs nothing at start.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Sequence
from pathlib import Path

from commscope.errors import UsageError

_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISSOCK, "a socket"),
)
# How a commscope store starts (data/store_file.py writes and reads it): SQLite's header,
# with commscope's application_id ("cmsc") at offset 68.
SQLITE_MAGIC = b"SQLite format 3\x00"
STORE_APPLICATION_ID = 0x636D7363
# Files SQLite keeps next to a store: writing one would damage the store as surely.
_STORE_SIDE_FILES = ("-wal", "-shm", "-journal")


def _is_store(path: Path) -> bool:
    """True when ``path`` is a regular file that starts as a commscope store does."""
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):  # never open a FIFO: it would block
            return False
        with open(path, "rb") as f:
            head = f.read(72)
    except OSError:  # absent, or not readable: nothing to protect that we can tell
        return False
    return head[:16] == SQLITE_MAGIC and head[68:72] == STORE_APPLICATION_ID.to_bytes(4, "big")


def _store_named(target: Path) -> str | None:
    """What store ``target`` is ("the commscope store X", "the -wal file of ..."), or None."""
    if _is_store(target):
        return f"the commscope store {target}"
    for suffix in _STORE_SIDE_FILES:
        main = target.with_name(target.name.removesuffix(suffix))
        if target.name.endswith(suffix) and _is_store(main):
            return f"the {suffix} file of the commscope store {main}"
    return None


def _name(flag: str | None, path: str | os.PathLike[str]) -> str:
    return f"{flag} {os.fspath(path)}" if flag else os.fspath(path)


def check_target(path: str | os.PathLike[str], flag: str | None = None) -> Path:
    """Check that ``path`` can take a new regular file; return the path to write (links followed).

    Call it before long work (a measurement, a report) so a bad path fails at once.

    Args:
        path: the output path as the user gave it.
        flag: the option that named it (e.g. ``"-o"``), used in messages.

    Raises:
        UsageError: the path is an existing non-regular file, a commscope store or a file
            SQLite keeps beside one, or its folder is missing, is not a folder, or cannot
            be written.
    """
    where = _name(flag, path)
    text = os.fspath(path)
    if not text:
        raise UsageError(
            f"{flag or 'output path'}: empty file name; give a file name such as out.html"
        )
    if "\0" in text:  # the OS takes no NUL in a path: os.stat would raise ValueError
        raise UsageError(f"{flag or 'output path'} {text!r} holds a NUL byte; remove it")
    target = Path(os.path.realpath(os.path.expanduser(text)))
    try:
        mode = os.stat(target).st_mode
    except (FileNotFoundError, NotADirectoryError):  # the folder checks below say which
        mode = None
    except OSError as err:
        raise UsageError(
            f"{where}: cannot be examined ({err.strerror}); choose another path"
        ) from None
    if mode is not None and not stat.S_ISREG(mode):
        kind = next((name for test, name in _KINDS if test(mode)), "not a regular file")
        fix = (
            f"give a file name inside it, e.g. {os.path.join(text, 'out.html')}"
            if stat.S_ISDIR(mode)
            else "give the path of a regular file instead"
        )
        raise UsageError(f"{where} is {kind}, not a regular file; {fix}")
    store = _store_named(target)
    if store:
        raise UsageError(
            f"{where} is {store}: writing there would destroy its runs; give another file name"
        )
    folder = target.parent
    if not folder.exists():
        raise UsageError(
            f"{where}: folder {folder} does not exist; create it first"
            f" (mkdir -p {folder}) or choose another path"
        )
    if not folder.is_dir():
        raise UsageError(f"{where}: {folder} is not a folder; choose another path")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise UsageError(
            f"{where}: folder {folder} is not writable; choose a folder you can write to"
        )
    return target


def _temporary(target: Path) -> tuple[int, Path]:
    """Create a new private file next to ``target``; its descriptor and path."""
    for _ in range(100):
        tmp = target.with_name(f".{target.name}.{os.getpid()}.{os.urandom(4).hex()}.tmp")
        try:
            # 0o666 less the umask, as for any file a program creates.
            return os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666), tmp
        except FileExistsError:
            continue
    raise FileExistsError(f"no free temporary name next to {target}")


def write_text(path: str | os.PathLike[str], text: str, flag: str | None = None) -> Path:
    """Write ``text`` (UTF-8) to ``path`` through a temporary file; return the path written.

    An existing regular file keeps its permission bits.

    Args:
        path: the output path as the user gave it.
        text: the whole content.
        flag: the option that named the path (e.g. ``"-o"``), used in messages.

    Raises:
        UsageError: see :func:`check_target`, or the write itself failed (e.g. disk full).
    """
    return write_texts([(path, text, flag)])[0]


def write_texts(outputs: Sequence[tuple[str | os.PathLike[str], str, str | None]]) -> list[Path]:
    """Write several files, each as :func:`write_text` does, all or none of them.

    ``outputs``: (path, text, flag) for each file. Every target is checked, and every text
    written to its temporary file, before any target is replaced: a command that writes two
    files (``topology -o FILE --model FILE``) never leaves the first written when the
    second cannot be. Only the renames come after that, one system call each.

    Raises:
        UsageError: a target is refused (:func:`check_target`), two name the same file, or
            a write failed; no target has been changed.
    """
    targets = check_targets([(path, flag) for path, _, flag in outputs])
    names = [_name(flag, path) for path, _, flag in outputs]
    temporaries: list[Path] = []
    try:
        for (_, text, _), target, where in zip(outputs, targets, names, strict=True):
            temporaries.append(_written(target, text, where))
        for (path, _, flag), tmp, target in zip(outputs, temporaries, targets, strict=True):
            # Between the check and here the path may have become a directory or a device:
            # replacing a device node needs the same check again, right before the rename.
            check_target(path, flag)
            try:
                os.replace(tmp, target)
            except OSError as err:
                raise UsageError(
                    f"{_name(flag, path)}: cannot write ({err.strerror or err}); choose another"
                    " path"
                ) from None
    finally:
        for tmp in temporaries:
            tmp.unlink(missing_ok=True)  # renamed ones are gone already
    return targets


def check_targets(outputs: Sequence[tuple[str | os.PathLike[str], str | None]]) -> list[Path]:
    """:func:`check_target` for each (path, flag), and no two of them the same file.

    Raises:
        UsageError: a target is refused, or two name the same file (links followed).
    """
    targets = [check_target(path, flag) for path, flag in outputs]
    for i, target in enumerate(targets):
        if target in targets[:i]:
            first = targets.index(target)
            raise UsageError(
                f"{_name(outputs[i][1], outputs[i][0])} and"
                f" {_name(outputs[first][1], outputs[first][0])} name the same file; give each"
                " output a file of its own"
            )
    return targets


def _written(target: Path, text: str, where: str) -> Path:
    """A temporary file next to ``target`` holding ``text``, synced, with target's mode."""
    tmp: Path | None = None
    try:
        fd, tmp = _temporary(target)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        try:
            os.chmod(tmp, stat.S_IMODE(os.stat(target).st_mode))
        except FileNotFoundError:
            pass
        return tmp
    except BaseException as err:
        if tmp is not None:
            tmp.unlink(missing_ok=True)
        if isinstance(err, OSError):
            raise UsageError(
                f"{where}: cannot write ({err.strerror or err}); choose another path"
            ) from None
        raise
