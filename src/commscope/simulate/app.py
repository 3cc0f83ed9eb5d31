"""Any MPI program on a cluster model: built with smpicc, run under smpirun.

Its computation is timed for real and charged to the model's cores (SimGrid's
``smpi/simulate-computation``): SMPI turns each stretch of host time between MPI calls into
flops at ``smpi/host-speed`` (the simulating host's measured rate) and runs them on the
platform's cores, whose speed is the model's ``simulation.core_speed`` (else the host's own,
so compute costs what it cost here). As in Rechistov et al. 2012, "Simulation of a
cluster: the Simics-based approach", the program itself is the workload.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import re
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from commscope import safe_write
from commscope.errors import InputError, SimulateError
from commscope.measure import builds, hpl
from commscope.predict.model import ClusterModel
from commscope.simulate import platform, smpi
from commscope.simulate.params import SimParams

# Kept of a program's output: its tail, so a long-running program cannot fill the store.
OUTPUT_LIMIT = 64 * 1024
LOG_TAIL_LINES = 20
_SIMULATED = re.compile(r"Simulated time: ([0-9.eE+-]+) seconds")
# smpirun's own log is muted to warnings (smpi.job); the line with the simulated time is
# SimGrid's smpi_utils INFO log, so that category alone is let through.
TIMING_LOG = "--log=smpi_utils.thres:info"
COMPUTE_CONFIG = ("smpi/simulate-computation:yes", "smpi/display-timing:yes")


@dataclass(frozen=True)
class AppResult:
    """One simulated run of a program."""

    simulated_s: float
    wall_s: float
    output: str
    host_flops: float
    core_flops: float

    def to_json(self) -> dict[str, Any]:
        """Plain dict for the run's data."""
        return {
            "simulated_s": self.simulated_s,
            "wall_s": self.wall_s,
            "output": self.output,
            "host_flops": self.host_flops,
            "core_flops": self.core_flops,
        }


def host_flops(n: int = 192, rounds: int = 3) -> float:
    """This host's flop rate in the system BLAS's dgemm (best of ``rounds``), flop/s.

    The rate SMPI converts measured compute time with: programs such as HPL spend their
    time in that dgemm, so it is the host's speed for the work being simulated.
    """
    name = ctypes.util.find_library("blas")
    if not name:
        raise SimulateError("no BLAS library found; install one (Debian: apt-get install libblas3)")
    blas = ctypes.CDLL(name)
    size = n * n
    a = (ctypes.c_double * size)(*([1.0 / n] * size))
    b = (ctypes.c_double * size)(*([0.5] * size))
    c = (ctypes.c_double * size)()
    # Fortran passes every argument by reference; the two string lengths come last.
    dim = ctypes.byref(ctypes.c_int(n))
    one, zero = ctypes.byref(ctypes.c_double(1.0)), ctypes.byref(ctypes.c_double(0.0))
    no = ctypes.c_char_p(b"N")
    best = float("inf")
    for _ in range(rounds):
        start = time.perf_counter()
        blas.dgemm_(
            no,
            no,
            dim,
            dim,
            dim,
            one,
            a,
            dim,
            b,
            dim,
            zero,
            c,
            dim,
            ctypes.c_size_t(1),
            ctypes.c_size_t(1),
        )
        best = min(best, time.perf_counter() - start)
    return 2.0 * n**3 / best


def build(source: Path) -> Path:
    """The program built with smpicc from one C file, or a directory with a Makefile.

    Raises:
        InputError: the source is missing or not buildable (the log's file is named).
    """
    cc, _ = smpi.tools()
    if source.is_file():
        if source.suffix != ".c":
            raise InputError(f"{source}: give a C file (.c) or a directory with a Makefile")

        def one_file(tmp: Path) -> tuple[Path | None, str]:
            argv = [cc, "-O2", "-o", str(tmp / "program"), str(source.resolve()), "-lm"]
            code, log = builds.run_build(argv, tmp)
            return (tmp / "program" if code == 0 else None), log

        return builds.compile_and_cache(str(source), _digest(source, ""), one_file)
    if source.is_dir():
        if not any((source / m).is_file() for m in ("Makefile", "makefile", "GNUmakefile")):
            raise InputError(f"{source}: no Makefile there; give a C file or a directory with one")

        def with_make(tmp: Path) -> tuple[Path | None, str]:
            tree = tmp / "src"
            shutil.copytree(source, tree, symlinks=True)
            before = set(_executables(tree))
            code, log = builds.run_build(["make", f"CC={cc}", f"MPICC={cc}"], tree)
            made = sorted(set(_executables(tree)) - before)
            if code == 0 and len(made) != 1:
                log += f"\nmake built {len(made)} programs; one is needed: {made}\n"
                return None, log
            return (made[0] if code == 0 else None), log

        return builds.compile_and_cache(str(source), _digest(source, "make"), with_make)
    raise InputError(f"{source}: no such file or directory; give a C file or a directory")


def _digest(source: Path, salt: str) -> str:
    return builds.digest(source, salt, smpi.version())


def build_hpl(source: Path) -> Path:
    """HPL (``measure.hpl``) built with smpicc from the HPC Challenge source, cached by digest.

    Raises:
        InputError: the source is missing, not HPC Challenge's, or does not build.
    """
    hpl.check_source(source)
    return hpl.build(source, smpi.tools()[0], smpi.version(), real_mpi=False)


def _executables(tree: Path) -> list[Path]:
    return [p for p in tree.rglob("*") if p.is_file() and os.access(p, os.X_OK)]


def rank_nodes(model: ClusterModel, np: int, flag: str = "") -> list[int]:
    """Per rank, its node: the model's cores filled node by node (block order).

    ``flag`` names the option that asked for ``np`` ranks in the error.
    """
    per_node = model.cores_per_node
    if np > model.nodes * per_node:
        raise InputError(
            f"{flag or f'--np {np}'}: {np} ranks but the model has {model.nodes} nodes x"
            f" {per_node} cores = {model.nodes * per_node}; give at most that many ranks"
        )
    return [r // per_node for r in range(np)]


def simulation(
    model: ClusterModel,
    params: SimParams,
    np: int,
    netload: bool,
    host: float,
    extra: list[str] | tuple[str, ...] = (),
) -> dict[str, Any]:
    """What ``smpi.job`` needs (config, ranks, platform, hostfile), recorded with the run."""
    from commscope.simulate.setup import model_document

    if netload:
        platform.check_netload(model)
    nodes = rank_nodes(model, np)
    core = params.core_flops or host
    config = smpi.config(params, [*COMPUTE_CONFIG, f"smpi/host-speed:{host:.9g}f", *extra])
    return {
        "np": np,
        "simgrid": smpi.version(),
        "config": config,
        "netload": netload,
        "rank_node": nodes,
        "model": model.to_json(),
        "params": params.to_json(),
        "model_file": model_document(model, params),
        "host_flops": host,
        "core_flops": core,
        "platform_xml": platform.platform_xml(model, params, core),
        "hostfile": "".join(f"{model.node_names[n]}\n" for n in nodes),
    }


def run(
    sim: dict[str, Any], program: list[str], workdir: Path, timeout_s: float
) -> tuple[AppResult, int, str]:
    """Run ``program`` under smpirun in ``workdir``: the result, exit status and full output."""
    job = smpi.job_in(sim, [TIMING_LOG, *program], workdir)
    env = dict(os.environ)
    env.update(job.env)
    start = time.monotonic()
    try:
        out = subprocess.run(
            job.argv,
            cwd=workdir,
            env=env,
            capture_output=True,
            text=True,
            errors="replace",
            timeout=timeout_s,
        )
    except subprocess.TimeoutExpired:
        raise SimulateError(
            f"{program[0]}: the simulation ran past {timeout_s:g} s of wall time;"
            " give a smaller problem or a longer --timeout"
        ) from None
    except OSError as err:
        raise SimulateError(f"{job.argv[0]}: cannot start ({err.strerror})") from None
    wall = time.monotonic() - start
    text = out.stdout + out.stderr
    found = _SIMULATED.findall(text)
    simulated = float(found[-1]) if found else float("nan")
    kept = out.stdout[-OUTPUT_LIMIT:]
    result = AppResult(simulated, wall, kept, sim["host_flops"], sim["core_flops"])
    return result, out.returncode, text


def failed(what: str, code: int, text: str, tag: str) -> SimulateError:
    """The one-line error of a program that exited non-zero; its output kept in a file."""
    path = builds.apps_dir() / f"run-{tag}.log"
    path.parent.mkdir(parents=True, exist_ok=True)
    safe_write.write_text(path, text)
    return SimulateError(
        f"{what}: exited with status {code} ({builds.last_line(text)}); its output is in {path}"
    )
