"""`simulate app` and `simulate hpl`: whole MPI programs on a SimGrid model, a run each.

A program (one C file, or a directory whose Makefile takes CC=smpicc) or HPC Challenge's HPL
is built with smpicc (:mod:`commscope.simulate.app`, cached by digest), then run under
smpirun once per swept value, HPL once per process grid too. Each run is stored once it
ended, complete, as a run of kind ``app`` or ``hpl`` whose data (simulated and wall time,
output, HPL's figures, the network load) is kept with it under the same name.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from commscope.data.store import Store
from commscope.errors import UsageError
from commscope.jobs import programs, runs

if TYPE_CHECKING:
    from commscope.predict.model import ClusterModel
    from commscope.simulate.params import SimParams


@dataclass(frozen=True)
class OnModel:
    """What every simulated program's runs take: the model, what is swept, the limits.

    Attributes:
        cluster: the cluster model's YAML file (None is refused).
        sweep: swept parameters, ``NAME=V1,V2,...`` each; a run per value.
        netload: trace each run and keep the load on the links.
        smpi_cfg: extra SimGrid options, ``NAME:VALUE`` each.
        timeout: wall-time limit of each simulation, seconds.
        label: the runs' label; each also gets its grid and swept value.
    """

    cluster: str | None
    sweep: tuple[str, ...]
    netload: bool
    smpi_cfg: tuple[str, ...]
    timeout: float
    label: str | None = None


@dataclass(frozen=True)
class AppJob:
    """An MPI program simulated as asked.

    Attributes:
        source: a .c file, or a directory whose Makefile takes CC=smpicc.
        args: the program's arguments.
        on: the model and what is swept.
        np: ranks, filling the model's cores node by node (None: every core).
    """

    source: str
    args: tuple[str, ...]
    on: OnModel
    np: int | None = None


@dataclass(frozen=True)
class SimulatedHplJob:
    """HPL simulated as asked: a solve per process grid and swept value.

    Attributes:
        source: HPC Challenge 1.5.0's source, its tarball or tree (None is refused).
        grid: the process grids as given, ``PxQ[,PxQ...]``.
        n: the matrix order (HPL's N); nb: the block size (HPL's NB).
        on: the model and what is swept.
        np: ranks; when given, every grid's P x Q must equal it.
    """

    source: str | None
    grid: str
    n: int
    nb: int
    on: OnModel
    np: int | None = None


def run_app(store_path: str, job: AppJob) -> programs.ProgramRuns:
    """Build the program, run it once per swept value, store each run."""
    from commscope.simulate import app
    from commscope.simulate.sweeps import expand_sweeps

    model, params = _load(job.on)
    source = Path(job.source)
    np = job.np or model.nodes * model.cores_per_node
    app.rank_nodes(model, np)  # refuse too many ranks before building
    sweeps = expand_sweeps(list(job.on.sweep), model, params)
    binary = app.build(source)
    host = app.host_flops()
    done = []
    with Store.open(store_path) as store:
        for tag, swept_model, p, sweep in sweeps:
            sim = {
                **app.simulation(swept_model, p, np, job.on.netload, host, job.on.smpi_cfg),
                "sweep": sweep,
            }
            label = " ".join(x for x in (job.on.label, tag) if x) or None
            what = {
                "kind": programs.APP,
                "source": str(source),
                "args": list(job.args),
                "label": label,
            }
            program = [str(binary), *job.args]
            rid, data = _simulate(store, job.on.timeout, what, sim, program)
            done.append(programs.ProgramRun(rid, tag, data))
    return programs.ProgramRuns(tuple(done))


def run_hpl(
    store_path: str, job: SimulatedHplJob, note: runs.Note | None = None
) -> programs.ProgramRuns:
    """One HPL solve per grid (and swept value), each stored as a run.

    ``note`` hears of a solve whose residual check failed.
    """
    from commscope.measure import hpl
    from commscope.simulate import app
    from commscope.simulate.sweeps import expand_sweeps

    model, params = _load(job.on)
    grids = hpl.parse_grids(job.grid, job.np)
    for p, q in grids:
        app.rank_nodes(model, p * q, f"--grid {p}x{q}")
    if not job.source:
        raise UsageError(f"--source: missing; {hpl.SOURCE_HINT}")
    sweeps = expand_sweeps(list(job.on.sweep), model, params)
    binary = app.build_hpl(Path(job.source))
    host = app.host_flops()
    done = []
    with Store.open(store_path) as store:
        for p, q in grids:
            for tag, swept_model, sp, sweep in sweeps:
                sim = app.simulation(swept_model, sp, p * q, job.on.netload, host, job.on.smpi_cfg)
                sim["sweep"] = sweep
                text = hpl.input_file(job.n, job.nb, p, q)
                label = " ".join(x for x in (job.on.label, f"{p}x{q}", tag) if x)
                what = {"kind": programs.HPL, "label": label, "grid": f"{p}x{q}"}

                def write_input(workdir: Path, text: str = text) -> None:
                    (workdir / hpl.INPUT_FILE).write_text(text, "utf-8")

                rid, data = _simulate(store, job.on.timeout, what, sim, [str(binary)], write_input)
                solved = programs.ProgramRun(rid, tag, data)
                programs.note_failed_check(solved, note)
                done.append(solved)
    return programs.ProgramRuns(tuple(done))


def _load(on: OnModel) -> tuple[ClusterModel, SimParams]:
    from commscope.simulate import setup

    if not on.cluster:
        raise UsageError("--cluster FILE: simulate needs a cluster model")
    return setup.load(on.cluster)


def _simulate(
    store: Store,
    timeout: float,
    what: dict[str, Any],
    sim: dict[str, Any],
    program: list[str],
    setup_dir: Callable[[Path], None] | None = None,
) -> tuple[int, dict[str, Any]]:
    """Run ``program`` on ``sim`` in a fresh directory; store the run; its id and data."""
    from commscope.measure import hpl
    from commscope.simulate import app

    with tempfile.TemporaryDirectory(prefix="commscope-app-") as tmp:
        workdir = Path(tmp)
        if setup_dir is not None:
            setup_dir(workdir)
        result, code, text = app.run(sim, program, workdir, timeout)
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
    rid = store.create_run(what["kind"], what.get("label"), mpi, "smpirun", sim["np"], request)
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
