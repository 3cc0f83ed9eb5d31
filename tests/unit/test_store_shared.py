"""A store on a filesystem other machines share: found from the mounts table, kept off WAL,
read and written in turns through its lock file.

The filesystem type comes from the kernel's mounts table; these tests hand the detection real
lines of each type, and give the store a table in which its folder is an NFS mount (the
table's path, ``filesystem.MOUNTS``, is what they change). Two machines writing at once
through a real network filesystem: tests/cluster/test_store_sshfs.py.
"""

from __future__ import annotations

import contextlib
import io
import logging
import os
import re
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from commscope.cli import main
from commscope.data import filesystem, store_lock
from commscope.data.store import Store
from commscope.errors import StoreError
from tests import synthetic_runs as syn


def store_run(path: Path, label: str) -> int:
    """A small complete run: four collective points."""
    return syn.store_records(path, "coll", syn.colls()[:4], label, 4)


ROOT = Path(__file__).resolve().parents[2]
FIXTURES = Path(__file__).parent / "fixtures"

# Lines as /proc/self/mounts shows them, one per type (the sshfs line is this machine's own,
# from the mount tests/cluster/test_store_sshfs.py makes).
LINES = {
    "nfs4": "fs1:/export/home /home nfs4 rw,relatime,vers=4.2,rsize=1048576,wsize=1048576,"
    "namlen=255,hard,proto=tcp,timeo=600,retrans=2,sec=sys,clientaddr=10.1.0.17,"
    "local_lock=none,addr=10.1.0.2 0 0",
    "nfs": "nas01:/vol/projects /projects nfs rw,relatime,vers=3,rsize=65536,wsize=65536,"
    "namlen=255,hard,nolock,proto=tcp,timeo=600,retrans=2,sec=sys,mountaddr=10.1.0.3,"
    "mountvers=3,mountport=635,mountproto=udp,local_lock=all,addr=10.1.0.3 0 0",
    "lustre": "10.2.0.1@o2ib:10.2.0.2@o2ib:/scratch /lustre/scratch lustre "
    "rw,flock,lazystatfs,encrypt 0 0",
    "gpfs": "gpfs0 /gpfs/fs0 gpfs rw,relatime 0 0",
    "beegfs": "beegfs_nodev /mnt/beegfs beegfs rw,relatime,"
    "cfgFile=/etc/beegfs/beegfs-client.conf,_netdev 0 0",
    "cifs": "//winfs/home /mnt/winhome cifs rw,relatime,vers=3.1.1,cache=strict,username=alice,"
    "uid=1000,noforceuid,gid=1000,noforcegid,addr=10.1.0.9,file_mode=0755,dir_mode=0755,"
    "soft,nounix,serverino,mapposix,rsize=4194304,wsize=4194304,bsize=1048576,"
    "echo_interval=60,actimeo=1,closetimeo=1 0 0",
    "smb3": "//nas/share /mnt/share smb3 rw,relatime,vers=3.1.1,cache=strict,username=bob,"
    "uid=0,noforceuid,gid=0,noforcegid,addr=10.1.0.8,file_mode=0755,dir_mode=0755,soft,"
    "nounix,serverino,mapposix 0 0",
    "fuse.sshfs": "root@127.0.0.1:/tmp/ssdbg/shared /tmp/ssdbg/a fuse.sshfs "
    "rw,nosuid,nodev,relatime,user_id=0,group_id=0 0 0",
}
LOCAL = (
    "proc /proc proc rw,relatime 0 0\n"
    "/dev/vda / ext4 rw,relatime,discard,no_prefetch_block_bitmaps 0 0\n"
    "tmpfs /tmp tmpfs rw,nosuid,nodev,size=8388608k 0 0\n"
    "/dev/nvme0n1p3 /data xfs rw,relatime,attr2,inode64,logbufs=8,logbsize=32k,noquota 0 0\n"
)


@pytest.mark.parametrize("fstype", sorted(LINES))
def test_each_network_filesystem_is_found_shared(fstype: str) -> None:
    point = LINES[fstype].split()[1]
    table = LOCAL + LINES[fstype] + "\n"
    assert filesystem.mount_type(table, f"{point}/alice/.local/share/commscope") == fstype
    assert filesystem.mount_type(table, point) == fstype
    assert filesystem.is_shared(fstype)
    assert filesystem.mount_type(table, "/var/lib/x") == "ext4"  # the root holds the rest


def test_the_longest_mount_point_holds_a_path() -> None:
    table = (
        LOCAL
        + "/etc/auto.home /home autofs rw,relatime,fd=7,pgrp=1234,timeout=300,indirect 0 0\n"
        + "fs1:/export/home/alice /home/alice nfs4 rw,relatime,vers=4.2 0 0\n"
        + "/dev/sdb1 /home/al ext4 rw,relatime 0 0\n"
    )
    assert filesystem.mount_type(table, "/home/alice/store.sqlite") == "nfs4"
    assert filesystem.mount_type(table, "/home/al/store.sqlite") == "ext4"  # no false prefix
    assert filesystem.mount_type(table, "/home/bob") == "autofs"
    assert filesystem.mount_type(table, "/data/x") == "xfs"
    assert not filesystem.is_shared("autofs") and not filesystem.is_shared("xfs")
    assert not filesystem.is_shared("tmpfs") and not filesystem.is_shared("fuseblk")


def test_a_later_mount_on_one_point_covers_the_earlier_and_escapes_are_read() -> None:
    table = LOCAL + "fs1:/scratch /data nfs4 rw,relatime 0 0\n"
    assert filesystem.mount_type(table, "/data/x") == "nfs4"
    table = LOCAL + "fs1:/p /mnt/my\\040disk nfs rw 0 0\n"
    assert filesystem.mount_type(table, "/mnt/my disk/store.sqlite") == "nfs"
    assert filesystem.mount_type(table, "/mnt/my") == "ext4"
    assert filesystem.mount_type("", "/x") == ""


def test_any_fuse_filesystem_counts_as_shared() -> None:
    assert filesystem.is_shared("fuse.glusterfs") and filesystem.is_shared("fuse")


def test_this_machines_own_table_is_read(tmp_path: Path) -> None:
    real = Path("/proc/self/mounts").read_text()
    expected = filesystem.mount_type(real, os.path.realpath(tmp_path))
    assert expected  # the root at least
    shared = filesystem.shared_type(tmp_path / "not" / "yet" / "store.sqlite")
    assert shared == (expected if filesystem.is_shared(expected) else "")


@pytest.fixture
def on_nfs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A folder the mounts table calls an NFS mount; the store's path in it."""
    folder = tmp_path / "home"
    folder.mkdir()
    table = tmp_path / "mounts"
    table.write_text(LOCAL + f"fs1:/export/home {os.path.realpath(folder)} nfs4 rw 0 0\n")
    monkeypatch.setattr(filesystem, "MOUNTS", table)
    return folder / "store.sqlite"


def notes(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name.startswith("commscope")]


def test_a_new_store_on_nfs_keeps_a_rollback_journal_and_says_so_once(
    on_nfs: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING)
    store_run(on_nfs, "night 1")
    assert on_nfs.read_bytes()[18:20] == b"\x01\x01"  # rollback journal: WAL would be 2, 2
    said = notes(caplog)
    assert len(said) == 1 and "nfs4" in said[0] and "rollback journal" in said[0], said
    assert "store.sqlite.lock" in said[0]
    store_run(on_nfs, "night 2")
    with Store.open(on_nfs, write=False) as store:
        assert [r.label for r in store.list_runs()] == ["night 1", "night 2"]
    assert len(notes(caplog)) == 1  # once: when it was made
    assert sorted(p.name for p in on_nfs.parent.iterdir()) == ["store.sqlite"]  # no lock left


def test_a_wal_store_found_on_nfs_is_switched_by_its_first_writer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    folder = tmp_path / "home"
    path = folder / "store.sqlite"
    store_run(path, "made on a local disk")
    assert path.read_bytes()[18:20] == b"\x02\x02"
    table = tmp_path / "mounts"
    table.write_text(LOCAL + f"fs1:/export/home {os.path.realpath(folder)} nfs rw 0 0\n")
    monkeypatch.setattr(filesystem, "MOUNTS", table)
    caplog.set_level(logging.WARNING)
    with Store.open(path, write=False) as store:  # a reader changes nothing
        assert len(store.list_runs()) == 1
    assert path.read_bytes()[18:20] == b"\x02\x02" and not notes(caplog)
    store_run(path, "written over NFS")
    assert path.read_bytes()[18:20] == b"\x01\x01"
    said = notes(caplog)
    assert len(said) == 1 and "now keeps a rollback journal" in said[0], said
    with Store.open(path, write=False) as store:
        runs = store.list_runs()
    assert [r.label for r in runs] == ["made on a local disk", "written over NFS"]
    assert runs[0].n_points == runs[1].n_points > 0


# Cut a write short: a transaction larger than SQLite's cache spills into the file, then the
# process dies without committing or rolling back. Its journal is then "hot".
CUT_SHORT = """
import os, sqlite3, sys
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("PRAGMA cache_size = 1")
conn.execute("BEGIN IMMEDIATE")
conn.execute("DELETE FROM points")
assert os.path.getsize(sys.argv[1] + "-journal") > 0
os._exit(0)
"""


@pytest.mark.parametrize("reader", ["runs", "check-store"])
def test_a_reader_on_nfs_rolls_back_a_write_cut_short_under_the_lock(
    on_nfs: Path, reader: str
) -> None:
    store_run(on_nfs, "kept")
    with Store.open(on_nfs, write=False) as store:
        points = store.list_runs()[0].n_points
    subprocess.run([sys.executable, "-c", CUT_SHORT, str(on_nfs)], check=True, timeout=60)
    assert Path(f"{on_nfs}-journal").exists()
    code, err = run_cli(on_nfs, reader)  # read-only, yet the journal is undone
    assert code == 0, err
    assert not Path(f"{on_nfs}-journal").exists()
    with Store.open(on_nfs, write=False) as store:
        assert store.list_runs()[0].n_points == points
        assert len(store.colls(1)) == points


def test_a_reader_meeting_an_unfinished_write_says_so_and_changes_nothing(on_nfs: Path) -> None:
    store_run(on_nfs, "kept")
    with Store.open(on_nfs, write=False) as store:
        subprocess.run([sys.executable, "-c", CUT_SHORT, str(on_nfs)], check=True, timeout=60)
        with pytest.raises(StoreError) as err:
            store.list_runs()
    text = err.value.one_line()
    assert "store.sqlite-journal holds a write not finished" in text, text
    assert "run the command again" in text
    assert Path(f"{on_nfs}-journal").exists()  # left to a command that opens it afresh


def held_by(store: Path, host: str, pid: int, age_s: float) -> Path:
    lock = store_lock.lock_path(store)
    lock.write_text(f"{host} {pid} {time.time() - age_s:.0f}\n")
    return lock


def test_readers_and_writers_wait_for_the_lock_then_name_its_holder(
    on_nfs: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store_run(on_nfs, "night 1")
    monkeypatch.setattr(store_lock, "WAIT_S", 0.3)
    lock = held_by(on_nfs, "csnode2", 4242, 90)
    for write in (True, False):
        start = time.monotonic()
        with pytest.raises(StoreError) as err:
            Store.open(on_nfs, write=write).close()
        assert time.monotonic() - start >= 0.3
        text = err.value.one_line()
        assert str(lock) in text and re.search(r"process 4242 on csnode2, for 9\d s", text), text
        assert "ps -p 4242 on csnode2" in text
    lock.unlink()
    store_run(on_nfs, "night 2")  # the lock given back, writing works again
    assert not lock.exists()


def test_a_store_reached_through_a_symlink_is_shared_and_meets_the_same_lock(
    on_nfs: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store_run(on_nfs, "night 1")
    link = tmp_path / "local" / "store.sqlite"  # on the local disk, leading to NFS
    link.parent.mkdir()
    link.symlink_to(on_nfs)
    assert filesystem.shared_type(link) == "nfs4"
    assert store_lock.lock_path(link) == store_lock.lock_path(on_nfs)
    monkeypatch.setattr(store_lock, "WAIT_S", 0.1)
    lock = held_by(on_nfs, "csnode2", 4242, 5)
    with pytest.raises(StoreError, match=re.escape(str(lock))):
        Store.open(link).close()


def test_a_lock_left_by_a_process_of_this_host_that_ended_says_to_remove_it(
    on_nfs: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store_run(on_nfs, "night 1")
    monkeypatch.setattr(store_lock, "WAIT_S", 0.1)
    ended = subprocess.Popen(["true"])
    ended.wait()  # its pid names no process now
    lock = held_by(on_nfs, socket.gethostname(), ended.pid, 5)
    with pytest.raises(StoreError) as err:
        Store.open(on_nfs).close()
    text = err.value.one_line()
    assert f"process {ended.pid} on this host, which has ended" in text and f"remove {lock}" in text


def test_a_lock_is_taken_once_per_process(on_nfs: Path) -> None:
    store_run(on_nfs, "night 1")
    with Store.open(on_nfs) as store, store_lock.held(on_nfs):
        run = store.create_run("p2p", "inside", None, None, 2, {})  # reads and writes
        assert store.get_run(run).label == "inside"
        assert store_lock.lock_path(on_nfs).exists()
    assert not store_lock.lock_path(on_nfs).exists()


def run_cli(store: Path, *argv: str) -> tuple[int, str]:
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        code = main(["--store", str(store), *argv])
    return code, err.getvalue()


def test_the_command_that_makes_a_store_on_nfs_says_so_in_one_line(on_nfs: Path) -> None:
    osu = str(FIXTURES / "osu_latency.txt")
    code, err = run_cli(on_nfs, "import", "osu", osu, "--label", "first")
    assert code == 0, err
    lines = [line for line in err.splitlines() if "rollback journal" in line]
    assert len(lines) == 1 and lines[0].startswith("commscope import: note: "), err
    code, err = run_cli(on_nfs, "import", "osu", osu, "--label", "second")
    assert code == 0 and "rollback journal" not in err, err
