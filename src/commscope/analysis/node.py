"""Linpack figures of a node run, per core count.

As Rechistov et al. 2012 (cluster simulation) report them:

- P_max: the highest rate the sweep demonstrated: the largest per-N median GFLOPS (the median
  over the solves of one N, so one lucky solve on a shared machine does not set it);
- N_max: the N where P_max was reached;
- N_1/2: the smallest N reaching half of P_max, interpolated linearly in log N between the
  two sizes around the crossing (the smallest N measured when that already reaches it);
- P_peak: cores x clock x DP flops per cycle (see ``commscope.measure.compute.cpu``), from
  the run's request;
  the clock is the higher of the nominal one and the busy clock measured on those cores (or
  --peak-ghz), and both are kept beside the figures;
- efficiency: P_max / P_peak;
- others' share: the largest share of the pinned cpus' time that other processes (or the
  hypervisor) took while a point was measured. Above BUSY_WARNING the figures understate the
  node, and a warning says so.

Pure functions: records and the request in, frozen dataclasses out.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from commscope.data.peak import PeakModel
from commscope.data.records import Linpack

BUSY_WARNING = 0.10


@dataclass(frozen=True)
class NodeRow:
    """One N on one core count: the spread of its solves."""

    cores: int
    n: int
    solves: int
    median_s: float
    median_gflops: float
    min_gflops: float
    max_gflops: float
    residual: float
    threads_at_work: float | None  # CPU time / wall time of the median solve
    others_cpu_share: float | None  # share of the cpus other processes took meanwhile

    def to_json(self) -> dict[str, Any]:
        """Plain dict with full key names."""
        return asdict(self)


@dataclass(frozen=True)
class NodeFigures:
    """The table of Rechistov et al. 2012 for one core count."""

    cores: int
    threads: int
    affinity: tuple[int, ...]
    solver: str  # "dgetrf+dgetrs", or "HPL 1x2, NB 128 (hpcc)" for HPL across ranks
    n_points: int
    largest_n: int
    p_max_gflops: float
    n_max: int
    n_half: float
    n_half_at_smallest: bool  # the smallest N already reached half of P_max: N_1/2 is at most it
    p_peak_gflops: float | None
    efficiency: float | None
    peak_derivation: str | None
    others_cpu_share: float | None  # the largest of its points'
    clock_ghz: float | None = None  # the clock P_peak assumes
    clock_source: str | None = None
    nominal_ghz: float | None = None  # cpufreq maximum or /proc/cpuinfo (or --peak-ghz)
    nominal_source: str | None = None
    busy_ghz: float | None = None  # measured with these cores busy at once; None: not measured
    blas: str | None = None  # "OpenBLAS 0.3.30, Haswell kernels": the library that solved
    kernel_flops_per_cycle: float | None = None  # what its kernels can issue, if known
    cpu_flops_per_cycle: float | None = None

    @property
    def kernel_ceiling(self) -> str | None:
        """A plain sentence when the BLAS kernels cannot reach the CPU's peak, else None."""
        kernel, cpu_fpc = self.kernel_flops_per_cycle, self.cpu_flops_per_cycle
        if not kernel or not cpu_fpc or kernel >= cpu_fpc or not self.p_peak_gflops:
            return None
        ceiling = self.p_peak_gflops * kernel / cpu_fpc
        return (
            f"the BLAS, {self.blas}, issues at most {kernel:g} flops per cycle where this"
            f" CPU allows"
            f" {cpu_fpc:g}: Linpack cannot pass {kernel / cpu_fpc:.0%} of P_peak with this"
            f" library; P_max is {self.p_max_gflops / ceiling:.0%} of that"
            f" {ceiling:.1f} GFLOPS ceiling (a BLAS with kernels for the CPU's widest"
            " vectors would raise it)"
        )

    @property
    def warning(self) -> str | None:
        """A plain sentence when other processes took a noticeable share of the cores."""
        share = self.others_cpu_share
        if share is None or share <= BUSY_WARNING:
            return None
        return (
            f"other processes took up to {share:.0%} of the {self.cores} pinned"
            f" core{'s' if self.cores != 1 else ''} while measuring: these figures"
            " understate the node; measure again on an idle machine"
        )

    def to_json(self) -> dict[str, Any]:
        """Plain dict with full key names."""
        d = asdict(self)
        d["affinity"] = list(self.affinity)
        d["warning"] = self.warning
        d["kernel_ceiling"] = self.kernel_ceiling
        return d


def p_max(ns: Sequence[int], gflops: Sequence[float]) -> tuple[float, int]:
    """(P_max, N_max): the largest rate and the N where it was reached (the smaller on ties)."""
    if not ns:
        raise ValueError("no points")
    i = max(range(len(ns)), key=lambda k: (gflops[k], -ns[k]))
    return float(gflops[i]), int(ns[i])


def n_half(ns: Sequence[int], gflops: Sequence[float]) -> tuple[float, bool]:
    """(N_1/2, whether it is the smallest N measured): half of P_max first reached, in log N.

    ``ns`` must be increasing.
    """
    half = p_max(ns, gflops)[0] / 2
    i = next(k for k, g in enumerate(gflops) if g >= half)
    if i == 0:
        return float(ns[0]), True
    x0, x1 = math.log(ns[i - 1]), math.log(ns[i])
    y0, y1 = gflops[i - 1], gflops[i]
    frac = (half - y0) / (y1 - y0) if y1 != y0 else 1.0
    return float(math.exp(x0 + frac * (x1 - x0))), False


def rows(points: Sequence[Linpack]) -> list[NodeRow]:
    """One row per (cores, N), in that order."""
    out = []
    for p in sorted(points, key=lambda p: (p.cores, p.n)):
        cpu_s = p.raw.get("cpu_s") or []
        busy = None
        if len(cpu_s) == p.n_samples:
            k = min(range(p.n_samples), key=lambda j: abs(p.times_s[j] - p.median_s))
            busy = cpu_s[k] / p.times_s[k]
        out.append(
            NodeRow(
                p.cores,
                p.n,
                p.n_samples,
                p.median_s,
                p.median_gflops,
                min(p.gflops),
                max(p.gflops),
                p.residual,
                busy,
                p.raw.get("others_cpu_share"),
            )
        )
    return out


def solver(point: Linpack) -> str:
    """What solved the system: our LAPACK routines, or HPL with its grid and block size."""
    raw = point.raw
    if raw.get("routine") == "hpl":
        p, q = raw.get("grid") or ("?", "?")
        return f"HPL {p}x{q}, NB {raw.get('nb', '?')} ({raw.get('source', 'imported')})"
    return str(raw.get("routine", "dgetrf+dgetrs"))


# Double-precision flops per cycle of OpenBLAS's kernels by the core name it reports
# (threadpoolctl's "architecture"), with two FMA pipes of the kernel's vector width.
OPENBLAS_KERNEL_FLOPS = {
    "skylakex": 32,
    "cooperlake": 32,
    "sapphirerapids": 32,  # AVX-512
    "haswell": 16,
    "zen": 16,  # AVX2 + FMA
    "sandybridge": 8,  # AVX, no FMA
    "nehalem": 4,
    "core2": 4,
    "penryn": 4,
    "dunnington": 4,
    "prescott": 4,  # SSE2
}


def blas_kernels(point: Linpack) -> tuple[str | None, float | None]:
    """The BLAS that solved ``point`` in words, and its kernels' flops per cycle if known.

    SciPy's LAPACK calls the OpenBLAS SciPy ships (``scipy.libs``), so that library is the
    one described when several are loaded.
    """
    libs = [b for b in point.raw.get("blas") or [] if isinstance(b, Mapping)]
    if not libs:
        return None, None
    lib = next((b for b in libs if "scipy.libs" in str(b.get("filepath", ""))), libs[0])
    name = {"openblas": "OpenBLAS", "mkl": "MKL", "blis": "BLIS"}.get(
        str(lib.get("internal_api")), str(lib.get("internal_api") or "BLAS")
    )
    arch = lib.get("architecture")
    text = f"{name} {lib.get('version') or ''}".strip() + (f" ({arch} kernels)" if arch else "")
    fpc = OPENBLAS_KERNEL_FLOPS.get(str(arch).lower()) if name == "OpenBLAS" and arch else None
    return text, (float(fpc) if fpc else None)


def figures(points: Sequence[Linpack], peak: PeakModel | None = None) -> list[NodeFigures]:
    """P_max, N_max, N_1/2, P_peak and efficiency per core count, fewest cores first."""
    out = []
    for cores in sorted({p.cores for p in points}):
        mine = sorted((p for p in points if p.cores == cores), key=lambda p: p.n)
        ns = [p.n for p in mine]
        rates = [p.median_gflops for p in mine]
        best, n_best = p_max(ns, rates)
        # A point's own share, and the sweep's share up to each point: the one window that
        # covers points too short for a share of their own.
        shares = [
            p.raw[key]
            for p in mine
            for key in ("others_cpu_share", "sweep_others_cpu_share")
            if isinstance(p.raw.get(key), (int, float))
        ]
        half, at_smallest = n_half(ns, rates)
        p_peak = peak.peak_gflops(cores) if peak else None
        used = peak.clock_for(cores) if peak else None
        nominal = peak.clock if peak else None
        busy = peak.busy.get(cores) if peak else None
        blas, kernel_fpc = blas_kernels(mine[-1])
        out.append(
            NodeFigures(
                cores=cores,
                threads=mine[-1].threads,
                affinity=mine[-1].affinity,
                solver=solver(mine[-1]),
                n_points=len(mine),
                largest_n=ns[-1],
                p_max_gflops=best,
                n_max=n_best,
                n_half=half,
                n_half_at_smallest=at_smallest,
                p_peak_gflops=p_peak,
                efficiency=best / p_peak if p_peak else None,
                peak_derivation=peak.derivation(cores) if peak else None,
                others_cpu_share=max(shares) if shares else None,
                clock_ghz=used.ghz if used else None,
                clock_source=used.source if used else None,
                nominal_ghz=nominal.ghz if nominal else None,
                nominal_source=nominal.source if nominal else None,
                busy_ghz=busy.ghz if busy else None,
                blas=blas,
                kernel_flops_per_cycle=kernel_fpc,
                cpu_flops_per_cycle=(
                    peak.flops_per_cycle.value if peak and peak.flops_per_cycle else None
                ),
            )
        )
    return out


def peak_of(request: Mapping[str, Any]) -> PeakModel | None:
    """The P_peak model a node run stored in its request (None for runs without one)."""
    data = request.get("cpu")
    return PeakModel.from_json(data) if isinstance(data, Mapping) else None


@dataclass(frozen=True)
class NodeSummary:
    """Everything shown about a node run: figures per core count and the per-N rows."""

    figures: tuple[NodeFigures, ...]
    rows: tuple[NodeRow, ...]
    cpu_model: str | None

    def to_json(self) -> dict[str, Any]:
        """Plain dict: GFLOPS, seconds, matrix orders."""
        return {
            "cpu_model": self.cpu_model,
            "figures": [f.to_json() for f in self.figures],
            "points": [r.to_json() for r in self.rows],
        }


def summarize(request: Mapping[str, Any], points: Sequence[Linpack]) -> NodeSummary:
    """The node figures of a run from its request (for P_peak) and its Linpack points."""
    peak = peak_of(request)
    return NodeSummary(
        tuple(figures(points, peak)), tuple(rows(points)), peak.model if peak else None
    )


PANEL_NB = 256  # HPL block width (panel columns); the balance below does not depend on it


@dataclass(frozen=True)
class PanelBalance:
    """One step of a right-looking block LU (HPL's) at order n: send a panel, then update.

    The panel is an n x nb block column of doubles, sent to the processes that update with it;
    the update of the trailing matrix costs 2 (n - nb)^2 nb flops. For n much larger than nb
    their ratio is about 4 P / (n B), whatever nb is: a faster node needs a larger n (or a
    faster network) for compute to hide communication.
    """

    n: int
    nb: int
    panel_bytes: int
    send_s: float  # latency + panel_bytes / bandwidth
    update_flops: float
    compute_s: float  # update_flops at P_max
    crossover_n: float  # the n at which both take equally long (larger n: compute dominates)

    def to_json(self) -> dict[str, Any]:
        """Plain dict with full key names."""
        return asdict(self)


def panel_balance(
    n: int, p_max_gflops: float, bandwidth_Bps: float, latency_s: float = 0.0, nb: int = PANEL_NB
) -> PanelBalance | None:
    """Time to send one n x nb panel against the time of the update it feeds.

    Returns:
        None when n is not above nb or a rate is not positive.
    """
    if n <= nb or p_max_gflops <= 0 or bandwidth_Bps <= 0:
        return None
    rate = p_max_gflops * 1e9
    panel = 8 * n * nb
    flops = 2.0 * (n - nb) ** 2 * nb
    # Equal times: (2 nb / P) m^2 - (8 nb / B) m - (8 nb^2 / B + latency) = 0 with m = n - nb.
    a, b, c = 2.0 * nb / rate, 8.0 * nb / bandwidth_Bps, 8.0 * nb * nb / bandwidth_Bps + latency_s
    crossover = nb + (b + math.sqrt(b * b + 4 * a * c)) / (2 * a)
    return PanelBalance(
        n, nb, panel, latency_s + panel / bandwidth_Bps, flops, flops / rate, crossover
    )
