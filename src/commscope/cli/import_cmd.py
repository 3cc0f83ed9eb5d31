"""`commscope import`: another suite's output (OSU, IMB, NetPIPE) as a stored run."""

from __future__ import annotations

import argparse
import os

from commscope import importers
from commscope.cli import common

HELP = "store the text output of OSU, IMB-MPI1 or NetPIPE as a run"
EXAMPLES = """examples:
  commscope import netpipe np.out --label mtu-9000 --pair inter-node
  commscope import osu osu_latency.txt --label ompi-shm --pair intra-node
  commscope import osu osu_allreduce.txt --label ib --nranks 64
  commscope import imb IMB-MPI1.log --label mpich --pair inter-node
  commscope compare 3 4 --labels tcp,ib      (then compare imported and measured runs)
"""


def setup_parser(p: argparse.ArgumentParser) -> None:
    """Declare the options of `commscope import`."""
    p.add_argument("format", choices=importers.FORMATS, help="whose output FILE is")
    p.add_argument("file", help="the benchmark's text output")
    p.add_argument(
        "--label", required=True, type=common.label, help="name of the run, e.g. the configuration"
    )
    common.option(
        p,
        "--pair",
        default="unknown",
        choices=importers.PAIR_LABELS,
        help="where the two ranks of point-to-point tests ran",
    )
    p.add_argument(
        "--nranks",
        type=common.ranks,
        default=None,
        help="processes the OSU collectives ran on (their output does not say)",
    )
    p.add_argument("--json", action="store_true", help="machine-readable summary")


def run(args: argparse.Namespace) -> int:
    """Read the whole file, then store it as one run."""
    imported = importers.load(args.format, args.file, args.pair, args.nranks)
    from commscope.jobs import figures

    with common.open_store(args) as store:
        run_id = importers.store_imported(store, imported, args.label)
        figures.keep(store, run_id)
    path = os.path.abspath(args.file)
    if args.json:
        common.print_json(
            {
                "run": run_id,
                "format": args.format,
                "file": path,
                "label": args.label,
                "points": imported.n_points,
                "collectives": imported.n_colls,
                "notes": list(imported.notes),
            }
        )
        return 0
    print(
        common.terminal_text(
            f"imported {path} ({args.format}) as run {run_id} '{args.label}':"
            f" {imported.n_points} point-to-point sizes, {imported.n_colls} collective sizes"
        )
    )
    for note in imported.notes:
        print(common.terminal_text(f"note: {note}"))
    return 0
