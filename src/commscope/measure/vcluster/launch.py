"""MPI launcher arguments for a vcluster; this module builds argument lists and runs nothing.

MPI daemons reach a node through an agent script shipped in ``commscope/measure/vcluster/agents``,
used by the MPI launcher in place of ssh. It also gives each node its own hostname (UTS
namespace) and IPC namespace: all namespaces otherwise share the machine's hostname and IPC
namespace, and MPI libraries (UCX in particular) would then treat ranks on different nodes
as neighbours on one host and use shared memory between them.
"""

from __future__ import annotations

import os
from pathlib import Path

from commscope.errors import ClusterError
from commscope.measure.vcluster.model import ClusterState

# Beside this package, not inside it: the scripts ship with their executable bit as they are.
AGENTS_DIR = Path(__file__).resolve().parent / "agents"


def agent_path(name: str) -> Path:
    """Return the path of a shipped agent script (``ompi-rsh-agent``, ``hydra-ssh-agent``).

    Raises:
        ClusterError: the script is missing or not executable.
    """
    path = AGENTS_DIR / name
    if not path.is_file() or not os.access(path, os.X_OK):
        raise ClusterError(
            f"vcluster agent {path} is missing or not executable: reinstall commscope "
            f"or run 'chmod +x {AGENTS_DIR}/*'"
        )
    return path


def _host_list(state: ClusterState, ranks_per_node: int) -> str:
    if (
        isinstance(ranks_per_node, bool)
        or not isinstance(ranks_per_node, int)
        or ranks_per_node < 1
    ):
        raise ClusterError(f"bad ranks per node {ranks_per_node!r}: use 1 or more")
    return ",".join(f"{node.name}:{ranks_per_node}" for node in state.nodes)


def openmpi_args(
    state: ClusterState,
    ranks_per_node: int,
    user_mca: dict[str, str] | None = None,
) -> tuple[list[str], dict[str, str]]:
    """Return the mpirun options and extra environment to run across the vcluster (Open MPI 4).

    The caller adds ``-np`` (at most ``ranks_per_node`` times the node count) and the program.
    The vcluster needs root, so the environment allows mpirun to run as root. ``user_mca``
    adds to (and overrides) the parameters the vcluster needs.

    Raises:
        ClusterError: ranks_per_node below 1, or the agent script is not usable.
    """
    hosts = _host_list(state, ranks_per_node)
    mca = {
        "plm_rsh_agent": str(agent_path("ompi-rsh-agent")),
        # mpirun starts every daemon itself: no node needs the agent's path resolved twice.
        "plm_rsh_no_tree_spawn": "1",
        # The btl list below only applies to ob1; some builds prefer the UCX pml.
        "pml": "ob1",
        "oob_tcp_if_include": state.subnet,
        "btl_tcp_if_include": state.subnet,
        "btl": "self,vader,tcp",
        # Ranks outnumber cores: polling ranks would starve the ones they wait for.
        "mpi_yield_when_idle": "1",
    }
    mca.update(user_mca or {})
    args = ["-H", hosts]
    for key, value in mca.items():
        args += ["--mca", key, value]
    # Every node's daemon binds its first rank to core 0: bound ranks of different nodes
    # would then share one core.
    args += ["--oversubscribe", "--bind-to", "none"]
    env = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}
    return args, env


def mpich_args(state: ClusterState, ranks_per_node: int) -> tuple[list[str], dict[str, str]]:
    """Return the mpiexec (hydra) options and extra environment to run across the vcluster.

    The caller adds ``-n`` and the program. MPICH's UCX device picks the transport: shared
    memory between ranks of one node, TCP between nodes. UCX offers shared memory to a
    peer in the same IPC namespace, and the agent gives each node its own, so no shared
    memory crosses nodes.

    Raises:
        ClusterError: ranks_per_node below 1, or the agent script is not usable.
    """
    hosts = _host_list(state, ranks_per_node)
    args = [
        "-launcher",
        "ssh",
        "-launcher-exec",
        str(agent_path("hydra-ssh-agent")),
        "-hosts",
        hosts,
        # Proxies connect back to mpiexec here; the machine's own hostname resolves to a
        # loopback address that is a different interface inside every node.
        "-localhost",
        state.bridge_address,
    ]
    env = {"UCX_TLS": "sm,tcp,self"}
    return args, env
