"""Compare runs size by size: medians, relative differences and a Mann-Whitney U test.

For each (op, pair or group, bytes) measured in any of the runs, every run contributes the
median of its raw samples, taken as the time of one message (so runs with other bw windows
compare), or of its valid launch times for collectives. Each later run is compared with the
first: the relative difference of the medians (positive = slower than the first run) and the
two-sided Mann-Whitney U test on the raw samples. A difference is significant when p < 0.01.
The test needs at least one side with two samples; two single imported values get no p-value.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from itertools import groupby
from typing import Any

import numpy as np
from numpy.typing import NDArray

from commscope.analysis.curve import message_samples
from commscope.analysis.p2p import OP_ORDER, PAIR_ORDER
from commscope.data.point_ops import P2P, mbw_pairs
from commscope.data.records import Coll, Point

ALPHA = 0.01


@dataclass(frozen=True)
class RunValue:
    """One run's measurement of one key."""

    run_id: int
    n_samples: int
    median_s: float  # median time of one message (or of one collective launch)
    latency_s: float | None  # the same median, for ping-pong and collectives
    bandwidth_Bps: float | None  # bytes / median, for messages of at least one byte


@dataclass(frozen=True)
class Difference:
    """A later run against the first one."""

    run_id: int
    relative_difference: float  # (median - first median) / first median; > 0 is slower
    p_value: float | None
    significant: bool


@dataclass(frozen=True)
class CompareRow:
    """One (kind, op, pair or group, bytes) across the runs."""

    kind: str  # "p2p" or "coll"
    op: str
    pair: str  # pair label for p2p, group for collectives
    bytes: int
    values: tuple[RunValue | None, ...]  # one per run, None where it was not measured
    differences: tuple[Difference | None, ...]  # one per run after the first

    def to_json(self) -> dict[str, Any]:
        """Plain dict with full key names."""
        return {
            "kind": self.kind,
            "op": self.op,
            "pair": self.pair,
            "bytes": self.bytes,
            "runs": [None if v is None else asdict(v) for v in self.values],
            "differences": [None if d is None else asdict(d) for d in self.differences],
        }


def _samples(record: Point | Coll) -> NDArray[np.float64]:
    if isinstance(record, Point):
        return message_samples(record)
    return np.asarray(record.valid_times_s, dtype=np.float64)


def _value(run_id: int, record: Point | Coll) -> RunValue | None:
    samples = _samples(record)
    if samples.size == 0:
        return None
    med = float(np.median(samples))
    is_time = isinstance(record, Coll) or record.op == "pingpong"
    bw = record.bytes / med if record.bytes > 0 and med > 0 else None
    return RunValue(
        run_id,
        int(samples.size),
        med,
        med if is_time else None,
        bw if isinstance(record, Point) else None,
    )


def mann_whitney_p(a: Sequence[float], b: Sequence[float]) -> float | None:
    """Two-sided Mann-Whitney U p-value; None when both sides hold a single value."""
    if len(a) == 0 or len(b) == 0 or (len(a) < 2 and len(b) < 2):
        return None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all values tied
        from scipy.stats import mannwhitneyu  # imported where a test is made: half a second

        p = float(mannwhitneyu(a, b, alternative="two-sided").pvalue)
    return None if math.isnan(p) else p


def _difference(
    run_id: int,
    base: Point | Coll,
    other: Point | Coll,
    first: RunValue,
    value: RunValue,
    alpha: float,
) -> Difference:
    rel = (value.median_s - first.median_s) / first.median_s if first.median_s > 0 else math.nan
    p = mann_whitney_p(list(_samples(base)), list(_samples(other)))
    return Difference(run_id, rel, p, p is not None and p < alpha)


def _order(key: tuple[str, str, str, int]) -> tuple[int, int, str, int, str, int]:
    family, op, pair, size = key  # the row's kind is its records' family: p2p or coll
    op_rank = OP_ORDER.index(op) if op in OP_ORDER else len(OP_ORDER)
    pair_rank = PAIR_ORDER.index(pair) if pair in PAIR_ORDER else len(PAIR_ORDER)
    # Pairs of no fixed rank (a matrix's "0->1") by name, so each pair's sizes stay together.
    return (0 if family == P2P else 1, op_rank, op, pair_rank, pair, size)


def compare_runs(
    runs: Sequence[tuple[int, Sequence[Point | Coll]]], alpha: float = ALPHA
) -> list[CompareRow]:
    """Compare every run with the first, key by key.

    Args:
        runs: (run id, its points and collectives) per run; the first is the reference.
        alpha: significance level of the Mann-Whitney test.

    Returns:
        One row per key measured in any run: point-to-point first, then collectives.
    """
    tables: list[dict[tuple[str, str, str, int], Point | Coll]] = []
    for _, records in runs:
        table: dict[tuple[str, str, str, int], Point | Coll] = {}
        for r in records:
            op, pair, size = r.key
            table[(P2P if isinstance(r, Point) else "coll", op, pair, size)] = r
        tables.append(table)
    keys = sorted({k for t in tables for k in t}, key=_order)
    rows = []
    for key in keys:
        found = [t.get(key) for t in tables]
        values = tuple(
            None if r is None else _value(run_id, r)
            for (run_id, _), r in zip(runs, found, strict=True)
        )
        diffs: list[Difference | None] = []
        for (run_id, _), other, v in list(zip(runs, found, values, strict=True))[1:]:
            base, first = found[0], values[0]
            if base is None or first is None or other is None or v is None:
                diffs.append(None)
            else:
                diffs.append(_difference(run_id, base, other, first, v, alpha))
        kind, op, pair, size = key
        rows.append(CompareRow(kind, op, pair, size, values, tuple(diffs)))
    return rows


def shows_rate(family: str, op: str) -> bool:
    """Whether a (kind, op) group reads best as bandwidth (bw, bibw) rather than time.

    ``family`` is the rows' kind: the family of their records, p2p (Points) or coll.
    """
    multi_pair = mbw_pairs(op) is not None  # aggregate bandwidth of k pairs
    return family == P2P and (op in ("bw", "bibw", "bw_each", "bibw_each") or multi_pair)


def grouped(rows: Sequence[CompareRow]) -> list[tuple[tuple[str, str, str], list[CompareRow]]]:
    """Rows grouped by (kind, op, pair), in their order."""
    return [
        (key, list(members)) for key, members in groupby(rows, key=lambda r: (r.kind, r.op, r.pair))
    ]
