"""The all-pairs matrix (mpiGraph's method) and the effective bisection bandwidth (Netgauge's).

Records in: ``matrix_bw`` / ``matrix_lat`` points, one per ordered pair of ranks
("src->dst"), and ``bisection_bw`` points, one per pair of a random matching ("m<r>/src->dst").
Out: the matrix with its median and MAD and the nodes and links that stand out, and the
distribution of the bisection pairs' bandwidths per size.

Which nodes and links stand out: the matrix's logarithm is split by Tukey's median polish
(Tukey 1977, "Exploratory Data Analysis") into an overall level, a row effect per sender, a
column effect per receiver and a residual per link. A plain median over all links breaks
down when one node is slow both ways: on 4 nodes its row and column hold half the links
(measured on the virtual cluster, the matrix's median fell to the slow links' level and
nothing was named). The polish takes each row's and column's median in turn, so one bad
node moves none of the others' effects.

A node's row (it sends) or column (it receives) is named when its effect is worse than the
median effect by more than ``k`` MADs of the effects (scaled by 1.4826, the standard
deviation under normal noise); a single link when its residual is worse by more than ``k``
MADs of the links no named row or column explains, and neither its sender's row nor its
receiver's column was named (which would explain it). ``k = 3`` is the usual robust-outlier
rule (Leys et al. 2013, "Detecting outliers: do not use standard deviation around the mean,
use absolute deviation around the median"): under normal noise of a known spread a link is
named by chance with probability 0.13 %. Here the spread is estimated from the matrix
itself, a dozen links on 4 nodes, so chance outliers are a few times likelier: with 5 %
lognormal noise, 0.3-0.5 % of the links of synthetic 4- and 6-node matrices were named.
Every difference must also exceed ``FLOOR`` of the level: in a matrix with almost no spread
(MAD near 0) a link a few percent off is not worth naming. And the links' best samples must
show it too: on a machine whose ranks share cores, a link's median can be held up by waiting
for a core (on the virtual cluster latency medians ranged over 20-1700 us where the best
samples stayed within 9-40 us); a slow link is slow in every sample.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from commscope.data.records import Point
from commscope.units import rate_text, time_text

K_MADS = 3.0
MAD_TO_SIGMA = 1.4826  # a normal distribution's standard deviation in MADs
FLOOR = 0.10  # share of the median a row, column or link must be off by at least


@dataclass(frozen=True)
class Outlier:
    """A node's row (``sender``), column (``receiver``) or one ``link`` that is worse."""

    where: str  # sender, receiver or link
    name: str  # the node, or "a->b" for a link
    value: float  # the row's or column's median, or the link's value
    typical: float  # what the matrix's typical link gives (its polished level)
    mads: float  # how many MADs (of the residuals, log scale) worse than the typical effect

    def text(self, unit: str) -> str:
        """One line naming it, e.g. "node2 as sender: median 5.2 MB/s vs 24.9 (9.1 MADs)"."""
        role = {"sender": " as sender", "receiver": " as receiver", "link": ""}[self.where]
        return (
            f"{self.name}{role}: {_shown(self.value, unit)} where a typical link gives "
            f"{_shown(self.typical, unit)} ({self.mads:.1f} MADs worse)"
        )

    def to_json(self) -> dict[str, Any]:
        """The outlier's fields."""
        return {
            "where": self.where,
            "name": self.name,
            "value": self.value,
            "typical": self.typical,
            "mads": self.mads,
        }


def _shown(value: float, unit: str) -> str:
    return rate_text(value) if unit == "Bps" else time_text(value)


@dataclass(frozen=True)
class Matrix:
    """One op at one size: ``values[i][j]`` from node i to node j (None: not measured).

    Bandwidth in bytes/s (higher is better), latency in seconds (lower is better).
    """

    op: str
    bytes: int
    names: tuple[str, ...]
    values: tuple[tuple[float | None, ...], ...]
    median: float
    mad: float  # of the residuals, scaled to a standard deviation, in the matrix's unit
    outliers: tuple[Outlier, ...]

    @property
    def unit(self) -> str:
        """Bps for bandwidth, s for latency."""
        return "s" if self.op == "matrix_lat" else "Bps"

    @property
    def named_nodes(self) -> tuple[str, ...]:
        """Nodes its outliers name (both ends of a link), in matrix order."""
        named = set()
        for o in self.outliers:
            named.update(o.name.split("->") if o.where == "link" else [o.name])
        return tuple(n for n in self.names if n in named)

    def to_json(self) -> dict[str, Any]:
        """The matrix, its scale and its outliers."""
        return {
            "op": self.op,
            "bytes": self.bytes,
            "unit": self.unit,
            "nodes": list(self.names),
            "values": [list(row) for row in self.values],
            "median": self.median,
            "mad": self.mad,
            "outliers": [o.to_json() for o in self.outliers],
            "named_nodes": list(self.named_nodes),
        }


def node_names(header: Mapping[str, Any] | None, nranks: int) -> tuple[str, ...]:
    """A name per rank from a run's header.

    Its node's name; "node/sK" for a matrix of sockets (``--matrix-per socket``: K is the
    socket its rank ran on); "node/rN" where ranks share a node otherwise.
    """
    ranks = {int(r["rank"]): r for r in (header or {}).get("ranks", ())}
    nodes = [str(ranks[i]["node"]) if i in ranks else f"r{i}" for i in range(nranks)]
    if ((header or {}).get("options") or {}).get("matrix_per") == "socket":
        return tuple(
            f"{node}/s{ranks[i].get('socket', '?')}" if i in ranks else node
            for i, node in enumerate(nodes)
        )
    if len(set(nodes)) == len(nodes):
        return tuple(nodes)
    return tuple(f"{node}/r{i}" for i, node in enumerate(nodes))


def rank_nodes(header: Mapping[str, Any] | None, points: Sequence[Point]) -> tuple[str, ...]:
    """A name per rank of a run's matrix (:func:`node_names`), its rank count from the header.

    A run without a header (an import) counts the ranks its points name.
    """
    nranks = int(header["nranks"]) if header else 1 + max(max(p.ranks) for p in points)
    return node_names(header, nranks)


def _value(p: Point) -> float:
    return p.latency_s if p.op == "matrix_lat" else p.bandwidth_Bps


def best_value(p: Point) -> float:
    """The least disturbed sample: waiting for a core or a busy link only adds time."""
    fastest = min(p.samples_s)
    return fastest if p.op == "matrix_lat" else p.bytes_per_sample / fastest


def median_polish(
    logs: np.ndarray, rounds: int = 10
) -> tuple[float, np.ndarray, np.ndarray, np.ndarray]:
    """Tukey's median polish of a matrix with NaN where nothing was measured.

    Returns the overall level, row effects, column effects and residuals (residual[i, j] =
    logs[i, j] - level - row[i] - col[j]).
    """
    resid = logs.copy()
    n_rows, n_cols = logs.shape
    row, col, level = np.zeros(n_rows), np.zeros(n_cols), 0.0
    for _ in range(rounds):
        r = np.nan_to_num(np.nanmedian(resid, axis=1, keepdims=True))
        resid -= r
        row += r[:, 0]
        shift = float(np.median(col))
        col -= shift
        level += shift
        c = np.nan_to_num(np.nanmedian(resid, axis=0, keepdims=True))
        resid -= c
        col += c[0]
        shift = float(np.median(row))
        row -= shift
        level += shift
        if max(float(np.max(np.abs(r))), float(np.max(np.abs(c)))) < 1e-12:
            break
    return level, row, col, resid


def build(
    op: str,
    nbytes: int,
    values: np.ndarray,
    names: Sequence[str],
    k: float = K_MADS,
    best: np.ndarray | None = None,
) -> Matrix:
    """The matrix of ``values`` (NaN where not measured, e.g. the diagonal) and its outliers.

    With ``best`` (each link's least disturbed sample), an outlier is named only when the
    best samples show it too: a link whose fastest sample keeps up with the others was held
    up by the machine (a rank waiting for a core), not slow.
    """
    if best is not None:
        confirmed = {(o.where, o.name) for o in build(op, nbytes, best, names, k).outliers}
        plain = build(op, nbytes, values, names, k)
        kept = tuple(o for o in plain.outliers if (o.where, o.name) in confirmed)
        return dataclasses.replace(plain, outliers=kept)
    n = len(names)
    measured = ~np.isnan(values) & (values > 0)
    masked = np.where(measured, values, np.nan)
    rows = tuple(
        tuple(float(values[i, j]) if measured[i, j] else None for j in range(n)) for i in range(n)
    )
    links = values[measured]
    median = float(np.median(links)) if links.size else math.nan
    if links.size < 2:
        return Matrix(op, nbytes, tuple(names), rows, median, math.nan, ())
    worse = 1.0 if op == "matrix_lat" else -1.0  # latency: higher is worse
    logs = np.log(masked)
    level, row, col, resid = median_polish(logs)
    floor = -math.log(1.0 - FLOOR)

    found: list[Outlier] = []
    for where, effects, lines in (("sender", row, masked), ("receiver", col, masked.T)):
        centre, spread = float(np.median(effects)), robust_sigma(effects)
        for i, name in enumerate(names):
            badness = worse * (float(effects[i]) - centre)
            if badness > max(k * spread, floor):
                typical = math.exp(level + centre)
                found.append(
                    Outlier(
                        where, name, float(np.nanmedian(lines[i])), typical, _ratio(badness, spread)
                    )
                )
    senders = {o.name for o in found if o.where == "sender"}
    receivers = {o.name for o in found if o.where == "receiver"}
    # The noise: the spread of the links no named row or column explains.
    healthy = measured.copy()
    for i, name in enumerate(names):
        if name in senders:
            healthy[i, :] = False
        if name in receivers:
            healthy[:, i] = False
    spread = robust_sigma(logs[healthy]) if healthy.sum() >= 2 else 0.0
    for i in range(n):
        for j in range(n):
            if not measured[i, j] or names[i] in senders or names[j] in receivers:
                continue
            badness = worse * float(resid[i, j])
            if badness > max(k * spread, floor):
                name = f"{names[i]}->{names[j]}"
                found.append(
                    Outlier(
                        "link",
                        name,
                        float(values[i, j]),
                        math.exp(level + row[i] + col[j]),
                        _ratio(badness, spread),
                    )
                )
    mad = robust_sigma(values[healthy]) if healthy.sum() >= 2 else math.nan
    return Matrix(op, nbytes, tuple(names), rows, median, mad, tuple(found))


def robust_sigma(x: np.ndarray) -> float:
    """The MAD of ``x`` scaled to a standard deviation under normal noise."""
    return float(np.median(np.abs(x - np.median(x)))) * MAD_TO_SIGMA


def _ratio(badness: float, spread: float) -> float:
    return badness / spread if spread > 0 else math.inf


def matrices(points: Sequence[Point], names: Sequence[str], k: float = K_MADS) -> list[Matrix]:
    """Latency first, then bandwidth per size: one matrix each from the matrix points."""
    n = len(names)
    out = []
    points = [p for p in points if "/" not in p.pair]  # c1/...: confirmation, not the matrix
    for op in ("matrix_lat", "matrix_bw"):
        for nbytes in sorted({p.bytes for p in points if p.op == op}):
            values, best = np.full((n, n), np.nan), np.full((n, n), np.nan)
            for p in points:
                if p.op == op and p.bytes == nbytes:
                    values[p.ranks[0], p.ranks[1]] = _value(p)
                    best[p.ranks[0], p.ranks[1]] = best_value(p)
            out.append(build(op, nbytes, values, names, k, best))
    return out


@dataclass(frozen=True)
class Bisection:
    """The pairs of every random matching at one size: their bandwidths' distribution.

    The mean per pair is the effective bisection bandwidth (Netgauge); ``aggregate_Bps`` is
    that mean times the pairs of one matching, what the bisection carries at once.
    """

    bytes: int
    matchings: int
    pairs: int  # pair measurements over all matchings
    min_Bps: float  # noqa: N815 - the unit is part of the name
    median_Bps: float  # noqa: N815
    mean_Bps: float  # noqa: N815
    max_Bps: float  # noqa: N815
    aggregate_Bps: float  # noqa: N815

    def to_json(self) -> dict[str, Any]:
        """The distribution's fields."""
        return {
            "bytes": self.bytes,
            "matchings": self.matchings,
            "pairs": self.pairs,
            "min_Bps": self.min_Bps,
            "median_Bps": self.median_Bps,
            "mean_Bps": self.mean_Bps,
            "effective_bisection_Bps": self.mean_Bps,
            "max_Bps": self.max_Bps,
            "aggregate_Bps": self.aggregate_Bps,
        }


def bisection(points: Sequence[Point]) -> list[Bisection]:
    """One distribution per size of the bisection points."""
    out = []
    for nbytes in sorted({p.bytes for p in points if p.op == "bisection_bw"}):
        mine = [p for p in points if p.op == "bisection_bw" and p.bytes == nbytes]
        rates = np.array([p.bandwidth_Bps for p in mine], dtype=float)
        matchings = len({p.pair.split("/", 1)[0] for p in mine})
        mean = float(np.mean(rates))
        out.append(
            Bisection(
                nbytes,
                matchings,
                len(mine),
                float(np.min(rates)),
                float(np.median(rates)),
                mean,
                float(np.max(rates)),
                mean * len(mine) / matchings,
            )
        )
    return out


def findings(found: Sequence[Matrix]) -> list[str]:
    """A line per outlier of each matrix, or that none stands out."""
    out = []
    for m in found:
        what = f"{'latency' if m.unit == 's' else 'bandwidth'} matrix at {m.bytes} bytes"
        if not m.outliers:
            out.append(f"{what}: no node or link more than {K_MADS:g} MADs worse than the median")
        out += [f"{what}: {o.text(m.unit)}" for o in m.outliers]
    return out
