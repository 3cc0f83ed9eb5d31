"""Terminal rendering of results (rich tables); JSON output lives with each command."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from commscope.analysis import coll as coll_analysis
from commscope.analysis import contention as contention_analysis
from commscope.analysis import load as load_analysis
from commscope.analysis import loggp as loggp_analysis
from commscope.analysis import node as node_analysis
from commscope.analysis import p2p
from commscope.analysis import recv_buffers as rbuf
from commscope.data.records import Coll, Contention, LogGP, Point
from commscope.data.store import RunInfo


def _us(seconds: float | None) -> str:
    return "" if seconds is None else f"{seconds * 1e6:.2f}"


def _mbs(bps: float | None) -> str:
    return "" if bps is None else f"{bps / 1e6:.1f}"


def run_title(run: RunInfo) -> str:
    """One line naming the run, its status, MPI and size.

    Plain text: the label is the user's, so print it with ``common.console()``, which prints
    strings literally and neutralises control characters.
    """
    label = f" '{run.label}'" if run.label else ""
    if run.kind == "node":  # one process, no MPI
        return f"run {run.id}{label}: node compute, {run.status}"
    mpi = f"{run.mpi}, " if run.mpi else ""  # TCP and imported runs have no MPI
    settings = run.request.get("mca") or {}
    mca = "".join(f", --mca {name}={value}" for name, value in settings.items())
    title = f"run {run.id}{label}: {run.kind}, {run.status}, {mpi}{run.nranks} ranks"
    return title + where_text(run.request) + mca


def where_text(request: dict[str, Any]) -> str:
    """Where a run's ranks ran, when not on this machine alone (empty otherwise)."""
    if request.get("slurm"):
        job = request["slurm"].get("job") or "its own allocation"
        return f", in Slurm job {job} (srun --mpi={request['slurm'].get('plugin')})"
    if request.get("placement"):
        hosts = request["placement"]["hosts"]
        shown = ", ".join(f"{name}:{count}" for name, count in hosts[:4])
        return f", on {shown}" + (f" and {len(hosts) - 4} more hosts" if len(hosts) > 4 else "")
    if request.get("vcluster"):
        vc = request["vcluster"]
        return f", on the vcluster ({vc.get('nodes')} nodes x {vc.get('ranks_per_node')})"
    return ""


def key_figures(console: Console, points: list[Point]) -> None:
    """Latency and peak bandwidth per pair."""
    table = Table(title="key figures (MB/s = 10^6 bytes/s)")
    for col in (
        "pair",
        "ranks",
        "latency (us)",
        "at bytes",
        "peak bw (MB/s)",
        "at bytes",
        "peak bibw (MB/s)",
    ):
        table.add_column(col, justify="left" if col in ("pair", "ranks") else "right")
    for k in p2p.key_figures(points):
        table.add_row(
            k.pair,
            f"{k.ranks[0]}-{k.ranks[1]}",
            _us(k.latency_s),
            str(k.latency_bytes or 0),
            _mbs(k.peak_bandwidth_Bps),
            str(k.peak_bandwidth_bytes or ""),
            _mbs(k.peak_bidirectional_Bps),
        )
    console.print(table)


def size_table(console: Console, points: list[Point]) -> None:
    """Latency and bandwidths per size, one table per pair.

    The bw and bibw columns with one receive buffer per message appear when measured.
    """
    rows = p2p.size_rows(points)
    each = [
        name
        for name, field in (
            ("bw each", "bandwidth_each_Bps"),
            ("bibw each", "bidirectional_each_Bps"),
        )
        if any(getattr(r, field) is not None for r in rows)
    ]
    for pair in p2p.pairs_in(points):
        table = Table(title=f"{pair} (latency in us; bandwidth in MB/s = 10^6 bytes/s)")
        for col in ("bytes", "latency", "pingpong bw", "bw", "bibw", *each):
            table.add_column(col, justify="right")
        for r in rows:
            if r.pair == pair:
                extra = {"bw each": r.bandwidth_each_Bps, "bibw each": r.bidirectional_each_Bps}
                table.add_row(
                    str(r.bytes),
                    _us(r.latency_s),
                    _mbs(r.pingpong_bandwidth_Bps),
                    _mbs(r.bandwidth_Bps),
                    _mbs(r.bidirectional_bandwidth_Bps),
                    *(_mbs(extra[name]) for name in each),
                )
        console.print(table)


def load_warnings(console: Console, ends: list[dict[str, Any] | None]) -> None:
    """One ``!`` line per host that other processes or extra ranks disturbed."""
    for text in load_analysis.warnings(ends):
        console.print(Text(f"! {text}: timings include waiting for a core", style="yellow"))


def interrupted(console: Console, points: list[Point], most: int = 12) -> None:
    """How many samples were interrupted, and the points where it was many."""
    summary = p2p.interrupted_summary(points)
    if not summary:
        return
    console.print(summary)
    named = p2p.interrupted(points)
    for x in named[:most]:
        console.print(Text(f"! {x.text()}", style="yellow"))
    if len(named) > most:
        console.print(Text(f"! and {len(named) - most} more points", style="yellow"))


def recv_buffers(
    console: Console, header: dict[str, Any] | None, points: list[Point], contrasts: bool = True
) -> None:
    """Which receive buffers bw and bibw used; with both, where they differ and why."""
    policies = rbuf.run_policies(header, points)
    if not policies:
        return
    text = rbuf.describe(policies, rbuf.recorded(header))
    console.print(f"receive buffers (bw, bibw): {text}")
    if contrasts:
        for c in rbuf.contrasts(points):
            console.print(Text(c.reason(), style="yellow" if c.material else ""))


def coll_table(
    console: Console,
    points: list[Coll],
    level: float,
    min_valid: int = coll_analysis.MIN_VALID,
    trim: float = coll_analysis.DEFAULT_TRIM,
) -> None:
    """The MPIPerf report: nt, nc, ns, T, SE, min, max, E and the interval, times in us.

    Points the analysis flags get a ``!`` after T and a line below the table saying why.
    """
    table = Table(
        title=f"collectives (times in us; {level:.0%} confidence; {trim:.0%} trimmed at each end)"
    )
    for col in (
        "op",
        "bytes",
        "nt",
        "nc",
        "ns",
        "T",
        "SE",
        "min",
        "max",
        "E",
        "CI",
        "stop",
        "overlap %",
    ):
        table.add_column(col, justify="left" if col in ("op", "stop") else "right")
    rows = coll_analysis.summaries(points, level, trim, min_valid)
    for s in rows:
        ci = "" if s.nc == 0 else f"{_us(s.ci_low_s)}-{_us(s.ci_high_s)}"
        table.add_row(
            s.op,
            str(s.bytes),
            str(s.nt),
            str(s.nc),
            str(s.ns),
            _us(s.time_s) + (" !" if s.warnings else ""),
            _us(s.se_s),
            _us(s.min_s),
            _us(s.max_s),
            _us(s.error_s),
            ci,
            s.stop,
            "" if s.overlap_pct is None else f"{s.overlap_pct:.0f}",
        )
    console.print(table)
    for s in rows:
        if s.warnings:
            console.print(Text(f"! {coll_analysis.warning_text(s)}", style="yellow"))


def contention_tables(console: Console, points: list[Contention]) -> None:
    """Degradation tables t(m,cf)/t(m,1); cells above cf in bold red.

    The tables of Peryshkova and Kurnosov 2018 (contention-aware placement).
    """
    flights = sorted({p.in_flight for p in points})
    # The paper's loop has one message in flight; say so when the run posted more.
    posted = "" if flights == [1] else f"; {'/'.join(map(str, flights))} messages in flight"
    for level, t in contention_analysis.tables(points).items():
        name = contention_analysis.LEVEL_NAMES[level]
        table = Table(
            title=f"{name}: degradation t(m,cf)/t(m,1) (red: above cf; t(m,1) in us{posted})"
        )
        table.add_column("bytes", justify="right")
        table.add_column("t(m,1) us", justify="right")
        for cf in t.cfs:
            table.add_column(f"cf={cf}", justify="right")
        table.add_column("max procs", justify="right")
        deg, above, best = t.degradation, t.above_cf, t.max_processes()
        for i, m in enumerate(t.sizes):
            cells: list[str | Text] = []
            for j in range(t.cfs.size):
                v = deg[i, j]
                text = "" if v != v else f"{v:.2f}"
                cells.append(Text(text, style="bold red") if above[i, j] else text)
            base = t.t_s[i, 0] if t.cfs[0] == 1 else float("nan")
            table.add_row(str(int(m)), _us(base) if base == base else "", *cells, str(best[int(m)]))
        console.print(table)


def _us3(seconds: float) -> str:
    return f"{seconds * 1e6:.3f}"


def loggp_table(console: Console, points: list[LogGP]) -> None:
    """LogGP parameters per pair (Netgauge's method), then what stands out."""
    fitted = loggp_analysis.fits(points)
    table = Table(title="LogGP (L, o_s, o_r, g in us; G in ns/byte; bandwidth 1/G in MB/s)")
    for col in ("pair", "L", "o_s", "o_r", "g", "G", "1/G MB/s", "small sizes", "G from"):
        table.add_column(col, justify="left" if col == "pair" else "right")
    for f in fitted:
        g_line = f.lines["G"]
        table.add_row(
            f.pair,
            _us3(f.L_s),
            _us3(f.o_s_s),
            _us3(f.o_r_s),
            _us3(f.g_s),
            f"{f.G_s_per_byte * 1e9:.4f}",
            _mbs(f.bandwidth_Bps),
            f"{f.small_bytes[0]}-{f.small_bytes[1]}",
            f"{g_line.first_bytes}-{g_line.last_bytes}",
        )
    console.print(table)
    for text in loggp_analysis.findings(fitted):
        console.print(text)


def _gf(value: float | None) -> str:
    return "" if value is None else f"{value:.2f}"


def _ghz(value: float | None) -> str:
    return "" if value is None else f"{value:.3f}"


def node_figures(console: Console, summary: node_analysis.NodeSummary) -> None:
    """Linpack table per core count, then how each P_peak was derived.

    The table of Rechistov et al. 2012 (cluster simulation).
    """
    on = f" on {summary.cpu_model}" if summary.cpu_model else ""
    table = Table(title=f"node compute: Linpack (GFLOPS){on}")
    for col in (
        "cores",
        "threads",
        "cpus",
        "P_max",
        "N_max",
        "N_1/2",
        "P_peak",
        "efficiency",
        "nominal GHz",
        "busy GHz",
        "largest N",
        "solver",
    ):
        table.add_column(col, justify="left" if col == "solver" else "right")
    for f in summary.figures:
        half = f"{'<= ' if f.n_half_at_smallest else ''}{f.n_half:.0f}"
        eff = "" if f.efficiency is None else f"{f.efficiency:.1%}"
        table.add_row(
            str(f.cores),
            str(f.threads),
            ",".join(map(str, f.affinity)),
            _gf(f.p_max_gflops),
            str(f.n_max),
            half,
            _gf(f.p_peak_gflops),
            eff,
            _ghz(f.nominal_ghz),
            _ghz(f.busy_ghz),
            str(f.largest_n),
            f.solver,
        )
    console.print(table)
    for f in summary.figures:
        if f.peak_derivation:
            console.print(f.peak_derivation)
        if f.kernel_ceiling:
            console.print(f"{f.cores} core{'s' if f.cores != 1 else ''}: {f.kernel_ceiling}")
        if f.warning:
            warning = f"{f.cores} core{'s' if f.cores != 1 else ''}: {f.warning}"
            console.print(Text(warning, style="bold red"))


def node_rows(console: Console, summary: node_analysis.NodeSummary) -> None:
    """Every N: solves, median time, GFLOPS spread, residual, threads at work."""
    table = Table(title="Linpack per N (GFLOPS; residual: HPL scaled residual, must be < 16)")
    for col in (
        "cores",
        "N",
        "solves",
        "median s",
        "median",
        "min",
        "max",
        "residual",
        "threads busy",
        "others %",
    ):
        table.add_column(col, justify="right")
    for r in summary.rows:
        busy = "" if r.threads_at_work is None else f"{r.threads_at_work:.2f}"
        others = "" if r.others_cpu_share is None else f"{r.others_cpu_share:.0%}"
        table.add_row(
            str(r.cores),
            str(r.n),
            str(r.solves),
            f"{r.median_s:.4g}",
            _gf(r.median_gflops),
            _gf(r.min_gflops),
            _gf(r.max_gflops),
            f"{r.residual:.3g}",
            busy,
            others,
        )
    console.print(table)
