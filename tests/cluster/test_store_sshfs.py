"""Two machines writing one store on a shared filesystem, for real: two sshfs mounts (root).

A private sshd on a free port of 127.0.0.1 serves a folder; two FUSE mounts of it through
sshfs, with every cache off, stand for two compute nodes mounting one home folder. POSIX
locks on a FUSE mount stay on that mount (sshfs passes none to the server), so between the
two mounts SQLite's locks do nothing: what NFS mounted ``nolock`` does between nodes. Two
processes, one per mount, each commit runs at the same time; nothing may be lost, and the
store must come out sound.
"""

from __future__ import annotations

import os
import shutil
import socket
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from commscope.data import filesystem
from commscope.data.store import Store
from tests.conftest import need

pytestmark = pytest.mark.cluster

ROOT = Path(__file__).resolve().parents[2]
RUNS = 25  # runs each writer commits; each is 8 transactions (run, segment, 4 points...)
POINTS = 4
# One writer: RUNS small runs, labelled with its name, into the store at argv[1].
WRITER = f"""
import sys
from pathlib import Path
from tests import synthetic_runs as syn
store, name = Path(sys.argv[1]), sys.argv[2]
for i in range({RUNS}):
    syn.store_records(store, "coll", syn.colls(seed=i)[:{POINTS}], f"{{name}} {{i}}", 4)
"""
# Caches off: sshfs's own (dir_cache) and the kernel's (no kernel_cache, no auto_cache,
# attributes and names looked up every time).
SSHFS_OPTIONS = "dir_cache=no,attr_timeout=0,entry_timeout=0,negative_timeout=0"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _run(*argv: str) -> None:
    subprocess.run(list(argv), check=True, capture_output=True, timeout=60)


@pytest.fixture
def sshd(tmp_path: Path) -> Iterator[tuple[int, Path]]:
    """A private sshd on 127.0.0.1 that lets root in with a key: (port, the key)."""
    need(os.geteuid() == 0, "sshfs mounts and a private sshd need root")
    for tool in ("/usr/sbin/sshd", "ssh-keygen", "sshfs", "fusermount3"):
        need(bool(shutil.which(tool)), f"{tool} is missing (apt-get install openssh-server sshfs)")
    need(Path("/dev/fuse").exists(), "/dev/fuse is missing: FUSE mounts cannot be made")
    keys = tmp_path / "ssh"
    keys.mkdir(mode=0o700)
    for name in ("host", "user"):
        _run("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(keys / name))
    shutil.copy(keys / "user.pub", keys / "authorized_keys")
    port = _free_port()
    config = keys / "sshd_config"
    config.write_text(
        f"ListenAddress 127.0.0.1:{port}\nHostKey {keys}/host\n"
        f"AuthorizedKeysFile {keys}/authorized_keys\nPidFile none\n"
        "PermitRootLogin prohibit-password\nPasswordAuthentication no\nUsePAM no\n"
        "StrictModes no\nSubsystem sftp internal-sftp\n"
    )
    Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)  # sshd's privilege separation folder
    server = subprocess.Popen(
        ["/usr/sbin/sshd", "-D", "-f", str(config), "-E", str(keys / "log")],
        stdin=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 10
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert server.poll() is None, (keys / "log").read_text()
                assert time.monotonic() < deadline, "sshd did not listen within 10 s"
                time.sleep(0.05)
        yield port, keys / "user"
    finally:
        server.terminate()
        server.wait(timeout=10)


@pytest.fixture
def two_mounts(sshd: tuple[int, Path], tmp_path: Path) -> Iterator[tuple[Path, Path, Path]]:
    """A folder and two sshfs mounts of it: (the folder, mount a, mount b)."""
    port, key = sshd
    shared = tmp_path / "shared"
    shared.mkdir()
    mounts = []
    try:
        for name in ("a", "b"):
            point = tmp_path / f"node-{name}"
            point.mkdir()
            _run(
                *("sshfs", f"root@127.0.0.1:{shared}", str(point), "-p", str(port)),
                *("-o", f"IdentityFile={key},StrictHostKeyChecking=no"),
                *("-o", f"UserKnownHostsFile=/dev/null,{SSHFS_OPTIONS}"),
            )
            mounts.append(point)
        yield shared, mounts[0], mounts[1]
    finally:
        for point in mounts:
            subprocess.run(["fusermount3", "-u", "-z", str(point)], timeout=60, check=False)


def test_two_writers_through_two_sshfs_mounts_lose_nothing(
    two_mounts: tuple[Path, Path, Path],
) -> None:
    shared, node_a, node_b = two_mounts
    assert filesystem.shared_type(node_a / "store.sqlite") == "fuse.sshfs"  # the real table
    assert filesystem.shared_type(shared / "store.sqlite") == ""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT / "src"), str(ROOT)]))
    writers = {
        name: subprocess.Popen(
            [sys.executable, "-c", WRITER, str(node / "store.sqlite"), name],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for name, node in (("a", node_a), ("b", node_b))
    }
    for name, proc in writers.items():
        out, err = proc.communicate(timeout=600)
        assert proc.returncode == 0, f"writer {name} failed:\n{err}"
        # The store is made once, by one of the two, and says so in one line.
        assert err.count("rollback journal") <= 1, err

    store = shared / "store.sqlite"
    assert store.read_bytes()[18:20] == b"\x01\x01"  # a rollback journal, never WAL
    assert not Path(f"{store}-wal").exists() and not Path(f"{store}.lock").exists()
    conn = sqlite3.connect(f"file:{store}?mode=ro", uri=True)
    assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    conn.close()
    with Store.open(store, write=False) as opened:
        runs = opened.list_runs()
    labels = sorted(r.label or "" for r in runs)
    assert labels == sorted(f"{name} {i}" for name in "ab" for i in range(RUNS))
    assert {(r.status, r.n_points) for r in runs} == {("complete", POINTS)}
