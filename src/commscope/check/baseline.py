"""A baseline: each figure's center and run-to-run spread, taken from one or more stored runs.

A figure's center is the median of its runs' centers (each run's center is the median of its
raw samples), its spread the standard deviation of those centers relative to the center.
Its run-to-run band is a one-sided 99 % prediction interval for the center of one more run,
drawn on the logarithm of the centers (run-to-run noise of times and rates is a factor, not
a difference): Student's t with n - 1 degrees of freedom, times the standard deviation of
the log centers, times sqrt(1 + 1/n), turned back into a share in the figure's worse
direction. On the log scale a rate's band stays below 100 %: however noisy the baseline,
a rate falling towards zero leaves it (a band on the centers themselves could pass 100 %,
and then no loss of bandwidth would ever be called). An unchanged cluster passes a figure's
band in 99 % of checks. Few runs give wide bands (t is 7.0 with two degrees of freedom, 3.7
with four): more baseline runs make a check sharper. One run gives no band.

The pooled raw samples are kept as ``QUANTILES`` evenly spaced order statistics, enough for a
rank test and small enough that a baseline of 10,000 figures opens in well under a second.
"""

from __future__ import annotations

import functools
import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy import stats

from commscope.errors import StoreError
from commscope.kinds.figures import HIGHER, Figure, key_of

BASELINE_VERSION = 1
QUANTILES = 33
BAND_LEVEL = 0.99  # share of an unchanged cluster's runs inside a figure's band


@functools.lru_cache(maxsize=64)
def t_quantile(level: float, dof: int) -> float:
    """Student's t quantile; cached: a check asks it of ten thousand figures, same few dofs."""
    return float(stats.t.ppf(level, dof))


@dataclass(frozen=True)
class FigureBase:
    """One figure of a baseline."""

    name: str
    labels: dict[str, str]
    unit: str
    better: str
    tolerance: str  # the figure's --tolerance class
    center: float
    run_centers: tuple[float, ...]
    spread: float | None  # standard deviation of the run centers / center; None with one run
    samples: tuple[float, ...]  # pooled raw samples as QUANTILES order statistics
    n_samples: int  # how many raw samples they summarise

    @property
    def key(self) -> str:
        """The figure's key (see :func:`commscope.kinds.figures.key_of`)."""
        return key_of(self.name, self.labels)

    def band(self, level: float) -> float | None:
        """How much worse than the center (a share) one more run may be at ``level``.

        The one-sided prediction interval of the log centers; None: one run. Centers that are
        not all positive (a fitted intercept may be zero) have no logarithm: their band is
        drawn on the centers themselves.
        """
        n = len(self.run_centers)
        if self.spread is None or n < 2:
            return None
        width = t_quantile(level, n - 1) * math.sqrt(1 + 1 / n)
        if min(self.run_centers) <= 0:
            return width * self.spread
        half = width * statistics.stdev(math.log(c) for c in self.run_centers)
        return -math.expm1(-half) if self.better == HIGHER else math.expm1(half)

    def to_json(self) -> dict[str, Any]:
        """Plain dict; :meth:`from_json` reads it back."""
        return {
            "name": self.name,
            "labels": self.labels,
            "unit": self.unit,
            "better": self.better,
            "tolerance": self.tolerance,
            "center": self.center,
            "run_centers": list(self.run_centers),
            "spread": self.spread,
            "samples": list(self.samples),
            "n_samples": self.n_samples,
        }

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> FigureBase:
        """Read what :meth:`to_json` wrote."""
        return cls(
            name=str(d["name"]),
            labels={str(k): str(v) for k, v in d["labels"].items()},
            unit=str(d["unit"]),
            better=str(d["better"]),
            tolerance=str(d["tolerance"]),
            center=float(d["center"]),
            run_centers=tuple(map(float, d["run_centers"])),
            spread=None if d["spread"] is None else float(d["spread"]),
            samples=tuple(map(float, d["samples"])),  # map: 10,000 figures read in a check
            n_samples=int(d["n_samples"]),
        )


@dataclass(frozen=True)
class Baseline:
    """A named baseline: the runs it came from, their environment and every figure."""

    name: str
    created_unix: float
    runs: tuple[int, ...]
    kind: str  # the runs' kind (p2p, coll, all, ...)
    request: dict[str, Any]  # the first run's request: what `check` measures again
    environment: dict[str, Any]
    figures: dict[str, FigureBase] = field(repr=False)

    def band_level(self) -> float:
        """The level each band is drawn at (one-sided)."""
        return BAND_LEVEL

    def to_json(self) -> dict[str, Any]:
        """Plain dict with a version; :meth:`from_json` reads it back."""
        return {
            "baseline_version": BASELINE_VERSION,
            "name": self.name,
            "created_unix": self.created_unix,
            "runs": list(self.runs),
            "kind": self.kind,
            "request": self.request,
            "environment": self.environment,
            "figures": [f.to_json() for f in self.figures.values()],
        }

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Baseline:
        """Read what :meth:`to_json` wrote.

        Raises:
            StoreError: the body is of another baseline version or lacks a field.
        """
        name = d.get("name", "?")
        fix = f"make it again ('commscope baseline delete {name}', then 'create')"
        if d.get("baseline_version") != BASELINE_VERSION:
            raise StoreError(
                f"baseline {name} has version {d.get('baseline_version')!r}, this commscope"
                f" reads {BASELINE_VERSION}; {fix}"
            )
        try:
            return cls._from_json(d)
        except (KeyError, TypeError, ValueError) as err:
            raise StoreError(f"baseline {name} lacks or garbles {err}; {fix}") from None

    @classmethod
    def _from_json(cls, d: Mapping[str, Any]) -> Baseline:
        figures = [FigureBase.from_json(f) for f in d["figures"]]
        return cls(
            name=str(d["name"]),
            created_unix=float(d["created_unix"]),
            runs=tuple(int(r) for r in d["runs"]),
            kind=str(d["kind"]),
            request=dict(d["request"]),
            environment=dict(d["environment"]),
            figures={f.key: f for f in figures},
        )


def spread_of(centers: Sequence[float]) -> float | None:
    """The standard deviation of run centers relative to their median; None for one run."""
    middle = float(np.median(centers))
    if len(centers) < 2 or middle == 0:
        return None
    return float(np.std(centers, ddof=1)) / abs(middle)


def summary_samples(samples: Sequence[float], count: int = QUANTILES) -> tuple[float, ...]:
    """``samples`` themselves when few, else ``count`` evenly spaced order statistics."""
    if len(samples) <= count:
        return tuple(sorted(float(s) for s in samples))
    values = np.quantile(np.asarray(samples, dtype=float), np.linspace(0, 1, count))
    return tuple(float(v) for v in values)


def figure_bases(runs: Sequence[Sequence[Figure]]) -> dict[str, FigureBase]:
    """Each figure of ``runs`` (one list of figures per run) with its center and spread.

    A figure some runs lack gets its center and spread from the runs that have it.
    """
    by_key: dict[str, list[Figure]] = {}
    for figures in runs:
        for f in figures:
            if f.samples:
                by_key.setdefault(f.key, []).append(f)
    out = {}
    for key, found in by_key.items():
        spec = found[0].spec
        centers = [f.center for f in found]
        pooled = [s for f in found for s in f.samples]
        out[key] = FigureBase(
            name=spec.name,
            labels=dict(found[0].labels),
            unit=spec.unit,
            better=spec.better,
            tolerance=spec.tolerance,
            center=float(np.median(centers)),
            run_centers=tuple(centers),
            spread=spread_of(centers),
            samples=summary_samples(pooled),
            n_samples=len(pooled),
        )
    return out
