"""``commscope topology``: switches grouped from a measured matrix; Slurm's topology.conf."""

from __future__ import annotations

import argparse

from commscope.cli import common
from commscope.errors import UsageError

NAME = "topology"
HELP = "group nodes into switches from a measured all-pairs matrix; write Slurm's topology.conf"
EXAMPLES = """examples:
  commscope run matrix --hostfile hosts          measure every node pair first
  commscope topology latest                      print the switches found
  commscope topology latest -o topology.conf --model cluster.yaml
                                                 Slurm's topology/tree file and a cluster model
                                                 for 'predict --cluster' and 'simulate'"""


def setup_parser(p: argparse.ArgumentParser) -> None:
    """Declare the options of `commscope topology`."""
    p.add_argument("run", nargs="?", default="latest", help="a matrix run's id [default: latest]")
    p.add_argument("-o", "--output", metavar="FILE", help="write Slurm's topology.conf here")
    p.add_argument("--model", metavar="FILE", help="write the grouping as a cluster model YAML")
    p.add_argument("--json", action="store_true", help="print the switches as JSON")


def run(args: argparse.Namespace) -> int:
    """Infer the switches, print them, write the files asked for."""
    import numpy as np
    import yaml

    from commscope import safe_write
    from commscope.analysis import matrix as matrix_analysis
    from commscope.analysis import switch_groups
    from commscope.data.run_data import read_run
    from commscope.predict.model_switch_groups import model_document

    for path, flag in ((args.output, "-o"), (args.model, "--model")):
        if path:
            safe_write.check_target(path, flag)
    with common.open_store(args, write=False) as store:
        run = read_run(store, store.resolve_run(args.run))
    points = run.family("paired")
    ident = run.info.id
    if not points:
        raise UsageError(
            f"run {ident} holds no all-pairs matrix; measure one with 'commscope run matrix'"
            " and give its id"
        )
    header = run.info.header
    nranks = int(header["nranks"]) if header else 1 + max(max(p.ranks) for p in points)
    found = matrix_analysis.matrices(points, matrix_analysis.node_names(header, nranks))
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
    ranks_per_node = max(1, nranks // len(set(names)))
    if args.output:
        safe_write.write_text(args.output, f"# commscope topology of run {ident}\n{text}", "-o")
    if args.model:
        doc = model_document(tree, f"run{ident}-topology", ranks_per_node)
        head = (
            f"# commscope topology of run {ident} ({tree.source}); sockets and cores are what"
            " the run recorded: set them to the nodes' real counts\n"
        )
        safe_write.write_text(args.model, head + yaml.safe_dump(doc, sort_keys=False), "--model")
    if args.json:
        common.print_json(
            {
                "run": ident,
                "source": tree.source,
                "switches": [
                    {
                        "name": s.name,
                        "nodes": list(s.nodes),
                        "switches": list(s.switches),
                        "bandwidth_Bps": s.bandwidth_Bps,
                        "latency_s": s.latency_s,
                    }
                    for s in tree.switches
                ],
            }
        )
        return 0
    print(f"switches of run {ident}, grouped by {tree.source}:")
    print(common.terminal_text(text), end="")
    for path in (args.output, args.model):
        if path:
            print(f"written: {common.terminal_text(path)}")
    return 0
