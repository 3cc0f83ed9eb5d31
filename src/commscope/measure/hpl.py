"""HPL built from the HPC Challenge suite, with an MPI's own mpicc or with smpicc.

With an MPI's mpicc it runs on real hosts (`commscope run hpl`); with smpicc on a cluster
model (``simulate.app.build_hpl``), from the same sources and flags. Both write its input file
and read its output the same way.

Rechistov et al. 2012 ("Simulation of a cluster: the Simics-based approach") validated
their cluster model with HPL in the same way.

The source is HPC Challenge 1.5.0 (Debian: ``apt-get source hpcc``): a tarball or its
unpacked tree. Its ``hpl/`` is HPL whose driver became a function, ``HPL_main``, reading
``hpccinf.txt`` (HPL.dat's format) and writing ``hpccoutf.txt``; a small ``main`` of ours
calls it between MPI_Init and MPI_Finalize, and the Fortran-interface BLAS (Debian:
libblas-dev, the reference BLAS) does the arithmetic.
"""

from __future__ import annotations

import os
import re
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from commscope.errors import CommscopeError, InputError, LaunchError, UsageError, interrupt_cause
from commscope.measure import builds, launch

INPUT_FILE = "hpccinf.txt"
OUTPUT_FILE = "hpccoutf.txt"
SOURCE_HINT = (
    "give the HPC Challenge 1.5.0 source (apt-get source hpcc, or its .orig.tar.gz) with"
    " --source or $COMMSCOPE_HPL_SOURCE"
)
# HPL's folders of library and test-driver sources: every .c file in them is built.
SOURCE_DIRS = (
    "src/auxil",
    "src/blas",
    "src/comm",
    "src/grid",
    "src/panel",
    "src/pauxil",
    "src/pfact",
    "src/pgesv",
    "testing/matgen",
    "testing/timer",
    "testing/pmatgen",
    "testing/ptimer",
    "testing/ptest",
)
# Fortran BLAS names with a trailing underscore, Fortran integers as C ints.
CFLAGS = ("-O2", "-w", "-DAdd_", "-DF77_INTEGER=int", "-DStringSunStyle")
# Rank 0 prints it once HPL has returned: a launcher whose MPI_Finalize hangs (MPICH's UCX
# over TCP sometimes does) can then be ended without losing the solve.
DONE_LINE = "commscope: HPL returned"
OUTPUT_LIMIT = 64 * 1024  # as for simulated programs: the tail of what rank 0 wrote
# HPL packs panels with MPI_Address and MPI_Type_struct, removed in MPI-3; Open MPI 4 still
# exports them but hides their declarations unless asked (MPICH and SMPI declare them).
REAL_MPI_CFLAGS = ("-DOMPI_OMIT_MPI1_COMPAT_DECLS=0",)
# HPC Challenge's main runs HPL and six other tests; this one runs HPL alone. On a bad
# input file HPL asks HPC Challenge for defaults (HPCC_Defaults): here that is an error.
DRIVER = r"""
#include <stdio.h>
#include <string.h>
#include "hpl.h"

#define HPL_DONE "HPL_DONE_LINE"

int HPL_main(int argc, char **argv, HPL_RuntimeData *rdata, int *failure);

int HPCC_Defaults(HPL_T_test *test, int *ns, int *n, int *nbs, int *nb, HPL_T_ORDER *pmap,
                  int *npqs, int *p, int *q, int *npfs, HPL_T_FACT *pf, int *nbms, int *nbm,
                  int *ndvs, int *ndv, int *nrfs, HPL_T_FACT *rf, int *ntps, HPL_T_TOP *tp,
                  int *ndhs, int *dh, HPL_T_SWAP *fswap, int *tswap, int *l1notran,
                  int *unotran, int *equil, int *align, MPI_Comm comm) {
  fprintf(stderr, "hpccinf.txt: HPL refused its input\n");
  MPI_Abort(comm, 2);
  return 1;
}

int main(int argc, char **argv) {
  HPL_RuntimeData rdata;
  int failure = 0;
  memset(&rdata, 0, sizeof rdata);
  MPI_Init(&argc, &argv);
  HPL_main(argc, argv, &rdata, &failure);
  int rank;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank == 0) {
    printf("%s\n", HPL_DONE);
    fflush(stdout);
  }
  MPI_Finalize();
  return 0;
}
""".replace("HPL_DONE_LINE", DONE_LINE)
_RESULT = re.compile(
    r"^(W\S+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+([0-9.eE+-]+)\s+([0-9.eE+-]+)\s*$", re.M
)
_RESIDUAL = re.compile(r"\|\|Ax-b\|\|_oo.*=\s*([0-9.eE+-]+)\s*\.+\s*(PASSED|FAILED)")


@dataclass(frozen=True)
class HPLResult:
    """HPL's own report of one solve (times in simulated seconds)."""

    n: int
    nb: int
    p: int
    q: int
    time_s: float
    gflops: float
    residual: float | None
    passed: bool

    def to_json(self) -> dict[str, Any]:
        """Plain dict for the run's data."""
        return {
            "n": self.n,
            "nb": self.nb,
            "p": self.p,
            "q": self.q,
            "hpl_time_s": self.time_s,
            "gflops": self.gflops,
            "residual": self.residual,
            "passed": self.passed,
        }


def parse_grids(text: str, np: int | None = None) -> list[tuple[int, int]]:
    """``PxQ[,PxQ...]`` as (P, Q) pairs; with ``np`` (--np), each must hold that many ranks."""
    from commscope.measure.compute import hpcc

    try:
        grids = [hpcc.parse_grid(item.strip()) for item in text.split(",")]
    except UsageError:
        raise InputError(
            f"--grid {text}: give PxQ[,PxQ...] with P, Q >= 1 (e.g. 1x192,6x32)"
        ) from None
    for p, q in grids:
        if np is not None and p * q != np:
            raise InputError(
                f"--grid {p}x{q}: P x Q = {p * q} ranks but --np is {np}; give grids of"
                f" {np} ranks or leave --np out"
            )
    return grids


def input_file(n: int, nb: int, p: int, q: int) -> str:
    """hpccinf.txt for one solve of order ``n`` on a P x Q grid (HPL's usual settings)."""
    from commscope.measure.compute import hpcc

    return hpcc.input_text(n, nb, p, q)


def parse_output(text: str) -> HPLResult | None:
    """HPL's result line and residual check; None when it printed no result."""
    m = _RESULT.search(text)
    if not m:
        return None
    r = _RESIDUAL.search(text)
    return HPLResult(
        n=int(m.group(2)),
        nb=int(m.group(3)),
        p=int(m.group(4)),
        q=int(m.group(5)),
        time_s=float(m.group(6)),
        gflops=float(m.group(7)),
        residual=float(r.group(1)) if r else None,
        passed=r is not None and r.group(2) == "PASSED",
    )


def flops(n: int) -> float:
    """HPL's operation count for order ``n``: 2/3 n^3 + 3/2 n^2."""
    return 2.0 / 3.0 * n**3 + 1.5 * n**2


def _hpl_dir(tree: Path) -> Path | None:
    for driver in sorted(tree.rglob("testing/ptest/HPL_pddriver.c")):
        root = driver.parents[2]
        if (root / "include" / "hpl.h").is_file() and "HPL_main" in driver.read_text(
            "utf-8", "replace"
        ):
            return root
    return None


def check_source(source: Path) -> None:
    """Refuse a --source that is neither a directory nor a tarball.

    Raises:
        InputError: the source is missing or not a tarball or a directory.
    """
    if not source.exists():
        raise InputError(f"--source {source}: no such file or directory; {SOURCE_HINT}")
    if source.is_file() and not tarfile.is_tarfile(source):
        raise InputError(f"--source {source}: not a tarball or a directory; {SOURCE_HINT}")


def build(source: Path, cc: str, toolchain: str, real_mpi: bool = True) -> Path:
    """The HPL program built from the HPC Challenge source (cached by its digest).

    ``cc`` is an MPI's compiler wrapper whose MPI ``toolchain`` names (e.g.
    ``openmpi-4.1.4``), or, with ``real_mpi`` False, smpicc and SimGrid's version: each gets
    its own cached build.

    Raises:
        InputError: the source is missing, not HPC Challenge's, or does not build.
    """
    check_source(source)
    flags = (*CFLAGS, *REAL_MPI_CFLAGS) if real_mpi else CFLAGS
    salt = f"hpl:{DRIVER}:{' '.join(CFLAGS)}" + (f":{cc}:{' '.join(flags)}" if real_mpi else "")

    def steps(tmp: Path) -> tuple[Path | None, str]:
        tree = source
        if source.is_file():
            tree = tmp / "src"
            with tarfile.open(source) as tar:
                tar.extractall(tree, filter="data")
        root = _hpl_dir(tree)
        if root is None:
            raise InputError(f"--source {source}: no HPC Challenge hpl/ in it; {SOURCE_HINT}")
        (tmp / "driver.c").write_text(DRIVER, "utf-8")
        files = [str(p) for d in SOURCE_DIRS for p in sorted((root / d).glob("*.c"))]
        includes = [f"-I{root / 'include'}", f"-I{root.parent / 'include'}"]
        argv = [cc, *flags, *includes, "-o", str(tmp / "xhpl"), str(tmp / "driver.c")]
        code, log = builds.run_build([*argv, *files, "-lblas", "-lm"], tmp)
        if code != 0 and "-lblas" in log:
            # The last line is what the one-line error shows: make it the fix.
            log += "\nno BLAS to link HPL with; install one (Debian: apt-get install libblas-dev)\n"
        return (tmp / "xhpl" if code == 0 else None), log

    name = Path(cc).name
    tag = builds.digest(source, salt, toolchain)
    return builds.compile_and_cache(f"--source {source}", tag, steps, compiler=name)


def solve(
    job: launch.Job, n: int, nb: int, p: int, q: int, timeout_s: float, tag: str
) -> dict[str, Any]:
    """One solve of ``job`` (HPL on ``p`` x ``q`` ranks) in a fresh directory: its run data.

    The directory lies beside the build cache (the hosts must see it too). ``tag`` names the
    MPI in the log kept of a failed solve.

    Raises:
        LaunchError: HPL exited with an error, ran past ``timeout_s`` or printed no result.
    """
    from commscope import safe_write
    from commscope.measure import program

    builds.apps_dir().mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="hpl-run-", dir=builds.apps_dir()) as tmp:
        workdir = Path(tmp)
        (workdir / INPUT_FILE).write_text(input_file(n, nb, p, q), "utf-8")
        done = program.run(job, workdir, timeout_s, DONE_LINE)
        out = workdir / OUTPUT_FILE
        text = out.read_text("utf-8", "replace") if out.exists() else ""
    parsed = parse_output(text)
    if done.returncode != 0 or done.timed_out or parsed is None:
        log = builds.apps_dir() / f"run-hpl-{tag}-{os.getpid()}.log"
        safe_write.write_text(log, f"{job.argv}\n{done.stdout}\n{done.stderr}\n{text}")
        why = (
            f"ran past --timeout {timeout_s:g} s"
            if done.timed_out
            else f"exited with status {done.returncode}"
            if done.returncode
            else "printed no result"
        )
        raise LaunchError(f"HPL on {p}x{q} {why}; its output is in {log}")
    return {
        **parsed.to_json(),
        "wall_s": done.wall_s,
        "killed_after_output": done.killed_after_output,
        "output": text[-OUTPUT_LIMIT:],
    }


def add_what_was_lost(
    err: BaseException, rows: list[dict[str, Any]], grids: list[tuple[int, int]], repeat: int
) -> None:
    """Add to ``err``'s one line the solves already stored and the grids still to run.

    A solve is stored only once it ended, so the one under way is the only work lost.
    """
    runs = [str(r["run"]) for r in rows]
    left = [f"{p}x{q}" for p, q in grids if sum(r["grid"] == f"{p}x{q}" for r in rows) < repeat]
    kept = f"{len(runs)} solves stored (runs {', '.join(runs)})" if runs else "no solve stored"
    losses = f"{kept}; not measured: {', '.join(left)} (run again with --grid {','.join(left)})"
    if isinstance(err, KeyboardInterrupt):
        err.args = (f"{interrupt_cause(err)}; {losses}",)
    elif isinstance(err, CommscopeError):
        err.args = (f"{' '.join(str(err).split())}; {losses}",)
