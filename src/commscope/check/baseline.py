"""A baseline: each figure's run centers, which of them count, and what a check can detect.

The unit that varies between a baseline and a later night is the run, so a figure's
evidence is its run centers (each the median of one run's raw samples), never the pooled
raw samples: those only say how precisely one run was measured.

**Scale.** A positive figure (a time, a rate) varies from run to run by a factor: its run
centers are taken on the log scale, y = log(center). A figure that can be zero or negative
(a fitted intercept) keeps the linear scale, relative to its center: y = center / |center
of the baseline|. On both scales a difference of y reads as a share.

**Runs left out of a figure's spread**: a run far off the others, or one the load monitor
flagged, by the rule of :mod:`commscope.check.left_out`; every left-out run is named per
figure with its cause.

**Detection.** From the kept runs' mean ybar and the moderated variance s~^2 with df degrees
of freedom (:mod:`commscope.check.moderated`), following Currie (1968, "Limits for
qualitative detection and quantitative determination"), with n kept runs:

    L_C = t_{1-alpha}(df) s~ sqrt(1 + 1/n)                     (decision threshold)
    L_D = (t_{1-alpha}(df) + t_{1-beta}(df)) s~ sqrt(1 + 1/n)  (detection limit)

alpha = ``ALPHA`` (0.01, the check's per-figure level), beta = ``BETA`` (0.05). L_C is how
far one more run of the unchanged cluster falls beyond ybar in 1 % of checks; L_D is the
change that a run passes L_C with 95 % probability. Both are turned into a share in the
figure's worse direction: exp(L) - 1 for a figure where lower is better, 1 - exp(-L) for
a rate (which stays below 100 %: a rate falling towards zero always passes it), L itself
on the linear scale. A figure whose L_D passes the bound (``DEFAULT_MAX_DETECTION_LIMIT``,
50 %) is **not judged**: a check could not tell a change of that size from chance, and
calling it OK would be false comfort. L_D uses the per-figure alpha; a check holding many
figures together (Benjamini-Hochberg) is somewhat less sensitive than L_D says.

The pooled raw samples are kept as ``QUANTILES`` evenly spaced order statistics to describe
a run beside its baseline, never as evidence between runs.
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

from commscope.check.left_out import left_out_of
from commscope.check.moderated import NO_PRIOR, Prior, family_of, fit_prior
from commscope.errors import StoreError
from commscope.kinds.figures import HIGHER, Figure, key_of

BASELINE_VERSION = 2
READS = (1, 2)  # baseline versions this commscope reads
QUANTILES = 33
ALPHA = 0.01  # per-figure level of the decision threshold (and the check's FDR)
BETA = 0.05  # chance that a change of the detection limit goes unseen
DEFAULT_MAX_DETECTION_LIMIT = 0.50  # a figure whose L_D passes this is not judged


@functools.lru_cache(maxsize=256)
def t_quantile(level: float, dof: float) -> float:
    """Student's t quantile (normal for infinite dof); cached: a check asks it 10^4 times."""
    return float(stats.t.ppf(level, dof))


@dataclass(frozen=True)
class Limits:
    """What a check can tell of one figure: its scale's statistics and Currie's limits.

    Attributes:
        n: runs kept.
        mean: their mean y (log or relative scale).
        s_squared: the moderated variance s~^2 of y between runs.
        df: its degrees of freedom (0: no estimate).
        decision: L_C as a share in the worse direction; None: cannot be drawn.
        detection: L_D as a share; None: cannot be drawn (no estimate of the spread).
        judged: whether a check judges it (its L_D is within the bound).
        reason: why not, when not.
    """

    n: int
    mean: float
    s_squared: float
    df: float
    decision: float | None
    detection: float | None
    judged: bool
    reason: str | None

    @property
    def scale(self) -> float:
        """s~ sqrt(1 + 1/n): the standard error of one more run about the kept mean."""
        return math.sqrt(self.s_squared * (1 + 1 / self.n))


@dataclass(frozen=True)
class FigureBase:
    """One figure of a baseline: every run's center, and which of them are left out."""

    name: str
    labels: dict[str, str]
    unit: str
    better: str
    tolerance: str  # the figure's --tolerance class
    center: float  # the median of the kept runs' centers
    run_centers: tuple[float, ...]  # every run's center, left out or not
    runs: tuple[int | None, ...]  # the run of each center (None: a version-1 baseline lost it)
    left_out: tuple[tuple[int, str], ...]  # (index into run_centers, cause)
    samples: tuple[float, ...]  # pooled raw samples as QUANTILES order statistics (to describe)
    n_samples: int  # how many raw samples they summarise

    @property
    def key(self) -> str:
        """The figure's key (see :func:`commscope.kinds.figures.key_of`)."""
        return key_of(self.name, self.labels)

    @property
    def family(self) -> str:
        """The family its variance is borrowed within."""
        return family_of(self.name, self.labels)

    @property
    def log_scale(self) -> bool:
        """Whether its centers are taken on the log scale (all positive)."""
        return min(self.run_centers) > 0

    @property
    def kept(self) -> tuple[float, ...]:
        """The centers of the runs that count."""
        out = {i for i, _ in self.left_out}
        return tuple(c for i, c in enumerate(self.run_centers) if i not in out)

    def y(self, value: float) -> float:
        """``value`` on the figure's scale: log, or relative to the center."""
        if self.log_scale:
            return math.log(value) if value > 0 else -math.inf
        return value / abs(self.center) if self.center else math.nan

    def values(self) -> list[float]:
        """The kept runs' centers on the figure's scale."""
        return [self.y(c) for c in self.kept]

    @property
    def spread(self) -> float | None:
        """The standard deviation of the kept runs on the figure's scale; None: one run."""
        ys = self.values()
        if len(ys) < 2 or not all(math.isfinite(v) for v in ys):
            return None
        return statistics.stdev(ys)

    def share(self, step: float) -> float:
        """A step of y in the worse direction as a share of the center."""
        if not self.log_scale:
            return step
        return -math.expm1(-step) if self.better == HIGHER else math.expm1(step)

    def left_out_text(self) -> list[str]:
        """'run 3: far off the others (...)' per left-out run."""
        return [f"run {_run(self.runs[i])}: {cause}" for i, cause in self.left_out]

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
            "runs": list(self.runs),
            "left_out": [{"index": i, "run": self.runs[i], "cause": c} for i, c in self.left_out],
            "spread": self.spread,
            "samples": list(self.samples),
            "n_samples": self.n_samples,
        }

    @classmethod
    def from_json(cls, d: Mapping[str, Any], runs: Sequence[int] | None = None) -> FigureBase:
        """Read what :meth:`to_json` wrote; ``runs``: a version-1 baseline's runs.

        A version-1 figure has no run ids nor left-out runs: its centers are taken to be the
        baseline's runs in order when there are as many (else their runs are unknown), and
        the far-off rule is applied again (it kept no per-run load: none is left out for it).
        """
        centers = tuple(map(float, d["run_centers"]))
        if runs is None:
            ids: tuple[int | None, ...] = tuple(None if r is None else int(r) for r in d["runs"])
            left = tuple((int(x["index"]), str(x["cause"])) for x in d["left_out"])
        else:
            ids = tuple(runs) if len(runs) == len(centers) else (None,) * len(centers)
            left = left_out_of(centers, {})
        return cls(
            name=str(d["name"]),
            labels={str(k): str(v) for k, v in d["labels"].items()},
            unit=str(d["unit"]),
            better=str(d["better"]),
            tolerance=str(d["tolerance"]),
            center=_kept_median(centers, left),
            run_centers=centers,
            runs=ids,
            left_out=left,
            samples=tuple(map(float, d["samples"])),  # map: 10,000 figures read in a check
            n_samples=int(d["n_samples"]),
        )


def _run(run: int | None) -> str:
    return "?" if run is None else str(run)


def _kept_median(centers: Sequence[float], left: Sequence[tuple[int, str]]) -> float:
    out = {i for i, _ in left}
    return float(np.median([c for i, c in enumerate(centers) if i not in out]))


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
    max_detection_limit: float = DEFAULT_MAX_DETECTION_LIMIT  # the bound it was made with
    run_loads: dict[int, float | None] = field(default_factory=dict)  # others' share per run
    version: int = BASELINE_VERSION  # the version it was read from

    def priors(self) -> dict[str, Prior]:
        """Each family's prior, fitted from its figures' kept runs."""
        return _priors(self)

    def limits(self, max_detection_limit: float | None = None) -> dict[str, Limits]:
        """Every figure's :class:`Limits` against ``max_detection_limit`` (default: its own)."""
        bound = self.max_detection_limit if max_detection_limit is None else max_detection_limit
        return _limits(self, bound)

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
            "max_detection_limit": self.max_detection_limit,
            "run_loads": {str(k): v for k, v in self.run_loads.items()},
            "figures": [f.to_json() for f in self.figures.values()],
        }

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Baseline:
        """Read what :meth:`to_json` wrote, or a version-1 baseline.

        Raises:
            StoreError: the body is of an unknown baseline version or lacks a field.
        """
        name = d.get("name", "?")
        fix = f"make it again ('commscope baseline delete {name}', then 'create')"
        version = d.get("baseline_version")
        if version not in READS:
            raise StoreError(
                f"baseline {name} has version {version!r}, this commscope reads"
                f" {' and '.join(map(str, READS))}; {fix}"
            )
        try:
            return cls._from_json(d, int(version))
        except (KeyError, TypeError, ValueError) as err:
            raise StoreError(f"baseline {name} lacks or garbles {err}; {fix}") from None

    @classmethod
    def _from_json(cls, d: Mapping[str, Any], version: int) -> Baseline:
        runs = tuple(int(r) for r in d["runs"])
        old = runs if version == 1 else None
        figures = [FigureBase.from_json(f, old) for f in d["figures"]]
        loads = d.get("run_loads") or {}
        return cls(
            name=str(d["name"]),
            created_unix=float(d["created_unix"]),
            runs=runs,
            kind=str(d["kind"]),
            request=dict(d["request"]),
            environment=dict(d["environment"]),
            figures={f.key: f for f in figures},
            max_detection_limit=float(d.get("max_detection_limit", DEFAULT_MAX_DETECTION_LIMIT)),
            run_loads={int(k): None if v is None else float(v) for k, v in loads.items()},
            version=version,
        )


def _variance(base: FigureBase) -> tuple[float, int, float]:
    """(s_g^2, d_g, mean) of the kept runs on the figure's scale; d_g = 0: no spread."""
    ys = base.values()
    if not ys or not all(math.isfinite(v) for v in ys):
        return 0.0, 0, math.nan
    mean = statistics.fmean(ys)
    if len(ys) < 2:
        return 0.0, 0, mean
    return statistics.variance(ys), len(ys) - 1, mean


def _priors(baseline: Baseline) -> dict[str, Prior]:
    by_family: dict[str, tuple[list[float], list[int]]] = {}
    for base in baseline.figures.values():
        s2, d, _ = _variance(base)
        var, dfs = by_family.setdefault(base.family, ([], []))
        var.append(s2)
        dfs.append(d)
    return {fam: fit_prior(var, dfs) for fam, (var, dfs) in by_family.items()}


def _limits(baseline: Baseline, bound: float) -> dict[str, Limits]:
    priors = _priors(baseline)
    t_alpha, t_beta = 1 - ALPHA, 1 - BETA
    out = {}
    for key, base in baseline.figures.items():
        s2_own, d, mean = _variance(base)
        s2, df = priors.get(base.family, NO_PRIOR).posterior(s2_own, d)
        n = len(base.kept)
        if df <= 0 or not math.isfinite(mean) or n < 1:
            why = (
                "one baseline run gives no run-to-run spread; give the baseline 3 or more runs"
                if n <= 1
                else "its centers have no scale to judge them on (a center of 0)"
            )
            out[key] = Limits(n, mean, s2, df, None, None, False, f"not judged: {why}")
            continue
        scale = math.sqrt(s2 * (1 + 1 / n))
        lc = t_quantile(t_alpha, df) * scale
        ld = (t_quantile(t_alpha, df) + t_quantile(t_beta, df)) * scale
        decision, detection = base.share(lc), base.share(ld)
        judged = detection <= bound
        reason = None
        if not judged:
            reason = (
                f"not judged: its detection limit {detection:.1%} passes {bound:.0%}"
                f" ({n} runs kept, {df:.1f} degrees of freedom)"
            )
        out[key] = Limits(n, mean, s2, df, decision, detection, judged, reason)
    return out


def summary_samples(samples: Sequence[float], count: int = QUANTILES) -> tuple[float, ...]:
    """``samples`` themselves when few, else ``count`` evenly spaced order statistics."""
    if len(samples) <= count:
        return tuple(sorted(float(s) for s in samples))
    values = np.quantile(np.asarray(samples, dtype=float), np.linspace(0, 1, count))
    return tuple(float(v) for v in values)


def figure_bases(
    runs: Sequence[Sequence[Figure]],
    run_ids: Sequence[int] | None = None,
    loaded: Mapping[int, str] | None = None,
) -> dict[str, FigureBase]:
    """Each figure of ``runs`` (one list of figures per run) with its centers and left-outs.

    ``run_ids``: the runs' ids (default 1, 2, ...); ``loaded``: run id -> why the load
    monitor's share leaves it out (:func:`commscope.check.environment.loaded_runs`). A figure
    some runs lack is made of the runs that have it.
    """
    ids = list(run_ids) if run_ids is not None else list(range(1, len(runs) + 1))
    flagged = dict(loaded or {})
    by_key: dict[str, list[tuple[int, Figure]]] = {}
    for rid, figures in zip(ids, runs, strict=True):
        for f in figures:
            if f.samples:
                by_key.setdefault(f.key, []).append((rid, f))
    out = {}
    for key, found in by_key.items():
        spec = found[0][1].spec
        centers = tuple(f.center for _, f in found)
        mine = {i: flagged[rid] for i, (rid, _) in enumerate(found) if rid in flagged}
        left = left_out_of(centers, mine)
        pooled = [s for _, f in found for s in f.samples]
        out[key] = FigureBase(
            name=spec.name,
            labels=dict(found[0][1].labels),
            unit=spec.unit,
            better=spec.better,
            tolerance=spec.tolerance,
            center=_kept_median(centers, left),
            run_centers=centers,
            runs=tuple(rid for rid, _ in found),
            left_out=left,
            samples=summary_samples(pooled),
            n_samples=len(pooled),
        )
    return out
