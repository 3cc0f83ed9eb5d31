"""Which filesystem holds a path, and whether other machines share it.

SQLite's WAL mode keeps its index in shared memory, which works between processes of one
machine only, and the POSIX locks SQLite relies on fail on some network filesystems (NFS
without lockd or mounted ``nolock``, Lustre without ``flock``, FUSE filesystems such as
sshfs, whose locks stay on one machine): sqlite.org, "How To Corrupt An SQLite Database
File", 2.1, and "Write-Ahead Logging", section "Disadvantages". :mod:`commscope.data.store_file`
asks here where a store lives before it opens it.

Python has no ``statfs`` (``os.statvfs`` gives no filesystem type), so the type comes from the
kernel's mounts table, ``/proc/self/mounts``: the entry whose mount point is the longest prefix
of the path, the last one when several are mounted on one point (the one on top). Where there
is no such table (not Linux), the type is unknown and the path is taken as local.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

MOUNTS = Path("/proc/self/mounts")
# Filesystems that other machines may write at the same time. FUSE mounts ("fuse.sshfs",
# "fuse.glusterfs", "fuse.s3fs"...) count too, all of them: this process cannot tell a local
# FUSE filesystem from a remote one, and none of them shares POSIX locks between machines.
# "fuseblk" (ntfs-3g, exFAT on a local disk) is a local block device.
SHARED_TYPES = frozenset(
    {
        *("nfs", "nfs4", "lustre", "gpfs", "beegfs", "cifs", "smb3", "smbfs", "ceph"),
        *("glusterfs", "afs", "9p", "virtiofs", "ocfs2", "gfs2", "pvfs2", "orangefs"),
        *("panfs", "wekafs", "davfs", "ncpfs", "vboxsf", "fuse"),
    }
)
_ESCAPE = re.compile(r"\\([0-7]{3})")  # the kernel writes space, tab, newline, \ as \ooo


def is_shared(fstype: str) -> bool:
    """Whether a filesystem of type ``fstype`` (as the mounts table names it) is shared."""
    return fstype in SHARED_TYPES or fstype.startswith("fuse.")


def mount_type(mounts: str, path: str) -> str:
    """The type of the filesystem holding ``path``, from the text of a mounts table.

    Args:
        mounts: lines in the format of ``/proc/self/mounts`` (device, mount point, type,
            options, two numbers), mount points with the kernel's octal escapes.
        path: an absolute path with no symbolic links (``os.path.realpath``).

    Returns:
        The type of the entry whose mount point is the longest prefix of ``path``, the last
        of several on one point; "" when no entry holds it.
    """
    best, found = -1, ""
    for line in mounts.splitlines():
        fields = line.split()
        if len(fields) < 3:
            continue
        point = _ESCAPE.sub(lambda m: chr(int(m.group(1), 8)), fields[1])
        if point != "/" and path != point and not path.startswith(point.rstrip("/") + "/"):
            continue
        if len(point) >= best:  # ">=": a later mount on one point covers the earlier
            best, found = len(point), fields[2]
    return found


def shared_type(path: Path) -> str:
    """The type of ``path``'s filesystem when other machines share it, else "".

    ``path`` need not exist: its nearest existing folder is looked up, with symbolic links
    resolved (a home folder linked to /gpfs/home is on GPFS). Resolving it first also makes an
    automounter mount it, so the table then lists the real filesystem.
    """
    where = path.absolute()
    while not where.exists() and where != where.parent:
        where = where.parent
    real = os.path.realpath(where)
    try:
        mounts = MOUNTS.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""  # no mounts table: not Linux, or /proc not mounted
    fstype = mount_type(mounts, real)
    return fstype if is_shared(fstype) else ""
