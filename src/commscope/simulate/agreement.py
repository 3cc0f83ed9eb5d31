"""Simulated against measured, point by point.

As in the real-vs-model tables of Rechistov et al. 2012 (cluster simulation). Also how a swept
parameter moves each result.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from commscope.analysis.coll import summarize
from commscope.analysis.curve import message_time
from commscope.data.point_ops import P2P
from commscope.data.records import Coll, Contention, Point

Key = tuple[str, str, str, int]  # (kind, op, where, bytes)


def level_of(pair: str) -> str:
    """The level a pair is compared at: ``inter-node`` or ``intra-node``.

    A simulated node has no sockets, so every pair inside one node is ``intra-node``.
    """
    return "inter-node" if pair == "inter-node" else "intra-node"


def point_times(
    points: list[Point], colls: list[Coll], contentions: list[Contention]
) -> dict[Key, float]:
    """One time per point.

    That is one message's median time (p2p), T (collectives), the median exchange time
    (contention cells).
    """
    out: dict[Key, float] = {}
    for p in points:
        key = (P2P, p.op, level_of(p.pair), p.bytes)
        out.setdefault(key, message_time(p))  # the first pair of a level stands for it
    for c in colls:
        out[("coll", c.op, f"{c.nranks} ranks", c.bytes)] = summarize(c).time_s
    for t in contentions:
        samples = np.asarray([s for row in t.samples_s for s in row], dtype=float)
        out[("contention", t.level, f"cf {t.cf}", t.bytes)] = float(np.median(samples))
    return out


@dataclass(frozen=True)
class Row:
    """One point: measured and simulated time, signed relative error of the simulation."""

    key: Key
    measured_s: float
    simulated_s: float

    @property
    def error(self) -> float:
        """(simulated - measured) / measured."""
        return (self.simulated_s - self.measured_s) / self.measured_s

    def to_json(self) -> dict[str, Any]:
        """Plain dict."""
        kind, op, where, size = self.key
        return {
            "kind": kind,
            "op": op,
            "where": where,
            "bytes": size,
            "measured_s": self.measured_s,
            "simulated_s": self.simulated_s,
            "error": self.error,
        }


@dataclass(frozen=True)
class Agreement:
    """Rows and the summary: median and 90th percentile of |relative error|."""

    rows: list[Row]
    median_abs: float
    p90_abs: float

    def to_json(self) -> dict[str, Any]:
        """Plain dict."""
        return {
            "median_abs_error": self.median_abs,
            "p90_abs_error": self.p90_abs,
            "points": [r.to_json() for r in self.rows],
        }


def agreement(
    measured: dict[Key, float],
    simulated: dict[Key, float],
    min_bytes: int = 0,
    max_bytes: int | None = None,
    where: str | None = None,
) -> Agreement:
    """Compare the points both runs have, within the size range and (optionally) one place."""
    rows = [
        Row(k, measured[k], simulated[k])
        for k in sorted(measured)
        if k in simulated
        and measured[k] > 0
        and k[3] >= min_bytes
        and (max_bytes is None or k[3] <= max_bytes)
        and (where is None or k[2] == where)
    ]
    errs = np.abs([r.error for r in rows])
    if errs.size == 0:
        return Agreement(rows, float("nan"), float("nan"))
    return Agreement(rows, float(np.median(errs)), float(np.percentile(errs, 90)))


def sensitivity(runs: list[dict[Key, float]]) -> list[tuple[Key, list[float], float]]:
    """Per point in every run: its times across the swept values, and the change.

    The change is relative, from the first value to the last.
    """
    if not runs:
        return []
    common = set(runs[0]).intersection(*runs[1:])
    out = []
    for key in sorted(common):
        values = [r[key] for r in runs]
        change = (values[-1] - values[0]) / values[0] if values[0] > 0 else float("nan")
        out.append((key, values, change))
    return out


@dataclass(frozen=True)
class Group:
    """|relative error| of the points of one level (and one size segment, if ``start``)."""

    level: str
    start: int | None
    end: int | None  # exclusive; None: no end
    points: int
    median_abs: float
    p90_abs: float

    def to_json(self) -> dict[str, Any]:
        """Plain dict."""
        return {
            "level": self.level,
            "start": self.start,
            "end": self.end,
            "points": self.points,
            "median_abs_error": self.median_abs,
            "p90_abs_error": self.p90_abs,
        }


def _group(level: str, start: int | None, end: int | None, rows: list[Row]) -> Group:
    errs = np.abs([r.error for r in rows])
    return Group(
        level, start, end, len(rows), float(np.median(errs)), float(np.percentile(errs, 90))
    )


def by_level(rows: list[Row]) -> list[Group]:
    """One group per level (inter-node, intra-node, ...) of the ping-pong points."""
    levels = sorted({r.key[2] for r in rows if r.key[0] == P2P})
    return [
        _group(lv, None, None, [r for r in rows if r.key[0] == P2P and r.key[2] == lv])
        for lv in levels
    ]


def by_segment(rows: list[Row], starts: list[int]) -> list[Group]:
    """One group per level and size segment (segments start at ``starts``, sorted)."""
    bounds = list(zip(starts, [*starts[1:], None], strict=True))
    out = []
    for group in by_level(rows):
        for lo, hi in bounds:
            inside = [
                r
                for r in rows
                if r.key[0] == P2P
                and r.key[2] == group.level
                and r.key[3] >= lo
                and (hi is None or r.key[3] < hi)
            ]
            if inside:
                out.append(_group(group.level, lo, hi, inside))
    return out


def segment_starts(factors: list[list[float]] | None, sizes: list[int]) -> list[int]:
    """The model's factor segments, else powers of four from 64 B over ``sizes``."""
    if factors:
        return sorted(int(s) for s, _ in factors)
    top = max(sizes, default=0)
    return [0] + [64 * 4**k for k in range(20) if 64 * 4**k <= top]


def measured_record(run_id: int, measured: dict[Key, float]) -> dict[str, Any]:
    """The measured times a simulated run keeps (``simulate.measured`` of its request)."""
    return {"measured": {"run": run_id, "times": [[*k, t] for k, t in sorted(measured.items())]}}


def measured_of(simulate: dict[str, Any]) -> tuple[int, dict[Key, float]] | None:
    """The measured run and times a simulated run was validated against, if it was."""
    rec = simulate.get("measured")
    if not isinstance(rec, dict):
        return None
    times = {
        (str(kind), str(op), str(where), int(size)): float(t)
        for kind, op, where, size, t in rec.get("times", [])
    }
    return int(rec["run"]), times
