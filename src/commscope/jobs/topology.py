"""The switches a measured all-pairs matrix shows, as Slurm's topology.conf and a cluster model.

Nodes are grouped into switches from the run's bandwidth (its largest size) and latency
matrices (:mod:`commscope.analysis.switch_groups`); the grouping is written as Slurm's
``topology/tree`` file and as a cluster model for ``predict --cluster`` and ``simulate``.
Every output path is checked before anything is read, and both files' texts are made before
either is written: a model the run's node names cannot make leaves no topology.conf behind.
A node name that is not a host name (a newline or another control character in it) is
refused for topology.conf, where it would add or break a line.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from commscope import safe_write, strict
from commscope.data.store import Store
from commscope.errors import UsageError

if TYPE_CHECKING:
    from commscope.analysis.switch_groups import SwitchGrouping


@dataclass(frozen=True)
class TopologyJob:
    """Which run to group, and the files to write (None: not asked)."""

    store: str
    run: str = "latest"
    conf: str | None = None  # Slurm's topology.conf
    model: str | None = None  # a cluster model YAML


@dataclass(frozen=True)
class TopologyOutcome:
    """The grouping found, its topology.conf text, and the files written."""

    run_id: int
    tree: SwitchGrouping
    conf_text: str
    written: list[str]


def infer(job: TopologyJob) -> TopologyOutcome:
    """Group the run's nodes into switches; write the files asked for."""
    import numpy as np
    import yaml

    from commscope.analysis import matrix as matrix_analysis
    from commscope.analysis import switch_groups
    from commscope.data.run_data import read_run
    from commscope.predict.model_switch_groups import model_document

    outputs = [(path, flag) for path, flag in ((job.conf, "-o"), (job.model, "--model")) if path]
    safe_write.check_targets(outputs)
    with Store.open(job.store, write=False) as store:
        run = read_run(store, store.resolve_run(job.run))
    points = run.family("paired")
    ident = run.info.id
    if not points:
        raise UsageError(
            f"run {ident} holds no all-pairs matrix; measure one with 'commscope run matrix'"
            " and give its id"
        )
    header = run.info.header
    rank_names = matrix_analysis.rank_nodes(header, points)
    found = matrix_analysis.matrices(points, rank_names)
    names = found[0].names
    hosts = {str(r["node"]) for r in (header or {}).get("ranks", [])} or set(names)
    if len(hosts) < 2:
        raise UsageError(
            f"run {ident} measured {len(hosts)} node; a topology needs 2 or more: run the"
            " matrix across nodes (--hostfile, --slurm, --vcluster)"
        )
    lat = [m for m in found if m.op == "matrix_lat"]
    bw = [m for m in found if m.op == "matrix_bw"]

    def array(m: matrix_analysis.Matrix) -> np.ndarray:
        return np.array([[np.nan if v is None else v for v in row] for row in m.values])

    tree = switch_groups.infer(
        names,
        array(bw[-1]) if bw else None,  # the largest size: bandwidth, not latency, dominates
        array(lat[0]) if lat else None,
    )
    text = switch_groups.slurm_topology(tree)
    texts: dict[str, str] = {}
    odd = next((n for n in names if not strict.HOST_NAME.fullmatch(n)), None)
    if job.conf and odd is not None:  # a newline in a name would add a line to the file
        raise UsageError(
            f"-o: run {ident} names the node {strict.shown(odd)}, which topology.conf cannot"
            " hold (letters, digits, '.', '-', '_'); neither file is written: give the nodes"
            " such names, or write the file by hand from the switches printed without -o"
        )
    if job.conf:
        texts["-o"] = f"# commscope topology of run {ident}\n{text}"
    if job.model:
        ranks_per_node = max(1, len(rank_names) // len(set(names)))
        doc = model_document(tree, f"run{ident}-topology", ranks_per_node)
        head = (
            f"# commscope topology of run {ident} ({tree.source}); sockets and cores are what"
            " the run recorded: set them to the nodes' real counts\n"
        )
        texts["--model"] = head + yaml.safe_dump(doc, sort_keys=False)
    safe_write.write_texts([(path, texts[flag], flag) for path, flag in outputs])
    return TopologyOutcome(ident, tree, text, [path for path, _ in outputs])
