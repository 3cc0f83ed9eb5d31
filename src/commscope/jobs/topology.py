"""The switches a measured all-pairs matrix shows, as Slurm's topology.conf and a cluster model.

Nodes are grouped into switches from the run's bandwidth (its largest size) and latency
matrices (:mod:`commscope.analysis.switch_groups`); the grouping is written as Slurm's
``topology/tree`` file and as a cluster model for ``predict --cluster`` and ``simulate``.
Every output path is checked before anything is read, and both files' texts are made before
either is written: a model the run's node names cannot make leaves no topology.conf behind.
A node name that is not a host name (a newline or another control character in it) is
refused for topology.conf, where it would add or break a line.

A topology.conf is Slurm's view of the whole cluster, and a matrix may have measured part of
it: before the file is written, the measured nodes are compared with Slurm's node list
(``sinfo``). Nodes left out are named, and the file is written only when asked to be partial
(``--partial``: a comment at its top names them) or merged into the site's file
(``--merge FILE``: :mod:`commscope.data.topology_merge` keeps its switches for the nodes not
measured). Where Slurm does not answer, the nodes left out cannot be known: then too only
``--partial`` or ``--merge`` writes the file.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from commscope import safe_write, strict
from commscope.data import topology_conf, topology_merge
from commscope.data.store import Store
from commscope.data.topology_conf import ConfSwitch
from commscope.errors import LaunchError, UsageError

if TYPE_CHECKING:
    from commscope.analysis.switch_groups import SwitchGrouping


# A topology.conf larger than this is no topology.conf (100,000 nodes take about 2 MB).
MAX_CONF_CHARS = 16 * 2**20


@dataclass(frozen=True)
class TopologyJob:
    """Which run to group, and the files to write (None: not asked)."""

    store: str
    run: str = "latest"
    conf: str | None = None  # Slurm's topology.conf
    model: str | None = None  # a cluster model YAML
    partial: bool = False  # write topology.conf though nodes of the cluster were not measured
    merge: str | None = None  # a topology.conf whose switches the unmeasured nodes keep
    # the cluster's node names (None: Slurm's, from sinfo, when topology.conf is written)
    cluster_nodes: tuple[str, ...] | None = None


@dataclass(frozen=True)
class TopologyOutcome:
    """The grouping found, its topology.conf text, and the files written."""

    run_id: int
    tree: SwitchGrouping
    conf_text: str
    written: list[str]
    left_out: tuple[str, ...] = ()  # the cluster's nodes in no switch of the file written
    notes: list[str] = field(default_factory=list)  # what the file's comments say, one a line


def infer(job: TopologyJob) -> TopologyOutcome:
    """Group the run's nodes into switches; write the files asked for."""
    import numpy as np
    import yaml

    from commscope.analysis import matrix as matrix_analysis
    from commscope.analysis import switch_groups
    from commscope.data.run_data import read_run
    from commscope.predict.model_switch_groups import model_document

    outputs = [(path, flag) for path, flag in ((job.conf, "-o"), (job.model, "--model")) if path]
    if (job.partial or job.merge) and not job.conf:
        flag = "--partial" if job.partial else "--merge"
        raise UsageError(f"{flag} shapes the topology.conf written: give -o FILE with it")
    safe_write.check_targets(outputs)
    existing = _read_merged(job.merge) if job.merge else None
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
    left_out: tuple[str, ...] = ()
    notes: list[str] = []
    if job.conf:
        left_out, notes, body = _whole_cluster(job, ident, tree, existing)
        head = "".join(f"# {strict.visible(note)}\n" for note in notes)  # a comment each
        texts["-o"] = f"# commscope topology of run {ident}\n{head}{body}"
    if job.model:
        ranks_per_node = max(1, len(rank_names) // len(set(names)))
        doc = model_document(tree, f"run{ident}-topology", ranks_per_node)
        head = (
            f"# commscope topology of run {ident} ({tree.source}); sockets and cores are what"
            " the run recorded: set them to the nodes' real counts\n"
        )
        texts["--model"] = head + yaml.safe_dump(doc, sort_keys=False)
    safe_write.write_texts([(path, texts[flag], flag) for path, flag in outputs])
    return TopologyOutcome(ident, tree, text, [path for path, _ in outputs], left_out, notes)


def _read_merged(path: str) -> list[ConfSwitch]:
    """The switches of the topology.conf ``--merge`` names.

    Raises:
        UsageError: unreadable, or not a topology/tree file (one line naming the line).
    """
    where = f"--merge {strict.visible(path)}"
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read(MAX_CONF_CHARS + 1)
    except (OSError, UnicodeDecodeError) as err:
        why = err.strerror if isinstance(err, OSError) else "not UTF-8 text"
        raise UsageError(
            f"{where}: cannot read it ({why}): give the topology.conf Slurm reads now"
            " ('scontrol show config | grep -i topology' names its folder)"
        ) from None
    if len(text) > MAX_CONF_CHARS:
        raise UsageError(f"{where}: larger than a topology.conf is: give Slurm's topology.conf")
    try:
        return topology_conf.parse(text, where)
    except topology_conf.TopologyConfError as err:
        raise UsageError(str(err)) from None


def _cluster_nodes(job: TopologyJob) -> tuple[tuple[str, ...] | None, str]:
    """The cluster's node names (None: Slurm did not answer) and, if so, why."""
    if job.cluster_nodes is not None:
        return job.cluster_nodes, ""
    import shutil

    from commscope.measure import slurm_nodes

    if shutil.which("sinfo") is None:
        return None, "sinfo is not installed here"
    try:
        return tuple(slurm_nodes.nodes()), ""
    except LaunchError as err:  # slurmctld down or out of reach: sinfo says which
        return None, err.one_line()


def _whole_cluster(
    job: TopologyJob, ident: int, tree: SwitchGrouping, existing: list[ConfSwitch] | None
) -> tuple[tuple[str, ...], list[str], str]:
    """The nodes left out, the notes for the file's top and its switches' lines.

    Raises:
        UsageError: nodes left out (or not knowable) without --partial or --merge; a merge
            that would put a node under two switches.
    """
    measured = [ConfSwitch(s.name, s.nodes, s.switches) for s in tree.switches]
    merged = None
    if existing is not None:
        try:
            merged = topology_merge.merge(existing, measured, strict.visible(str(job.merge)))
        except topology_merge.MergeConflict as err:
            raise UsageError(str(err)) from None
    switches = merged.switches if merged else measured
    covered = {n for s in switches for n in s.nodes}
    cluster, why_not = _cluster_nodes(job)
    notes: list[str] = []
    if cluster is None:
        if not (job.partial or merged):
            raise UsageError(
                f"-o: Slurm's node list could not be read ({why_not}), so the nodes run"
                f" {ident} left out cannot be named and topology.conf is not written: run it"
                " where sinfo answers, or give --partial (the measured nodes only) or --merge"
                " FILE"
            )
        notes.append(
            f"Slurm's node list could not be read: nodes left out are not known ({why_not})"
        )
    short = {n.split(".", 1)[0] for n in covered}
    left_out = tuple(n for n in cluster or () if n not in covered and n not in short)
    if left_out and not job.partial:
        where = (
            f"run {ident} nor {strict.visible(str(job.merge))} holds"
            if merged
            else f"run {ident} did not measure"
        )
        raise UsageError(
            f"-o: {len(left_out)} of Slurm's {len(cluster or ())} nodes are in no switch ({where}"
            f" them): {topology_conf.compress_hostlist(left_out)}; topology.conf is not written:"
            " measure them too, give --partial to write the file without them (named in a"
            " comment at its top), or --merge FILE to keep an existing topology's switches"
            " for them"
        )
    if left_out:
        notes.append(
            f"partial: {len(left_out)} of Slurm's {len(cluster or ())} nodes are in no switch"
            f" here: {topology_conf.compress_hostlist(left_out)}"
        )
    if merged:
        notes.append(_merge_note(merged, str(job.merge)))
    known = set(cluster or ())
    strangers = [n for s in measured for n in s.nodes if known and n not in known]
    if strangers:  # an FQDN where Slurm has short names, or a node Slurm does not have
        notes.append(
            f"not Slurm's node names (Slurm knows no such node; run the matrix on Slurm's"
            f" names): "
            f"{topology_conf.compress_hostlist(strangers)}"
        )
    return left_out, notes, topology_conf.render(switches)


def _merge_note(merged: topology_merge.Merged, path: str) -> str:
    replaced = ", ".join(merged.replaced) or "none"
    note = (
        f"merged into {strict.visible(path)}: its switches {replaced} replaced by the measured ones"
    )
    if merged.under:
        return note + f", under its switch {merged.under}"
    if len(merged.roots) > 1:
        return note + (
            f"; no switch joins {', '.join(merged.roots)}: Slurm will not place a job across"
            " them; add a SwitchName=NAME Switches=... line above them if it should"
        )
    return note
