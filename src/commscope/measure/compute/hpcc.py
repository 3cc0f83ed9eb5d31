"""HPL across MPI ranks with Debian's ``hpcc`` (HPC Challenge), stored as linpack records.

Rechistov et al. 2012 (cluster simulation) also run HPL over a P x Q process grid. For each
N, commscope writes hpcc's input (``hpccinf.txt``: HPL.dat's format plus HPCC's PTRANS lines)
for that N, one block size NB and one grid, runs ``hpcc`` on P x Q ranks under Open MPI
(Debian builds hpcc against it) in a fresh directory, and reads the summary section of
``hpccoutf.txt``: HPL_time, the norms behind the scaled residual, N, NB and the grid. hpcc
also runs its other benchmarks, sized from the same N; only HPL is kept. Each N is a segment
of a node run; its point is a linpack record with routine "hpl" and source "hpcc", its rate
counted as commscope counts its own (HPL's own figure is kept as ``reported_gflops``).

``linpack`` (numpy, SciPy) is imported by the functions that use it, as in ``node``.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Any

from commscope import strict
from commscope.data.record_parse import record_from_dict
from commscope.data.records import Linpack
from commscope.data.session import Measuring
from commscope.data.store import Store
from commscope.errors import ComputeError, LaunchError, UsageError
from commscope.limits import MAX_RANKS
from commscope.measure import launch
from commscope.measure import mpi as mpi_mod
from commscope.measure.compute import cpu, pinning
from commscope.measure.compute.node import ClockMeter, NodeOutcome, Progress, busy_clocks

PROGRAM = "hpcc"
DEFAULT_SIZES = (1000, 2000, 4000)
DEFAULT_NB = 128
_PTRANS = """##### This line (no. 32) is ignored (it serves as a separator). ######
0                      		Number of additional problem sizes for PTRANS
1200 10000 30000        	values of N
0                       	number of additional blocking sizes for PTRANS
40 9 8 13 13 20 16 32 64       	values of NB
"""


def parse_grid(text: str) -> tuple[int, int]:
    """A process grid: "2x4" -> (2, 4). Raises UsageError for anything else."""
    p, sep, q = text.lower().partition("x")
    try:
        if not sep:
            raise strict.NumberError("no 'x'")
        return strict.whole(p, 1, MAX_RANKS), strict.whole(q, 1, MAX_RANKS)
    except strict.NumberError:
        raise UsageError(
            f"--grid {strict.shown(text)}: give the process grid as PxQ, e.g. 1x2"
        ) from None


def input_text(n: int, nb: int, p: int, q: int) -> str:
    """hpccinf.txt for one N, one NB and one P x Q grid, HPL's usual settings otherwise."""
    from commscope.measure.compute import linpack

    rows = [
        ("HPL.out", "output file name (if any)"),
        ("8", "device out (6=stdout,7=stderr,file)"),
        ("1", "# of problems sizes (N)"),
        (str(n), "Ns"),
        ("1", "# of NBs"),
        (str(nb), "NBs"),
        ("0", "PMAP process mapping (0=Row-,1=Column-major)"),
        ("1", "# of process grids (P x Q)"),
        (str(p), "Ps"),
        (str(q), "Qs"),
        (f"{linpack.THRESHOLD:g}", "threshold"),
        ("1", "# of panel fact"),
        ("2", "PFACTs (0=left, 1=Crout, 2=Right)"),
        ("1", "# of recursive stopping criterium"),
        ("4", "NBMINs (>= 1)"),
        ("1", "# of panels in recursion"),
        ("2", "NDIVs"),
        ("1", "# of recursive panel fact."),
        ("1", "RFACTs (0=left, 1=Crout, 2=Right)"),
        ("1", "# of broadcast"),
        ("1", "BCASTs (0=1rg,1=1rM,2=2rg,3=2rM,4=Lng,5=LnM)"),
        ("1", "# of lookahead depth"),
        ("1", "DEPTHs (>=0)"),
        ("2", "SWAP (0=bin-exch,1=long,2=mix)"),
        ("64", "swapping threshold"),
        ("0", "L1 in (0=transposed,1=no-transposed) form"),
        ("0", "U  in (0=transposed,1=no-transposed) form"),
        ("1", "Equilibration (0=no,1=yes)"),
        ("8", "memory alignment in double (> 0)"),
    ]
    head = "HPLinpack benchmark input file\nwritten by commscope\n"
    return head + "".join(f"{value:<12} {what}\n" for value, what in rows) + _PTRANS


def parse_summary(text: str, where: str) -> dict[str, str]:
    """The key=value lines of hpccoutf.txt's summary section.

    Raises:
        ComputeError: there is no summary, or HPL did not run.
    """
    start = text.rfind("Begin of Summary section.")
    if start < 0:
        raise ComputeError(f"{where}: no summary section; hpcc did not finish")
    out = {}
    for line in text[start:].splitlines()[1:]:
        if line.startswith("End of Summary section"):
            break
        key, sep, value = line.partition("=")
        if sep:
            out[key.strip()] = value.strip()
    if "HPL_time" not in out or float(out.get("HPL_Tflops", "0")) <= 0:
        raise ComputeError(f"{where}: HPL did not run (no HPL_time in the summary)")
    return out


def to_record(s: dict[str, str], where: str) -> Linpack:
    """A linpack record from hpcc's summary; the residual is checked as for our own solves."""
    from commscope.measure.compute import linpack

    n, seconds = int(s["HPL_N"]), float(s["HPL_time"])
    p, q = int(s["HPL_nprow"]), int(s["HPL_npcol"])
    scale = (
        float(s["HPL_eps"])
        * (float(s["HPL_AnormI"]) * float(s["HPL_XnormI"]) + float(s["HPL_BnormI"]))
        * n
    )
    residual = float(s["HPL_RnormI"]) / scale if scale > 0 else float("inf")
    linpack.check_residual(residual, n, p * q)
    record = record_from_dict(
        {
            "type": "linpack",
            "cores": p * q,
            "threads": 1,
            "n": n,
            "routine": "hpl",
            "times_s": [seconds],
            "gflops": [linpack.gflops(n, seconds)],
            "residual": residual,
            "threshold": linpack.THRESHOLD,
            "affinity": [],
            "source": "hpcc",
            "grid": [p, q],
            "nb": int(s["HPL_NB"]),
            "reported_gflops": float(s["HPL_Tflops"]) * 1e3,
        },
        where,
    )
    assert isinstance(record, Linpack)
    return record


def build_request(
    grid: str,
    sizes: list[int] | None,
    nb: int,
    timeout_s: float,
    peak_flops_per_cycle: float | None = None,
    peak_ghz: float | None = None,
    clock_meter: ClockMeter | None = None,
) -> dict[str, Any]:
    """A node run request for hpcc: the grid, the sizes and the P_peak facts of P x Q cores.

    Unless ``peak_ghz`` is given, the busy clock of the cores HPL's ranks keep busy is
    measured here (``clock_meter``, default ``busyclock.measure``), as for the Linpack sweep.
    """
    from commscope.measure.compute import linpack

    p, q = parse_grid(grid)
    allowed = pinning.allowed_cpus()
    model = cpu.peak_model(allowed, peak_flops_per_cycle, peak_ghz)
    if peak_ghz is None:  # the clock of the cores HPL's ranks keep busy
        used = min(p * q, cpu.physical_cores(allowed))
        model = model.with_busy(
            *busy_clocks({p * q: pinning.choose_cpus(used, allowed)}, clock_meter)
        )
    if shutil.which(PROGRAM) is None:
        raise UsageError("--grid: hpcc is not installed (Debian: apt-get install hpcc)")
    return {
        "benchmark": "node",
        "hpl": {"grid": [p, q], "nb": nb, "program": PROGRAM, "mpi": "openmpi"},
        "cores": [p * q],
        "sizes": sorted(set(sizes or DEFAULT_SIZES)),
        "threshold": linpack.THRESHOLD,
        "flops": "2/3 N^3 + 2 N^2",
        "timeout_s": timeout_s,
        "cpu": model.to_json(),
        "peak_derivation": {str(p * q): model.derivation(p * q)},
    }


def run(
    store: Store, run_id: int, request: dict[str, Any], progress: Progress | None = None
) -> NodeOutcome:
    """Run hpcc once per N not yet stored; one segment and one linpack point each.

    Raises:
        LaunchError: hpcc failed or timed out; ComputeError: its answer fails the check.
            Either way the run is marked incomplete and earlier points stay stored.
    """
    hpl = request["hpl"]
    p, q = hpl["grid"]
    mpi = mpi_mod.resolve(hpl["mpi"])
    done = {p_.n for p_ in store.linpacks(run_id)}
    session = Measuring(store, run_id)
    for n in request["sizes"]:
        if n in done:
            continue
        job = launch.build_job(mpi, p * q, [PROGRAM])
        session.lost = lambda n=n: f"N={n} and the larger N after it"
        with session.segment(job.argv) as segment:
            with tempfile.TemporaryDirectory(prefix="commscope-hpcc-") as tmp:
                (Path(tmp) / "hpccinf.txt").write_text(input_text(n, hpl["nb"], p, q))
                result = launch.run_streaming(
                    job, lambda _line: False, float(request["timeout_s"]), cwd=tmp
                )
                out = Path(tmp) / "hpccoutf.txt"
                if result.timed_out or result.returncode != 0 or not out.exists():
                    why = (
                        "timed out"
                        if result.timed_out
                        else (result.stderr.strip().splitlines() or ["no output"])[-1]
                    )
                    raise LaunchError(f"hpcc at N={n} on {p}x{q} ranks failed: {why}")
                record = to_record(parse_summary(out.read_text(), f"hpcc N={n}"), f"hpcc N={n}")
            session.add(segment, record)
            session.end_segment(segment, None, {"n": n, "grid": [p, q]})
        if progress:
            progress(
                f"hpcc {p}x{q}: N={n:>6} {record.median_gflops:8.2f} GFLOPS,"
                f" {record.median_s:.3g} s, residual {record.residual:.3g}"
            )
    session.complete()
    total = len(session.measured())
    return NodeOutcome(run_id, session.new, total, {p * q: f"hpcc {p}x{q}: all sizes measured"})
