"""Slurm accounting on the vcluster: a MariaDB and a slurmdbd of its own, so sacctmgr works.

Slurm keeps users' admin levels (``sacctmgr ... AdminLevel=Administrator``), accounts and QoS
in its accounting database only: without slurmdbd those rights cannot be given or tested.
``up --slurm --accounting`` starts, before slurmctld:

- MariaDB with its data in the state folder, listening on 127.0.0.1 at :data:`DB_PORT` only
  (slurmdbd 22.05 names its database by host and port, not by socket), with one database
  user for slurmdbd and a password made at random for this cluster;
- slurmdbd (``/etc/slurm/slurmdbd.conf``, mode 600, as Slurm requires);
- the cluster and an account :data:`ACCOUNT` registered with ``sacctmgr``, which users can be
  added to (:func:`add_user`).

Jobs need no association (``AccountingStorageEnforce`` is unset), so every other vcluster
test runs as before.
"""

from __future__ import annotations

import secrets
import shutil
import socket
import time
from collections.abc import Callable
from pathlib import Path

from commscope.errors import ClusterError
from commscope.measure.vcluster import services
from commscope.measure.vcluster.model import STATE_DIR

DB_DIR = STATE_DIR / "mariadb"
DB_SOCKET = DB_DIR / "mariadb.sock"
DB_PORT = 6830
DBD_PORT = 6819
DBD_DIR = STATE_DIR / "slurmdbd"
ACCOUNT = "commscope"
TOOLS = ("mariadbd", "mariadb-install-db", "mariadb", "slurmdbd", "sacctmgr")
READY_TIMEOUT_S = 60.0


def require_tools() -> None:
    """Raise ClusterError unless MariaDB and slurmdbd are installed."""
    services.require_tools(TOOLS, "--accounting", "slurmdbd and mariadb-server")


def slurm_conf_lines(munge_socket: Path) -> list[str]:
    """What slurm.conf says for accounting through this slurmdbd.

    Connections to slurmdbd take munge's socket from AccountingStoragePass, not AuthInfo.
    """
    return [
        "AccountingStorageType=accounting_storage/slurmdbd",
        "AccountingStorageHost=localhost",
        f"AccountingStoragePort={DBD_PORT}",
        f"AccountingStoragePass={munge_socket}",
    ]


def slurmdbd_conf(munge_socket: Path, password: str) -> str:
    """Return slurmdbd.conf: munge as slurmctld's, the database on 127.0.0.1:DB_PORT."""
    return "\n".join(
        [
            "AuthType=auth/munge",
            f"AuthInfo=socket={munge_socket}",
            "DbdHost=localhost",
            f"DbdPort={DBD_PORT}",
            "SlurmUser=root",
            f"PidFile={DBD_DIR}/slurmdbd.pid",
            f"LogFile={DBD_DIR}/slurmdbd.log",
            "StorageType=accounting_storage/mysql",
            "StorageHost=127.0.0.1",
            f"StoragePort={DB_PORT}",
            "StorageUser=slurm",
            f"StoragePass={password}",
            "StorageLoc=slurm_acct_db",
        ]
    )


def start_database() -> str:
    """Create and start MariaDB; return the password of its database user ``slurm``.

    Raises:
        ClusterError: MariaDB cannot be created or does not answer in time.
    """
    require_tools()
    if DB_DIR.exists():
        shutil.rmtree(DB_DIR)
    DB_DIR.mkdir(parents=True)
    _run(
        [
            "mariadb-install-db",
            "--no-defaults",
            f"--datadir={DB_DIR / 'data'}",
            "--user=root",
            "--auth-root-authentication-method=socket",
            "--skip-test-db",
        ],
        "mariadb-install-db",
    )
    if _port_taken(DB_PORT):
        raise ClusterError(
            f"127.0.0.1:{DB_PORT} is taken, where the vcluster's MariaDB listens: stop what"
            " listens there, or leave --accounting out"
        )
    services.start(
        "mariadb",
        [
            "mariadbd",
            "--no-defaults",
            f"--datadir={DB_DIR / 'data'}",
            f"--socket={DB_SOCKET}",
            "--bind-address=127.0.0.1",
            f"--port={DB_PORT}",
            "--user=root",
            f"--pid-file={DB_DIR / 'mariadbd.pid'}",
        ],
        log=DB_DIR / "mariadbd.log",
    )
    _wait(lambda: DB_SOCKET.exists() and _port_taken(DB_PORT), f"MariaDB ({DB_DIR})")
    password = secrets.token_hex(16)
    # The password is made here, of hex digits: nothing from a user enters this statement.
    _run(
        [
            "mariadb",
            "--no-defaults",
            f"--socket={DB_SOCKET}",
            "-u",
            "root",
            "-e",
            f"CREATE USER 'slurm'@'127.0.0.1' IDENTIFIED BY '{password}';"
            " GRANT ALL ON slurm_acct_db.* TO 'slurm'@'127.0.0.1';",
        ],
        "creating MariaDB's user for slurmdbd",
    )
    return password


def start_slurmdbd(conf_dir: Path, munge_socket: Path, password: str, mark: str) -> None:
    """Write slurmdbd.conf (mode 600) and start slurmdbd; wait until sacctmgr reaches it."""
    DBD_DIR.mkdir(parents=True, exist_ok=True)
    path = conf_dir / "slurmdbd.conf"
    path.write_text(f"{mark}\n{slurmdbd_conf(munge_socket, password)}\n", encoding="utf-8")
    path.chmod(0o600)
    services.start("slurmdbd", ["slurmdbd", "-D"], log=DBD_DIR / "slurmdbd.out")
    _wait(lambda: _port_taken(DBD_PORT), f"slurmdbd (log {DBD_DIR})")


def register(cluster: str) -> None:
    """Register ``cluster`` and the account :data:`ACCOUNT`, before slurmctld starts."""
    _sacctmgr(["add", "cluster", cluster])
    _sacctmgr(["add", "account", ACCOUNT, f"Cluster={cluster}", "Description=vcluster"])


def add_user(user: str, admin_level: str = "None") -> None:
    """Add ``user`` to the account :data:`ACCOUNT` with Slurm's ``admin_level``.

    ``admin_level``: None, Operator or Administrator (sacctmgr's words).
    """
    _sacctmgr(["add", "user", user, f"Account={ACCOUNT}", f"AdminLevel={admin_level}"])


def _sacctmgr(args: list[str]) -> str:
    return _run(["sacctmgr", "-i", *args], f"sacctmgr {' '.join(args)}")


def _run(argv: list[str], what: str) -> str:
    return services.run_checked(argv, what, f"{DB_DIR} and {DBD_DIR}")


def _port_taken(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.settimeout(0.5)
        return probe.connect_ex(("127.0.0.1", port)) == 0


def _wait(ready: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + READY_TIMEOUT_S
    while not ready():
        if time.monotonic() > deadline:
            raise ClusterError(f"{what} did not answer in {READY_TIMEOUT_S:.0f} s")
        time.sleep(0.1)
