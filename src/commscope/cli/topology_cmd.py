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
                                                 for 'predict --cluster' and 'simulate'
  commscope topology latest -o new.conf --merge /etc/slurm/topology.conf
                                                 the measured switches in place of the site
                                                 file's, its others kept for nodes not measured
  commscope topology latest -o part.conf --partial
                                                 the measured nodes only, the rest named atop
then, as root: cp new.conf /etc/slurm/topology.conf; set TopologyPlugin=topology/tree in
slurm.conf; scontrol reconfigure"""


def setup_parser(p: argparse.ArgumentParser) -> None:
    """Declare the options of `commscope topology`."""
    p.add_argument("run", nargs="?", default="latest", help="a matrix run's id [default: latest]")
    p.add_argument("-o", "--output", metavar="FILE", help="write Slurm's topology.conf here")
    p.add_argument(
        "--partial",
        action="store_true",
        help="with -o: write topology.conf though Slurm has nodes the run did not measure (or"
        " Slurm does not answer); a comment at its top names them. Without it (or --merge)"
        " such a file is refused, naming the nodes",
    )
    p.add_argument(
        "--merge",
        metavar="FILE",
        help="with -o: start from this topology.conf (the site's): its switches stay for the"
        " nodes not measured, those whose nodes were all measured are replaced; a switch holding"
        " measured and unmeasured nodes is refused (the node would sit under two switches)",
    )
    p.add_argument("--model", metavar="FILE", help="write the grouping as a cluster model YAML")
    p.add_argument("--json", action="store_true", help="print the switches as JSON")


def run(args: argparse.Namespace) -> int:
    """Infer the switches, print them, write the files asked for."""
    found = topology.infer(
        topology.TopologyJob(
            args.store,
            args.run,
            conf=args.output,
            model=args.model,
            partial=args.partial,
            merge=args.merge,
        )
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
                "written": found.written,
                "left_out": list(found.left_out),
                "notes": found.notes,
            }
        )
        return 0
    print(f"switches of run {found.run_id}, grouped by {tree.source}:")
    print(common.terminal_text(found.conf_text), end="")
    for path in found.written:
        print(f"written: {common.terminal_text(path)}")
    for note in found.notes:  # what the file's top says: nodes left out, switches replaced
        print(f"note: {common.terminal_text(note)}")
    return 0
