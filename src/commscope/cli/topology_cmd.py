"""``commscope topology``: switches grouped from a measured matrix; Slurm's topology.conf."""

from __future__ import annotations

import argparse

from commscope.cli import common
from commscope.jobs import topology

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
    found = topology.infer(
        topology.TopologyJob(args.store, args.run, conf=args.output, model=args.model)
    )
    tree = found.tree
    if args.json:
        common.print_json(
            {
                "run": found.run_id,
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
    print(f"switches of run {found.run_id}, grouped by {tree.source}:")
    print(common.terminal_text(found.conf_text), end="")
    for path in found.written:
        print(f"written: {common.terminal_text(path)}")
    return 0
