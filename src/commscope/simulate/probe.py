"""A one-collective SMPI probe: the time of a single launch, for checking predictions.

``commscope simulate run`` runs the whole engine (warm-up, several launches, every size);
checking the predictor needs one launch of one collective per placement, which at 192 ranks
is already tens of seconds of wall time. The probe runs ``MPI_Barrier`` then the collective
once and prints the slowest rank's time. Buffers are SMPI-shared, so 192 ranks x 192 MiB
fit in memory.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from commscope.errors import SimulateError
from commscope.measure.launch import Job
from commscope.predict.model import ClusterModel
from commscope.predict.placement import Placement
from commscope.simulate import platform, smpi
from commscope.simulate.params import SimParams

OPS = ("alltoall", "bcast", "allreduce")
PROGRAM = r"""
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, p;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &p);
    const char *op = argv[1];
    long m = atol(argv[2]);
    int all = strcmp(op, "alltoall") == 0;
    size_t bytes = all ? (size_t)m * p : (size_t)m;
    char *s = SMPI_SHARED_MALLOC(bytes), *r = SMPI_SHARED_MALLOC(bytes);
    MPI_Barrier(MPI_COMM_WORLD);
    double t = MPI_Wtime(), tmax;
    if (all)
        MPI_Alltoall(s, (int)m, MPI_BYTE, r, (int)m, MPI_BYTE, MPI_COMM_WORLD);
    else if (strcmp(op, "bcast") == 0)
        MPI_Bcast(s, (int)m, MPI_BYTE, 0, MPI_COMM_WORLD);
    else
        MPI_Allreduce(s, r, (int)(m / 4), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    t = MPI_Wtime() - t;
    MPI_Reduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (rank == 0) printf("%.12e\n", tmax);
    SMPI_SHARED_FREE(s);
    SMPI_SHARED_FREE(r);
    MPI_Finalize();
    return 0;
}
"""


def build(where: Path) -> Path:
    """Compile the probe with smpicc into ``where``; its path."""
    cc, _ = smpi.tools()
    (where / "probe.c").write_text(PROGRAM)
    out = subprocess.run(
        [cc, "-O2", "-o", str(where / "probe"), str(where / "probe.c")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    if out.returncode != 0:
        raise SimulateError(f"smpicc could not build the probe: {out.stderr.strip()[-300:]}")
    return where / "probe"


def job(
    probe: Path,
    op: str,
    nbytes: int,
    ranks: int,
    cfg: list[str],
    workdir: Path,
    platform_xml: str,
    hostfile: str,
) -> Job:
    """The smpirun job of one probe launch, its platform and hostfile written into ``workdir``.

    ``nbytes`` means what the predictor's ``size`` means: per pair for alltoall, the buffer
    for bcast and allreduce (MPI_FLOAT elements, so a multiple of 4).
    """
    if op not in OPS:
        raise SimulateError(f"probe operation {op!r}: choose one of {', '.join(OPS)}")
    (workdir / "platform.xml").write_text(platform_xml, "utf-8")
    (workdir / "hostfile").write_text(hostfile, "utf-8")
    return smpi.job({"config": cfg, "np": ranks}, [str(probe), op, str(nbytes)], workdir)


def model_job(
    probe: Path,
    model: ClusterModel,
    params: SimParams,
    placement: Placement,
    op: str,
    nbytes: int,
    workdir: Path,
    extra_cfg: list[str] | tuple[str, ...] = (),
) -> Job:
    """The probe on ``placement`` of ``model``, with the options ``simulate run`` uses."""
    return job(
        probe,
        op,
        nbytes,
        placement.p,
        smpi.config(params, extra_cfg),
        workdir,
        platform.platform_xml(model, params),
        platform.hostfile(model, placement),
    )


def simulated_s(stdout: str) -> float:
    """The slowest rank's simulated time, from the probe's output."""
    lines = stdout.strip().splitlines()
    try:
        return float(lines[-1])
    except (IndexError, ValueError):
        raise SimulateError(f"the probe printed no time: {stdout.strip()[-200:]!r}") from None
