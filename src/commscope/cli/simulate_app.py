"""`commscope simulate app` and `simulate hpl`: whole MPI programs on a SimGrid model.

Each simulated run is stored as a run of kind ``app`` or ``hpl`` whose data (simulated and
wall time, output, HPL's figures, the network load) is kept with it under the same name.
"""

from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from commscope.cli import common, program_runs, simulate_options
from commscope.errors import UsageError

if TYPE_CHECKING:
    from commscope.predict.model import ClusterModel
    from commscope.simulate.params import SimParams

DEFAULT_TIMEOUT_S = 3600.0


def _common_options(p: argparse.ArgumentParser) -> None:
    simulate_options.add_model_option(p)
    p.add_argument(
        "--sweep",
        action="append",
        default=[],
        metavar="NAME=V1,V2,...",
        help="one run per value of a model parameter"
        f" ({', '.join(simulate_options.sweep_names())})",
    )
    p.add_argument(
        "--netload", action="store_true", help="trace the run and keep the load on the links"
    )
    p.add_argument(
        "--smpi-cfg",
        action="append",
        default=[],
        metavar="NAME:VALUE",
        help="extra SimGrid option, e.g. smpi/shared-malloc:global (repeatable)",
    )
    common.option(
        p,
        "--timeout",
        type=common.number(1, 7 * 86400),
        default=DEFAULT_TIMEOUT_S,
        help="wall-time limit of each simulation, seconds",
    )
    common.option(p, "--label", type=common.label, help="a name for the run(s)")
    p.add_argument("--json", action="store_true", help="print the runs as JSON")


def _app_options(p: argparse.ArgumentParser) -> None:
    _common_options(p)
    common.option(
        p,
        "--np",
        type=common.whole(1, 100_000),
        help="ranks, filling the model's cores node by node [default: every core]",
    )


class _LateOptions(argparse.ArgumentParser):
    """The options written after SOURCE; an error is a UsageError, printed once."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"simulate app: {message}; the program's arguments go after '--'")


def _split_program(args: argparse.Namespace) -> list[str]:
    """Options after SOURCE into ``args``; the program's arguments (after '--') returned.

    argparse hands everything after the first positional to the REMAINDER, options included.
    """
    words = list(args.program)
    head, tail = (
        (words[: words.index("--")], words[words.index("--") + 1 :])
        if "--" in words
        else (words, [])
    )
    parser = _LateOptions(prog="commscope simulate app SOURCE", add_help=False)
    _app_options(parser)
    parser.parse_args(head, namespace=args)
    return tail


def add_parsers(actions: Any) -> None:
    """Declare `simulate app` and `simulate hpl` on the `simulate` sub-parsers."""
    app = actions.add_parser(
        "app",
        help="build an MPI program with smpicc and run it on the model",
        description="Build an MPI C program (one file, or a directory whose Makefile takes"
        " CC=smpicc) and run it under smpirun on the model; its arguments follow '--'.",
        epilog="""examples:
  commscope simulate app ring.c --cluster c.yaml --np 8 --netload -- 1048576
  commscope simulate app ./miniapp --cluster c.yaml --sweep nic-latency=1us,10us -- -n 100
""",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _app_options(app)
    app.add_argument("source", metavar="SOURCE", help="a .c file or a directory with a Makefile")
    app.add_argument(
        "program",
        nargs=argparse.REMAINDER,
        metavar="-- ARGS",
        help="the program's arguments, after '--'",
    )

    hpl = actions.add_parser(
        "hpl",
        help="run HPL (HPC Challenge's) on the model, one run per grid",
        description="Build HPL with smpicc from the HPC Challenge source and solve one"
        " system per process grid on the model, as Rechistov et al. 2012 validated theirs.",
        epilog="""examples:
  commscope simulate hpl --matrix-order 4000 --grid 1x4,2x2 --cluster c.yaml \\
      --source hpcc_1.5.0.orig.tar.gz
  commscope simulate hpl --grid 2x2 --cluster c.yaml --sweep switch-latency=80us,400us
""",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _common_options(hpl)
    program_runs.add_matrix_order(hpl, 4000)
    common.option(
        hpl, "--nb", type=common.whole(1, 4096), default=128, help="block size (HPL's NB)"
    )
    common.option(hpl, "--grid", default="2x2", help="process grids PxQ[,PxQ...] (one run each)")
    common.option(
        hpl,
        "--np",
        type=common.whole(1, 100_000),
        help="ranks; when given, every grid's P x Q must equal it",
    )
    common.option(
        hpl,
        "--source",
        env="COMMSCOPE_HPL_SOURCE",
        metavar="PATH",
        help="HPC Challenge 1.5.0 source: its tarball or unpacked tree (apt-get source hpcc)",
    )


def _load(args: argparse.Namespace) -> tuple[ClusterModel, SimParams]:
    from commscope.simulate import setup

    common.require(bool(args.cluster), "--cluster FILE: simulate needs a cluster model")
    return setup.load(args.cluster)


def _sweeps(args: argparse.Namespace, model: ClusterModel, params: SimParams) -> list[Any]:
    from commscope.simulate.sweeps import expand_sweeps

    return expand_sweeps(args.sweep, model, params)


def _simulate(
    args: argparse.Namespace,
    store: Any,
    what: dict[str, Any],
    sim: dict[str, Any],
    program: list[str],
    setup_dir: Any = None,
) -> tuple[int, dict[str, Any]]:
    """Run ``program`` on ``sim`` in a fresh directory; store the run; its id and data."""
    from commscope.measure import hpl
    from commscope.simulate import app

    with tempfile.TemporaryDirectory(prefix="commscope-app-") as tmp:
        workdir = Path(tmp)
        if setup_dir is not None:
            setup_dir(workdir)
        result, code, text = app.run(sim, program, workdir, args.timeout)
        tag = f"{what['kind']}-{os.getpid()}"
        if code != 0:
            raise app.failed(program[0], code, text, tag)
        if result.simulated_s != result.simulated_s:  # NaN: SimGrid printed no time
            raise app.failed(program[0], code, text + "\n(no simulated time printed)\n", tag)
        data: dict[str, Any] = {**what, **result.to_json()}
        if "grid" in what:  # HPL on a process grid: its figures are in its output file
            out = workdir / hpl.OUTPUT_FILE
            parsed = hpl.parse_output(out.read_text("utf-8", "replace") if out.exists() else "")
            if parsed is None:
                raise app.failed(program[0], code, text + "\n(HPL printed no result)\n", tag)
            data.update(parsed.to_json())
        if sim["netload"]:
            data["netload"] = _netload(sim, workdir)
    mpi = f"simgrid-{sim['simgrid']}"
    request = {"benchmark": what["kind"], "np": sim["np"], "what": what, "simulate": sim}
    rid: int = store.create_run(what["kind"], what.get("label"), mpi, "smpirun", sim["np"], request)
    store.set_run_data(rid, what["kind"], data)
    store.set_run_status(rid, "complete")
    return rid, data


def _netload(sim: dict[str, Any], workdir: Path) -> dict[str, Any]:
    """Per-link load, and the switch's.

    The switch carries every MPI message between nodes (each leaves its node by one NIC):
    counted from the traced messages and their sizes.
    """
    from commscope.predict import model_from_dict
    from commscope.simulate import netload

    model = model_from_dict(sim["model_file"], "the run's model")
    # A program marks no phases: all its traffic is its own (``all``).
    load = netload.link_loads(workdir / netload.TRACE_FILE, model, sim["rank_node"])
    loads, duration = load.all, load.duration_s
    ups = [x for x in loads if x.link.endswith("-nic-up")]
    messages = sum(x.messages for x in ups)
    moved = sum(x.bytes for x in ups)
    return {
        "duration_s": duration,
        "links": [x.to_json(duration) for x in loads],
        "switch": {
            "bytes": moved,
            "messages": messages,
            "mean_message_bytes": moved / messages if messages else None,
            "mbit_per_s": moved * 8 / duration / 1e6 if duration > 0 else None,
        },
    }


def run_app(args: argparse.Namespace) -> int:
    """`simulate app`: build the program, run it once per swept value, store each run."""
    from commscope.simulate import app

    program_args = _split_program(args)
    model, params = _load(args)
    source = Path(args.source)
    np = args.np or model.nodes * model.cores_per_node
    app.rank_nodes(model, np)  # refuse too many ranks before building
    sweeps = _sweeps(args, model, params)
    binary = app.build(source)
    host = app.host_flops()
    rows = []
    with common.open_store(args) as store:
        for tag, swept_model, p, sweep in sweeps:
            sim = {
                **app.simulation(swept_model, p, np, args.netload, host, args.smpi_cfg),
                "sweep": sweep,
            }
            label = " ".join(x for x in (args.label, tag) if x) or None
            what = {
                "kind": program_runs.APP,
                "source": str(source),
                "args": program_args,
                "label": label,
            }
            rid, data = _simulate(args, store, what, sim, [str(binary), *program_args])
            rows.append({"run": rid, "sweep": tag, **data})
    program_runs.show_runs(args, rows, ("simulated_s", "wall_s"))
    return 0


def run_hpl(args: argparse.Namespace) -> int:
    """`simulate hpl`: one HPL solve per grid (and swept value), each stored as a run."""
    from commscope.measure import hpl
    from commscope.simulate import app

    model, params = _load(args)
    grids = hpl.parse_grids(args.grid, args.np)
    for p, q in grids:
        app.rank_nodes(model, p * q, f"--grid {p}x{q}")
    common.require(bool(args.source), f"--source: missing; {hpl.SOURCE_HINT}")
    sweeps = _sweeps(args, model, params)
    binary = app.build_hpl(Path(args.source))
    host = app.host_flops()
    rows = []
    with common.open_store(args) as store:
        for p, q in grids:
            for tag, swept_model, sp, sweep in sweeps:
                sim = app.simulation(swept_model, sp, p * q, args.netload, host, args.smpi_cfg)
                sim["sweep"] = sweep
                text = hpl.input_file(args.n, args.nb, p, q)
                label = " ".join(x for x in (args.label, f"{p}x{q}", tag) if x)
                what = {"kind": program_runs.HPL, "label": label, "grid": f"{p}x{q}"}

                def write_input(workdir: Path, text: str = text) -> None:
                    (workdir / hpl.INPUT_FILE).write_text(text, "utf-8")

                rid, data = _simulate(args, store, what, sim, [str(binary)], write_input)
                if not data["passed"]:
                    common.console(stderr=True).print(
                        f"run {rid}: HPL's residual check FAILED on {p}x{q}"
                    )
                rows.append({"run": rid, "sweep": tag, **data})
    program_runs.show_runs(args, rows, ("gflops", "passed", "simulated_s", "wall_s"))
    return 0 if all(r["passed"] for r in rows) else 1
