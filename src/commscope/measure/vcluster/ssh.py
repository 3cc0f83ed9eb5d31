"""A real OpenSSH server in every vcluster node, so hostfile runs go through ssh.

``up --ssh`` makes a host key per node and one user key for this machine's root, starts
``sshd`` in each node, writes ``known_hosts`` and a client configuration in
``/etc/ssh/ssh_config.d`` that applies to the nodes only. MPI launchers then reach the nodes
with their ordinary ssh, exactly as on a Beowulf cluster. ``down`` removes all of it.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from commscope.errors import ClusterError
from commscope.measure.vcluster import services
from commscope.measure.vcluster.model import NODE_PREFIX, STATE_DIR, ClusterState

SSH_DIR = STATE_DIR / "ssh"
CLIENT_CONFIG = Path("/etc/ssh/ssh_config.d/commscope-vcluster.conf")
CLIENT_MARK = "# commscope-vcluster: removed by 'commscope vcluster down'"
PRIVSEP_DIR = Path("/run/sshd")
PRIVSEP_MARK = SSH_DIR / "made-run-sshd"
SSHD = "/usr/sbin/sshd"
TOOLS = (SSHD, "ssh", "ssh-keygen")


def require_tools() -> None:
    """Raise ClusterError unless OpenSSH's server and client are installed."""
    services.require_tools(TOOLS, "--ssh", "openssh-server and openssh-client")
    if CLIENT_CONFIG.exists() and CLIENT_MARK not in CLIENT_CONFIG.read_text(errors="replace"):
        raise ClusterError(f"{CLIENT_CONFIG} exists and is not commscope's: move it away")


def _keygen(path: Path, comment: str) -> None:
    try:
        subprocess.run(
            ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", comment, "-f", str(path)],
            check=True,
            capture_output=True,
            timeout=30,
        )
    except (OSError, subprocess.SubprocessError) as err:
        raise ClusterError(f"ssh-keygen could not make {path}: {err}") from None


def _sshd_config(state: ClusterState, index: int) -> str:
    node = state.nodes[index]
    return "\n".join(
        [
            f"ListenAddress {node.address}",
            f"HostKey {SSH_DIR}/host-{node.name}",
            f"AuthorizedKeysFile {SSH_DIR}/authorized_keys",
            f"PidFile {SSH_DIR}/sshd-{node.name}.pid",
            "PermitRootLogin prohibit-password",
            "PasswordAuthentication no",
            "KbdInteractiveAuthentication no",
            "UsePAM no",
            "X11Forwarding no",
            # MPI launchers open many sessions at once on a big job.
            "MaxStartups 100",
            "MaxSessions 100",
            "",
        ]
    )


def start(state: ClusterState) -> None:
    """Make the keys and configuration, then start sshd in every node of ``state``.

    Raises:
        ClusterError: OpenSSH is missing, a key cannot be made or an sshd does not start.
    """
    require_tools()
    SSH_DIR.mkdir(mode=0o700, parents=True, exist_ok=True)
    if not PRIVSEP_DIR.exists():  # made by the distribution's service unit, absent in containers
        PRIVSEP_DIR.mkdir(mode=0o755)
        PRIVSEP_MARK.touch()
    _keygen(SSH_DIR / "id_ed25519", "commscope-vcluster")
    (SSH_DIR / "authorized_keys").write_text((SSH_DIR / "id_ed25519.pub").read_text())
    known = []
    for i, node in enumerate(state.nodes):
        key = SSH_DIR / f"host-{node.name}"
        _keygen(key, node.name)
        kind, blob = (key.with_suffix(".pub")).read_text().split()[:2]
        known.append(f"{node.name},{node.address} {kind} {blob}")
        (SSH_DIR / f"sshd-{node.name}.conf").write_text(_sshd_config(state, i))
    (SSH_DIR / "known_hosts").write_text("\n".join(known) + "\n")
    CLIENT_CONFIG.parent.mkdir(parents=True, exist_ok=True)
    CLIENT_CONFIG.write_text(
        "\n".join(
            [
                CLIENT_MARK,
                f"Host {NODE_PREFIX}*",
                f"    IdentityFile {SSH_DIR}/id_ed25519",
                f"    UserKnownHostsFile {SSH_DIR}/known_hosts",
                "    StrictHostKeyChecking yes",
                "    BatchMode yes",
                "",
            ]
        )
    )
    for node in state.nodes:
        conf, log = SSH_DIR / f"sshd-{node.name}.conf", SSH_DIR / f"sshd-{node.name}.log"
        argv = services.node_prefix(node.name, [SSHD, "-f", str(conf), "-E", str(log)])
        services.start(
            f"sshd-{node.name}", argv, pidfile=SSH_DIR / f"sshd-{node.name}.pid", log=log
        )


def remove_files() -> list[str]:
    """Remove the client configuration and the privilege separation folder if ``up`` made it.

    The keys and server configurations live in the state folder, which ``down`` removes.
    """
    removed = []
    if CLIENT_CONFIG.exists() and CLIENT_MARK in CLIENT_CONFIG.read_text(errors="replace"):
        CLIENT_CONFIG.unlink()
        removed.append(str(CLIENT_CONFIG))
    if PRIVSEP_MARK.exists() and PRIVSEP_DIR.is_dir():
        shutil.rmtree(PRIVSEP_DIR, ignore_errors=True)
        removed.append(str(PRIVSEP_DIR))
    return removed
