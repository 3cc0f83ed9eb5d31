"""Hand-off of a chosen placement to the resource manager and the MPI launcher.

- Slurm: ``-N n --ntasks-per-node c`` with the socket spread and rank order that reproduce the
  placement, ``--switches=1`` when the model has switches and the placement fits under one;
- Open MPI rankfile: ``rank R=host slot=S:C`` per rank (exact: socket and core);
- hostfile: ``host slots=N`` per node used (node and rank order; pair it with the rank
  order flag, ``--map-by node`` for cyclic).
"""

from __future__ import annotations

import numpy as np

from commscope.predict.model import ClusterModel
from commscope.predict.placement import Placement


def fits_one_switch(model: ClusterModel, placement: Placement) -> bool:
    """The model has switches and every node of the placement is behind the same one."""
    if not model.switches:
        return False
    return len({int(model.switch_of[n]) for n in placement.node_ids()}) == 1


def slurm_args(model: ClusterModel, placement: Placement) -> list[str]:
    """sbatch/salloc/srun options asking for this placement's shape."""
    args = ["-N", str(placement.nodes)]
    if placement.order == "explicit" or placement.per_node * placement.nodes != placement.p:
        args += [
            "-n",
            str(placement.p),
            "--nodelist=" + ",".join(model.node_names[n] for n in placement.node_ids()),
        ]
    else:
        args += ["--ntasks-per-node", str(placement.per_node)]
        if model.sockets > 1 and placement.per_node > 1:
            per_socket = -(-placement.per_node // placement.sockets_used)
            args += ["--ntasks-per-socket", str(per_socket)]
        # Second level "block": consecutive local ranks share a socket, as placed.
        args += [f"--distribution={placement.order}:block", "--cpu-bind=cores"]
    if fits_one_switch(model, placement):
        args.append("--switches=1")
    return args


def rankfile(model: ClusterModel, placement: Placement) -> str:
    """Open MPI rankfile text: one ``rank R=host slot=socket:core`` line per rank."""
    names = np.array(model.node_names, dtype=object)[placement.node]
    lines = [
        f"rank {r}={h} slot={s}:{c}"
        for r, (h, s, c) in enumerate(
            zip(names.tolist(), placement.socket.tolist(), placement.core.tolist(), strict=True)
        )
    ]
    return "\n".join(lines) + "\n"


def hostfile(model: ClusterModel, placement: Placement) -> str:
    """Hostfile text: ``host slots=N`` per node used, in order of its first rank."""
    counts = np.bincount(placement.node, minlength=model.nodes)
    return "".join(f"{model.node_names[n]} slots={counts[n]}\n" for n in placement.node_ids())


def launch_hint(
    placement: Placement, rankfile: str | None = None, hostfile: str | None = None
) -> str:
    """How to launch the placement with Open MPI and the written files."""
    order = " --map-by node" if placement.order == "cyclic" else ""
    ways = [f"mpirun -np {placement.p} --rankfile {rankfile or 'RANKFILE'} ..."]
    if hostfile or not rankfile:
        ways.append(
            f"mpirun -np {placement.p} --hostfile {hostfile or 'HOSTFILE'}{order}"
            " --bind-to core ..."
        )
    return "   or   ".join(ways)
