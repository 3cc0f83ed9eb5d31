"""A real Slurm on the vcluster: slurmctld on the bridge, one slurmd in every node.

``up --slurm`` writes Slurm's configuration to ``/etc/slurm`` (where every Slurm command
looks, so ``srun``, ``sbatch`` and ``salloc`` work as on a login node), starts munged with a
key of its own, slurmctld in this machine's namespace on the bridge address, and one slurmd
per node inside that node's namespaces. Each slurmd gets a private folder mounted at
:data:`NODE_TMP`, which PMIx uses for its client files: nodes share this machine's /tmp,
where the PMIx steps of two nodes would otherwise collide.

Slurm's ``topology/tree`` file follows the cluster's switches (one switch: the bridge; several:
a leaf per block of nodes under the core); :func:`use_topology` replaces it with another, e.g.
one ``commscope topology`` wrote from a measured matrix, and has slurmctld read it again.

What Slurm 22.05 needs here, found by trying: ``cgroup/v1`` with no automount (slurmd refuses
to start otherwise, even with no cgroup plugin in use), ``proctrack/linuxproc``,
``task/none``, and ``config_overrides``: the nodes' CPUs are this machine's, shared.
"""

from __future__ import annotations

import os
import socket
import subprocess
import time
from pathlib import Path

from commscope.data import topology_conf as conf_file
from commscope.errors import ClusterError
from commscope.measure.vcluster import accounting, services
from commscope.measure.vcluster.model import STATE_DIR, ClusterState
from commscope.strict import shown

SLURM_DIR = STATE_DIR / "slurm"
MUNGE_DIR = STATE_DIR / "munge"
MUNGE_SOCKET = MUNGE_DIR / "munge.socket"
NODE_TMP = SLURM_DIR / "node-tmp"
CONF_DIR = Path("/etc/slurm")
CONF_FILES = ("slurm.conf", "cgroup.conf", "mpi.conf", "topology.conf", "slurmdbd.conf")
CONF_MARK = "# commscope-vcluster: removed by 'commscope vcluster down'"
PARTITION = "vcluster"
CLUSTER = "commscope"
TOOLS = ("slurmctld", "slurmd", "munged", "srun", "sbatch", "scontrol", "sinfo")
READY_TIMEOUT_S = 60.0


def require_tools() -> None:
    """Raise ClusterError unless Slurm and munge are installed and /etc/slurm is free."""
    services.require_tools(TOOLS, "--slurm", "slurm-wlm and munge")
    for name in CONF_FILES:
        path = CONF_DIR / name
        if path.exists() and CONF_MARK not in path.read_text(errors="replace"):
            raise ClusterError(
                f"{path} exists and is not commscope's: this machine has a Slurm "
                "of its own; use it instead of --slurm"
            )


def cpus_per_node() -> int:
    """CPUs each node declares: this machine's, which every node shares."""
    return max(1, len(os.sched_getaffinity(0)))


def slurm_conf(state: ClusterState) -> str:
    """Return slurm.conf for ``state``."""
    cpus = cpus_per_node()
    lines = [
        CONF_MARK,
        f"ClusterName={CLUSTER}",
        f"SlurmctldHost={socket.gethostname()}({state.bridge_address})",
        "AuthType=auth/munge",
        "CredType=cred/munge",
        f"AuthInfo=socket={MUNGE_SOCKET}",
        "SlurmUser=root",
        "SlurmdUser=root",
        f"StateSaveLocation={SLURM_DIR}/ctld",
        f"SlurmdSpoolDir={SLURM_DIR}/spool-%n",
        f"SlurmctldPidFile={SLURM_DIR}/slurmctld.pid",
        f"SlurmdPidFile={SLURM_DIR}/slurmd-%n.pid",
        f"SlurmctldLogFile={SLURM_DIR}/slurmctld.log",
        f"SlurmdLogFile={SLURM_DIR}/slurmd-%n.log",
        f"TmpFS={NODE_TMP}",
        "ProctrackType=proctrack/linuxproc",
        "TaskPlugin=task/none",
        "SwitchType=switch/none",
        "MpiDefault=none",
        "SchedulerType=sched/backfill",
        "SelectType=select/cons_tres",
        "SelectTypeParameters=CR_Core",
        "SlurmdParameters=config_overrides",
        "ReturnToService=2",
        "JobCompType=jobcomp/none",
        *(
            accounting.slurm_conf_lines(MUNGE_SOCKET)
            if "accounting" in state.services
            else ["AccountingStorageType=accounting_storage/none"]
        ),
        # The cluster's switches: 'scontrol show topology' and sbatch --switches work.
        "TopologyPlugin=topology/tree",
        "MessageTimeout=30",
        "KillWait=5",
        "InactiveLimit=0",
    ]
    lines += [
        f"NodeName={n.name} NodeAddr={n.address} CPUs={cpus} Sockets=1 "
        f"CoresPerSocket={cpus} ThreadsPerCore=1 State=UNKNOWN"
        for n in state.nodes
    ]
    lines.append(
        f"PartitionName={PARTITION} Nodes=ALL Default=YES MaxTime=INFINITE "
        "OverSubscribe=NO State=UP"
    )
    return "\n".join(lines) + "\n"


def _write_conf(state: ClusterState) -> None:
    texts = {
        "slurm.conf": slurm_conf(state),
        "cgroup.conf": f"{CONF_MARK}\nCgroupPlugin=cgroup/v1\nCgroupAutomount=no\n",
        "mpi.conf": f"{CONF_MARK}\nPMIxCliTmpDirBase={NODE_TMP}\n",
        "topology.conf": f"{CONF_MARK}\n{topology_conf(state)}",
    }
    CONF_DIR.mkdir(parents=True, exist_ok=True)
    for name, text in texts.items():
        (CONF_DIR / name).write_text(text, encoding="utf-8")


def topology_conf(state: ClusterState) -> str:
    """Slurm's topology.conf of the cluster as built: leaves first, then the core."""
    if not state.leaves:
        return f"SwitchName={state.bridge} Nodes={','.join(n.name for n in state.nodes)}\n"
    lines = [
        f"SwitchName={leaf} Nodes={','.join(n.name for n in state.nodes if n.switch == leaf)}"
        for leaf in state.leaves
    ]
    lines.append(f"SwitchName={state.bridge} Switches={','.join(state.leaves)}")
    return "\n".join(lines) + "\n"


expand_hostlist = conf_file.expand_hostlist


def check_topology(text: str, state: ClusterState, source: str) -> str:
    """Check a topology.conf against the cluster; return its lines without comments.

    The file is a tree (:func:`commscope.data.topology_conf.parse`: every line
    ``SwitchName=NAME Nodes=LIST`` or ``SwitchName=NAME Switches=LIST``, ``LinkSpeed=N`` may
    follow, each switch listed under another defined in the file) and its nodes are this
    cluster's.

    Raises:
        ClusterError: one line naming ``source``, the line and the fix.
    """
    try:
        switches = conf_file.parse(text, source)
    except conf_file.TopologyConfError as err:
        raise ClusterError(str(err)) from None
    if not switches:
        raise ClusterError(f"{source} defines no switch: write at least one SwitchName= line")
    known = {n.name for n in state.nodes}
    for switch in switches:
        strangers = [m for m in switch.nodes if m not in known]
        if strangers:
            raise ClusterError(
                f"{source} line {switch.line}: {strangers[0]} is not a node of this vcluster "
                f"({', '.join(n.name for n in state.nodes)}): write the topology of its nodes"
            )
    kept = (raw.split("#", 1)[0].strip() for raw in text.splitlines())
    return "\n".join(line for line in kept if line) + "\n"


def use_topology(state: ClusterState, text: str, source: str) -> str:
    """Give the cluster's Slurm the topology.conf ``text``; return what Slurm then shows.

    The file is checked against the cluster (:func:`check_topology`), written to
    /etc/slurm/topology.conf and read by slurmctld again (``scontrol reconfigure``).

    Returns:
        ``scontrol show topology``'s output.

    Raises:
        ClusterError: the cluster runs no Slurm, the file is not a topology of its nodes, or
            Slurm refused it.
    """
    if "slurm" not in state.services:
        raise ClusterError(
            f"{source}: the vcluster runs no Slurm: start it with 'commscope vcluster up"
            " --slurm' (after 'commscope vcluster down')"
        )
    lines = check_topology(text, state, source)
    path = CONF_DIR / "topology.conf"
    try:
        path.write_text(f"{CONF_MARK}\n# from {shown(source)}\n{lines}", encoding="utf-8")
    except OSError as err:
        raise ClusterError(f"cannot write {path} ({err.strerror})") from None
    _scontrol(["reconfigure"])
    wait_idle(len(state.nodes))
    return _scontrol(["show", "topology"])


def _scontrol(args: list[str]) -> str:
    return services.run_checked(
        ["scontrol", *args], f"scontrol {' '.join(args)}", str(SLURM_DIR), timeout_s=60
    )


def _start_munge() -> None:
    # Users reach munged by its socket (mode 777), as in /run/munge; the key stays 0400.
    MUNGE_DIR.mkdir(parents=True, exist_ok=True)
    MUNGE_DIR.chmod(0o755)
    key = MUNGE_DIR / "munge.key"
    with open(key, "wb") as out:
        out.write(os.urandom(1024))
    key.chmod(0o400)
    services.start(
        "munged",
        [
            "munged",
            "--foreground",
            "--force",
            f"--socket={MUNGE_SOCKET}",
            f"--key-file={key}",
            f"--pid-file={MUNGE_DIR}/munged.pid",
            f"--seed-file={MUNGE_DIR}/munged.seed",
            f"--log-file={MUNGE_DIR}/munged.log",
        ],
        log=MUNGE_DIR / "munged.out",
    )
    deadline = time.monotonic() + services.START_TIMEOUT_S
    while not MUNGE_SOCKET.exists():
        if time.monotonic() > deadline:
            raise ClusterError(f"munged made no socket {MUNGE_SOCKET} (log {MUNGE_DIR})")
        time.sleep(0.05)


def start(state: ClusterState) -> None:
    """Configure and start munged, slurmctld and one slurmd per node; wait until all idle.

    Raises:
        ClusterError: Slurm or munge is missing, a daemon does not start, or the nodes do
            not come up in time.
    """
    require_tools()
    if "accounting" in state.services:
        accounting.require_tools()
    for folder in (SLURM_DIR / "ctld", NODE_TMP):
        folder.mkdir(parents=True, exist_ok=True)
    _write_conf(state)
    _start_munge()
    if "accounting" in state.services:
        password = accounting.start_database()
        accounting.start_slurmdbd(CONF_DIR, MUNGE_SOCKET, password, CONF_MARK)
        accounting.register(CLUSTER)
    services.start("slurmctld", ["slurmctld", "-D", "-i"], log=SLURM_DIR / "slurmctld.out")
    for node in state.nodes:
        own_tmp = SLURM_DIR / f"tmp-{node.name}"
        own_tmp.mkdir(exist_ok=True)
        (SLURM_DIR / f"spool-{node.name}").mkdir(exist_ok=True)
        argv = services.node_prefix(
            node.name, ["slurmd", "-D", "-N", node.name], bind=(own_tmp, NODE_TMP)
        )
        services.start(f"slurmd-{node.name}", argv, log=SLURM_DIR / f"slurmd-{node.name}.out")
    wait_idle(len(state.nodes))


def wait_idle(nodes: int, timeout_s: float = READY_TIMEOUT_S) -> None:
    """Wait until Slurm reports ``nodes`` idle nodes.

    Raises:
        ClusterError: not all nodes are idle in time (names what sinfo last said).
    """
    deadline = time.monotonic() + timeout_s
    seen = ""
    while time.monotonic() < deadline:
        out = subprocess.run(
            ["sinfo", "-h", "-N", "-o", "%N %T"],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
        seen = " ".join(out.stdout.split()) or out.stderr.strip()
        states = out.stdout.split()[1::2]
        if out.returncode == 0 and len(states) == nodes and all(s == "idle" for s in states):
            return
        time.sleep(0.5)
    raise ClusterError(
        f"Slurm's nodes did not come up in {timeout_s:.0f} s (sinfo: {seen}); "
        f"see the logs in {SLURM_DIR}"
    )


def remove_files() -> list[str]:
    """Remove the configuration written to /etc/slurm; the rest lives in the state folder."""
    removed = []
    for name in CONF_FILES:
        path = CONF_DIR / name
        if path.exists() and CONF_MARK in path.read_text(errors="replace"):
            path.unlink()
            removed.append(str(path))
    return removed
