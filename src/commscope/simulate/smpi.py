"""SimGrid's tools, the engine built for SMPI, and the smpirun job of a simulated run."""

from __future__ import annotations

import hashlib
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

from commscope.errors import EngineError, SimulateError
from commscope.measure import engine
from commscope.measure.launch import Job
from commscope.measure.mpi import MPIInstall
from commscope.simulate.params import SimParams

INSTALL_HINT = "install SimGrid (Debian: apt-get install libsimgrid-dev)"
ENGINE_NAME = "commscope-engine"

# Collective algorithms chosen explicitly: SimGrid's default selector picks algorithms that
# abort for some rank counts (its "pair" all-to-all needs a power of two). Open MPI's decision
# logic, all-to-all included: the linear one (one batch of Isend/Irecv, the prediction's
# block = p; --smpi-cfg smpi/alltoall:basic_linear) took 59 s of wall time per 1 MiB launch
# at 192 ranks against Open MPI's choice's 31 s, as SimGrid re-solves 36,672 flows at once.
COLLECTIVES = ("smpi/coll-selector:ompi",)
BASE_CONFIG = (
    # Communication only: the engine's own CPU time between MPI calls costs nothing.
    "smpi/simulate-computation:no",
    # All ranks share buffers mapped block by block; big blocks keep large runs under the
    # kernel's map count limit (vm.max_map_count).
    "smpi/shared-malloc-blocksize:268435456",
)


def tools() -> tuple[str, str]:
    """Paths of smpicc and smpirun."""
    cc, run = shutil.which("smpicc"), shutil.which("smpirun")
    if not cc or not run:
        raise SimulateError(f"smpicc and smpirun are not on PATH; {INSTALL_HINT}")
    return cc, run


def version() -> str:
    """SimGrid's version, e.g. ``3.32``."""
    _, run = tools()
    try:
        out = subprocess.run([run, "-version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError) as err:
        raise SimulateError(f"{run} -version failed; {INSTALL_HINT}") from err
    m = re.search(r"SimGrid version (\S+)", out.stdout + out.stderr)
    if not m:
        raise SimulateError(f"{run} -version did not name a SimGrid version; {INSTALL_HINT}")
    return m.group(1)


def install() -> MPIInstall:
    """SimGrid as the MPI a simulated run records."""
    cc, run = tools()
    return MPIInstall("simgrid", "simgrid", version(), cc, run)


def engine_path() -> Path:
    """The engine built with smpicc from these sources (built once, then cached)."""
    cc, _ = tools()
    digest = hashlib.sha256(f"{version()}:{engine.sources_digest()}".encode()).hexdigest()[:12]
    dest = engine.cache_dir() / f"simgrid-{version()}-{digest}"
    path = dest / ENGINE_NAME
    if path.is_file():
        return path
    try:
        with engine.cmake_build(
            "smpi", [ENGINE_NAME], [f"CMAKE_C_COMPILER={cc}"], f"the engine with {cc}"
        ) as build_dir:
            return engine.install_binary(build_dir / ENGINE_NAME, path)
    except EngineError as err:
        raise SimulateError(f"{err}; {INSTALL_HINT}") from err


def config(params: SimParams, extra: list[str] | tuple[str, ...] = ()) -> list[str]:
    """Every SimGrid option of a run (name:value), in the order given to smpirun."""
    cfg = list(BASE_CONFIG) + list(COLLECTIVES)
    if params.lat_factor:
        cfg.append("smpi/lat-factor:" + ";".join(f"{s}:{f:.9g}" for s, f in params.lat_factor))
    if params.bw_factor:
        cfg.append("smpi/bw-factor:" + ";".join(f"{s}:{f:.9g}" for s, f in params.bw_factor))
    if params.send_overhead:  # smpi/os: from size, seconds, seconds per byte
        cfg.append("smpi/os:" + ";".join(f"{s}:{o:.9g}:0" for s, o in params.send_overhead))
    cfg.append(f"network/crosstraffic:{1 if params.crosstraffic else 0}")
    cfg += [
        f"smpi/async-small-thresh:{params.eager_bytes}",
        f"smpi/send-is-detached-thresh:{params.eager_bytes}",
    ]
    for item in extra:
        if ":" not in item or item.startswith(":"):
            raise SimulateError(
                f"--smpi-cfg {item}: give NAME:VALUE, e.g. smpi/bcast:binomial_tree"
            )
    # Later options win in SimGrid, so the user's extras come last.
    return cfg + list(extra)


def neutral_factors() -> list[str]:
    """Options that make SMPI's time exactly latency + size / bandwidth (no factors)."""
    return ["smpi/bw-factor:0:1", "smpi/lat-factor:0:1"]


def job(sim: dict[str, Any], program: list[str], workdir: Path) -> Job:
    """The smpirun job of a simulated run whose files are in ``workdir``."""
    _, run = tools()
    config = list(sim["config"])
    if sim.get("netload"):
        from commscope.simulate import netload

        config += [*netload.TRACE_CONFIG, f"tracing/filename:{workdir / netload.TRACE_FILE}"]
    argv = [
        run,
        "-np",
        str(sim["np"]),
        "-platform",
        str(workdir / "platform.xml"),
        "-hostfile",
        str(workdir / "hostfile"),
        "--log=root.thres:warning",
        *[f"--cfg={c}" for c in config],
        *program,
    ]
    # smpirun's -tmpdir option is broken in 3.32; TMPDIR works.
    return Job(argv, {"TMPDIR": str(workdir)})


def keep_trace_results(sim: dict[str, Any], workdir: Path, store: Any, run_id: int) -> None:
    """After a traced run: store its network load per link (kind ``netload``)."""
    if not sim.get("netload"):
        return
    from commscope.predict import model_from_dict
    from commscope.simulate import netload

    model = model_from_dict(sim["model_file"], "the run's model")
    header = store.get_run(run_id).header_record
    ops = str(header.options.get("ops") or "").split(",") if header else []
    load = netload.link_loads(workdir / netload.TRACE_FILE, model, sim["rank_node"], ops)
    store.set_run_data(run_id, "netload", load.to_json())


def job_in(sim: dict[str, Any], program: list[str], workdir: Path) -> Job:
    """Write the recorded platform and hostfile into ``workdir``; return the smpirun job."""
    (workdir / "platform.xml").write_text(sim["platform_xml"], "utf-8")
    (workdir / "hostfile").write_text(sim["hostfile"], "utf-8")
    return job(sim, program, workdir)


class SimulatedLaunch:
    """The runner's view of a simulated run (``commscope.measure.runner.Simulation``)."""

    def __init__(self, sim: dict[str, Any]) -> None:
        self.sim = sim

    def engine_path(self) -> Path:
        """The engine built with smpicc."""
        return engine_path()

    def job(self, program: list[str], workdir: Path) -> Job:
        """The smpirun job, with the recorded platform and hostfile written into ``workdir``."""
        return job_in(self.sim, program, workdir)

    def keep_results(self, workdir: Path, store: Any, run_id: int) -> None:
        """Store the traced network load, when the run asked for it."""
        keep_trace_results(self.sim, workdir, store, run_id)
