"""bench/peers.py's figures: what one round measured, the ratios, the tables and the goals."""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable
from dataclasses import dataclass, field

MIB = 1 << 20
LAT_SIZES = (0, 8)
BW_SIZES = (MIB, 4 * MIB)
A2A_SIZE = MIB
LOADS = ("quiet", "hog")
TOOLS = ("commscope", "cs barrier", "osu", "imb", "netpipe")


@dataclass
class Outcome:
    """One finished invocation."""

    wall_s: float
    stdout: str
    hung: bool = False  # its output was complete but it did not exit, so it was killed
    error: str | None = None


@dataclass
class A2ARun:
    """One Alltoall invocation: its reported time, median and commscope's warnings."""

    time_s: float
    median_s: float
    warnings: tuple[str, ...] = ()
    wall_s: float = math.nan


@dataclass
class Cell:
    """One tool's figures for one MPI in one round."""

    lat: dict[int, float] = field(default_factory=dict)  # bytes -> one-way seconds
    bw: dict[int, float] = field(default_factory=dict)  # bytes -> bytes/s
    wall: dict[str, float] = field(default_factory=dict)  # invocation -> seconds
    a2a: dict[str, list[A2ARun]] = field(default_factory=lambda: {k: [] for k in LOADS})
    window: dict[int, int] = field(default_factory=dict)  # commscope bw: bytes -> messages
    hung: int = 0
    errors: list[str] = field(default_factory=list)


def finite(xs: list[float]) -> list[float]:
    return [x for x in xs if isinstance(x, float) and math.isfinite(x)]


def mean(xs: list[float]) -> float:
    xs = finite(xs)
    return statistics.mean(xs) if xs else math.nan


def cv(xs: list[float]) -> float:
    xs = finite(xs)
    return statistics.stdev(xs) / statistics.mean(xs) if len(xs) >= 2 else math.nan


def median(xs: list[float]) -> float:
    xs = finite(xs)
    return statistics.median(xs) if xs else math.nan


def ratio(a: float, b: float) -> float:
    return a / b if b and math.isfinite(a) and math.isfinite(b) else math.nan


def times(cell: Cell, load: str) -> list[float]:
    return [r.time_s for r in cell.a2a[load]]


# (title, width, figure of a cell, format of the figure)
COLUMNS: list[tuple[str, int, Callable[[Cell], float], str]] = [
    ("0 B us", 8, lambda c: c.lat.get(0, math.nan) * 1e6, "{:.3f}"),
    ("8 B us", 8, lambda c: c.lat.get(8, math.nan) * 1e6, "{:.3f}"),
    ("1MiB MB/s", 10, lambda c: c.bw.get(MIB, math.nan) / 1e6, "{:.0f}"),
    ("4MiB MB/s", 10, lambda c: c.bw.get(4 * MIB, math.nan) / 1e6, "{:.0f}"),
    ("a2a q us", 9, lambda c: mean(times(c, "quiet")) * 1e6, "{:.1f}"),
    ("CV q", 7, lambda c: cv(times(c, "quiet")) * 100, "{:.1f}%"),
    ("a2a hog us", 11, lambda c: mean(times(c, "hog")) * 1e6, "{:.1f}"),
    ("CV hog", 7, lambda c: cv(times(c, "hog")) * 100, "{:.1f}%"),
    ("wall 8B s", 10, lambda c: c.wall.get("lat8", math.nan), "{:.3f}"),
    ("wall 4MiB", 10, lambda c: c.wall.get(f"bw{4 * MIB}", math.nan), "{:.3f}"),
    ("wall a2a", 9, lambda c: median([r.wall_s for r in c.a2a["quiet"]]), "{:.3f}"),
]


def round_ratios(cells: dict[str, Cell]) -> dict[str, float]:
    """Latency: commscope / min(OSU, IMB); bandwidth: commscope / osu_bw."""
    cs, o, i = cells["commscope"], cells["osu"], cells["imb"]
    out = {}
    for size in LAT_SIZES:
        peers = finite([o.lat.get(size, math.nan), i.lat.get(size, math.nan)])
        out[f"{size} B us"] = ratio(cs.lat.get(size, math.nan), min(peers, default=math.nan))
    for size, title in zip(BW_SIZES, ("1MiB MB/s", "4MiB MB/s"), strict=True):
        out[title] = ratio(cs.bw.get(size, math.nan), o.bw.get(size, math.nan))
    return out


def fmt(value: float, form: str, width: int) -> str:
    text = form.format(value) if math.isfinite(value) else "-"
    return f"{text:>{width}}"


def print_header() -> None:
    print(f"{'':>5} {'mpi':>8} {'tool':>10}" + "".join(f"{t:>{w}}" for t, w, _, _ in COLUMNS))


def print_rows(
    label: str, mpi: str, rows: dict[str, list[float]], ratios: dict[str, float]
) -> None:
    for tool, values in rows.items():
        if all(not math.isfinite(v) for v in values):
            continue
        print(
            f"{label:>5} {mpi:>8} {tool:>10}"
            + "".join(fmt(v, f, w) for v, (_, w, _, f) in zip(values, COLUMNS, strict=True))
        )
    print(
        f"{label:>5} {mpi:>8} {'ratio':>10}"
        + "".join(fmt(ratios.get(t, math.nan), "{:.2f}x", w) for t, w, _, _ in COLUMNS),
        flush=True,
    )


def cell_rows(cells: dict[str, Cell]) -> dict[str, list[float]]:
    return {t: [fn(c) for _, _, fn, _ in COLUMNS] for t, c in cells.items()}


@dataclass
class HogCheck:
    """commscope's loaded Alltoall runs of one round against its quiet ones."""

    runs: int
    flagged: int
    off: int  # unflagged loaded runs above 1.1x the quiet median
    ratio: float  # median of loaded medians / median of quiet medians
    quiet_off: int  # quiet runs above 1.1x their own median: the bar's noise floor


def hog_check(cells: dict[str, Cell]) -> HogCheck:
    """Loaded medians against 1.1x the median of the quiet medians.

    One-sided: a busy core can only add time; a loaded run below quiet is this machine's
    own noise.
    """
    c = cells["commscope"]
    quiet = median([r.median_s for r in c.a2a["quiet"]])
    loaded = c.a2a["hog"]
    flagged = sum(1 for r in loaded if r.warnings)
    off = sum(1 for r in loaded if not r.warnings and not r.median_s <= 1.1 * quiet)
    quiet_off = sum(1 for r in c.a2a["quiet"] if r.median_s > 1.1 * quiet)
    return HogCheck(
        len(loaded), flagged, off, ratio(median([r.median_s for r in loaded]), quiet), quiet_off
    )


def print_notes(label: str, mpi: str, cells: dict[str, Cell]) -> None:
    h = hog_check(cells)
    windows = ", ".join(f"{b // MIB} MiB {w}" for b, w in cells["commscope"].window.items())
    print(
        f"{label:>5} {mpi:>8} commscope bw window (messages in flight): {windows}; "
        "osu_bw 64, IMB Uniband 256"
    )
    print(
        f"{label:>5} {mpi:>8} commscope under the hog: median {h.ratio:.2f}x quiet, "
        f"{h.flagged} of {h.runs} runs flagged, {h.off} unflagged above 1.1x the quiet "
        f"median (quiet runs above it: {h.quiet_off})"
    )
    for tool, c in cells.items():
        if c.hung:
            print(
                f"{'':>5} {mpi:>8} {tool}: {c.hung} invocation(s) killed after their output "
                "(stuck in MPI_Finalize); their wall times are left out"
            )
        for e in c.errors:
            print(f"{'':>5} {mpi:>8} {tool}: {e}")


# ---------------------------------------------------------------- summary and targets


def summarize_rounds(rounds: list[dict[str, dict[str, Cell]]], mpis: list[str]) -> None:
    print("\nmedians of the per-round figures (ratio: median of the per-round ratios)")
    print_header()
    for mpi in mpis:
        per = [r[mpi] for r in rounds]
        rows = {t: [median([fn(p[t]) for p in per]) for _, _, fn, _ in COLUMNS] for t in TOOLS}
        keys = round_ratios(per[0]).keys()
        ratios = {k: median([round_ratios(p)[k] for p in per]) for k in keys}
        print_rows("med", mpi, rows, ratios)


def verdict(ok: bool) -> str:
    return "PASS" if ok else "MISS"


def check_targets(rounds: list[dict[str, dict[str, Cell]]], mpis: list[str]) -> None:
    print("\ntargets (per-round medians)")
    for mpi in mpis:
        per = [r[mpi] for r in rounds]
        lat = median([round_ratios(p)["8 B us"] for p in per])
        print(
            f"{verdict(lat <= 1.0)} {mpi}: 8 B latency {lat:.2f}x min(osu_latency, IMB) "
            "(target <= 1.0x)"
        )
        for size, title in zip(BW_SIZES, ("1MiB MB/s", "4MiB MB/s"), strict=True):
            r = median([round_ratios(p)[title] for p in per])
            print(
                f"{verdict(r >= 0.95)} {mpi}: bw {size // MIB} MiB {r:.2f}x osu_bw "
                "(target >= 0.95x)"
            )
        q = median([cv(times(p["commscope"], "quiet")) for p in per])
        print(
            f"{verdict(q <= 0.03)} {mpi}: Alltoall 1 MiB quiet CV {q:.1%} over each round's "
            "runs, window method (target <= 3 %)"
        )
        checks = [hog_check(p) for p in per]
        off = sum(h.off for h in checks)
        hog_ratio = median([h.ratio for h in checks])
        print(
            f"{verdict(off == 0)} {mpi}: with a hog, {off} unflagged run(s) above 1.1x the "
            f"quiet median (median {hog_ratio:.2f}x quiet; "
            f"{sum(h.flagged for h in checks)} of {sum(h.runs for h in checks)} flagged; "
            f"quiet runs above 1.1x their own median: {sum(h.quiet_off for h in checks)})"
        )
        for name, title in (("lat8", "8 B ping-pong"), (f"bw{4 * MIB}", "4 MiB bw")):
            w = median([p["commscope"].wall.get(name, math.nan) for p in per])
            print(
                f"{verdict(w <= 1.0)} {mpi}: one-size p2p run ({title}) {w:.3f} s wall "
                "(target <= 1.0 s)"
            )


# ---------------------------------------------------------------- main
