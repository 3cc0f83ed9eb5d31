"""Judge a run's figures against a baseline: per figure OK, WARNING or CRITICAL, and why.

Per figure, the change is how much worse the run's center (the median of its raw samples) is
than the baseline's center, as a share of it (positive = worse, in the direction the figure
calls worse). The limit is the tolerance of the figure's class (default 10 %), or the
baseline's run-to-run band where that is wider (:mod:`commscope.check.baseline`): on a busy
machine a run may fall that far from the center by chance, and the verdict says it judged by
the band.

Significance is a one-sided Mann-Whitney U test of the run's raw samples against the
baseline's pooled samples (worse, in the figure's direction), with the p-values of all
figures of one check held to a false discovery rate of ``ALPHA`` (Benjamini and Hochberg
1995). Where the samples are too few for the test ever to reach ``ALPHA`` (a fitted
parameter has one; a 1 MiB bw point may have four), it cannot decide, and the change counts
as significant when it passes its limit: the tolerance, or the band where that is wider.

CRITICAL: significant and past the limit. WARNING: past the limit but not significant, or
a figure the baseline has and the run lacks. A figure past its limit while other processes
loaded a host, or under a changed environment (another MPI, kernel, hosts...), is a WARNING
naming that cause: it is not called a regression. Exit codes follow the monitoring-plugins
convention (Nagios, Icinga, NHC): 0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy import stats

from commscope.check.baseline import Baseline, FigureBase
from commscope.kinds.figures import HIGHER, Figure
from commscope.status import CRITICAL, OK, UNKNOWN, WARNING
from commscope.status import name as status_name
from commscope.units import rate_text, time_text

CHECK_VERSION = 1
RECORD_KIND = "check"  # the run data a verdict is kept under, by baseline name
ALPHA = 0.01
DEFAULT_TOLERANCE = 0.10


@dataclass(frozen=True)
class FigureVerdict:
    """One figure judged."""

    key: str
    name: str
    labels: dict[str, str]
    unit: str
    better: str
    status: int
    baseline: float
    measured: float | None  # None: the run lacks this figure
    worse_by: float | None  # relative change in the worse direction (negative: better)
    p_value: float | None  # after the false-discovery-rate adjustment
    significant: bool
    limit: float
    judged_by: str  # "tolerance" or "run-to-run band"
    cause: str | None  # why a figure past its limit is not called a regression
    excused: bool = False  # past its limit under load or a changed environment

    def text(self) -> str:
        """One line: status, key, values, change and why."""
        head = f"{status_name(self.status):8} {self.key}"
        if self.measured is None:
            return f"{head}: not measured (baseline {shown(self.baseline, self.unit)})"
        change = "" if self.worse_by is None else f" ({_change(self.worse_by)})"
        line = (
            f"{head}: {shown(self.measured, self.unit)} against "
            f"{shown(self.baseline, self.unit)}{change}, limit {self.limit:.0%} by "
            f"{self.judged_by}"
        )
        if self.p_value is not None:
            line += f", p {self.p_value:.2g}"
        if self.cause:
            line += f"; {self.cause}"
        return line

    def to_json(self) -> dict[str, Any]:
        """Plain dict with full key names; status as its name."""
        return {
            "key": self.key,
            "name": self.name,
            "labels": self.labels,
            "unit": self.unit,
            "better": self.better,
            "status": status_name(self.status),
            "baseline": self.baseline,
            "measured": self.measured,
            "worse_by": self.worse_by,
            "p_value": self.p_value,
            "significant": self.significant,
            "limit": self.limit,
            "judged_by": self.judged_by,
            "cause": self.cause,
            "excused": self.excused,
        }


@dataclass(frozen=True)
class Verdict:
    """A whole check: every figure, worst first, and what may explain a change."""

    baseline: str
    run_id: int
    checked_unix: float
    figures: list[FigureVerdict]
    environment_changes: list[str] = field(default_factory=list)
    load: list[str] = field(default_factory=list)
    new_figures: int = 0  # figures the run has and the baseline lacks (not judged)

    @property
    def status(self) -> int:
        """The worst figure's status; UNKNOWN when no figure could be compared."""
        if not any(f.measured is not None for f in self.figures):
            return UNKNOWN
        return max(f.status for f in self.figures)

    def counts(self) -> dict[str, int]:
        """How many figures have each status."""
        return {
            status_name(s): sum(1 for f in self.figures if f.status == s)
            for s in (OK, WARNING, CRITICAL)
        }

    def summary(self) -> str:
        """The one line a monitoring system shows: status, baseline, run, worst figure."""
        counts = self.counts()
        status = status_name(self.status)
        head = f"commscope {status}: run {self.run_id} against baseline {self.baseline}"
        if self.status == UNKNOWN:
            why = self.load[0] if self.load else f"'commscope show {self.run_id}' says why"
            return f"{head}: no figure of the baseline was measured; {why}"
        tally = ", ".join(f"{n} {name.lower()}" for name, n in counts.items() if n)
        worst = self.figures[0]
        if worst.status == OK:
            return f"{head}: {len(self.figures)} figures within their limits ({tally})"
        return f"{head}: {tally}; worst {worst.key} {_change(worst.worse_by)}"

    def record(self) -> dict[str, Any]:
        """What is kept with the run: the status, when, and the figures not OK."""
        return {
            "status": status_name(self.status),
            "checked_unix": self.checked_unix,
            "flagged": [f.key for f in self.figures if f.status != OK],
        }

    def to_json(self) -> dict[str, Any]:
        """The versioned JSON of ``check --json``."""
        return {
            "check_version": CHECK_VERSION,
            "status": status_name(self.status),
            "exit_code": self.status,
            "summary": self.summary(),
            "baseline": self.baseline,
            "run": self.run_id,
            "checked_unix": self.checked_unix,
            "counts": self.counts(),
            "environment_changes": self.environment_changes,
            "load": self.load,
            "new_figures": self.new_figures,
            "figures": [f.to_json() for f in self.figures],
        }


def _change(worse_by: float | None) -> str:
    if worse_by is None:
        return "not measured"
    return f"{abs(worse_by):.1%} {'worse' if worse_by > 0 else 'better'}"


def shown(value: float, unit: str) -> str:
    """A figure's value in the unit people read: us, MB/s, GFLOPS, or as it is."""
    if unit == "seconds":
        return time_text(value)
    if unit == "bytes_per_second":
        return rate_text(value)
    if unit == "flops":
        return f"{value / 1e9:.3g} GFLOPS"
    return f"{value:.3g}"


def worse_by(base: FigureBase, measured: float) -> float:
    """The change of ``measured`` from the baseline's center, positive when worse."""
    change = (measured - base.center) / base.center
    return -change if base.better == HIGHER else change


def testable(n: int, m: int) -> bool:
    """Whether n samples against m can reach ``ALPHA``: 1 / C(n + m, n) at best."""
    return n >= 1 and m >= 1 and 1 / math.comb(n + m, n) <= ALPHA


def one_sided_p(
    pairs: Sequence[tuple[FigureBase, Sequence[float]]],
) -> list[float | None]:
    """Mann-Whitney U p-values that each run's samples are worse than its baseline's.

    None where untestable: so few samples that even every one of them worse than every
    baseline sample gives a p-value above ``ALPHA``. Figures with the same sample counts and
    direction are tested in one vectorised call (10,000 figures in a fraction of a second).
    """
    out: list[float | None] = [None] * len(pairs)
    groups: dict[tuple[int, int, bool], list[int]] = {}
    for i, (base, samples) in enumerate(pairs):
        if testable(len(samples), len(base.samples)):
            key = (len(samples), len(base.samples), base.better == HIGHER)
            groups.setdefault(key, []).append(i)
    for (_, _, higher), idx in groups.items():
        mine = np.array([pairs[i][1] for i in idx], dtype=float)
        theirs = np.array([pairs[i][0].samples for i in idx], dtype=float)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # all values tied
            if higher:
                found = stats.mannwhitneyu(mine, theirs, alternative="less", axis=1).pvalue
            else:
                found = stats.mannwhitneyu(mine, theirs, alternative="greater", axis=1).pvalue
        for i, p in zip(idx, np.atleast_1d(found), strict=True):
            out[i] = None if math.isnan(float(p)) else float(p)
    return out


def adjusted(p_values: Sequence[float | None]) -> list[float | None]:
    """Benjamini-Hochberg adjusted p-values of those known (None stays None)."""
    known = [(i, p) for i, p in enumerate(p_values) if p is not None]
    out: list[float | None] = [None] * len(p_values)
    if known:
        fixed = stats.false_discovery_control(np.array([p for _, p in known]))
        for (i, _), q in zip(known, fixed, strict=True):
            out[i] = float(q)
    return out


def judge(
    baseline: Baseline,
    run_id: int,
    figures: Sequence[Figure],
    tolerances: Mapping[str, float],
    checked_unix: float,
    environment_changes: Sequence[str] = (),
    load: Sequence[str] = (),
) -> Verdict:
    """Judge ``figures`` (a run's) against ``baseline``.

    Args:
        baseline: what the run is judged against.
        run_id: the run's id, named in the verdict.
        figures: the run's figures with raw samples.
        tolerances: the tolerated share per tolerance class or figure name ("all": every
            figure), as :func:`commscope.check.tolerance.parse` gives them.
        checked_unix: when the check ran.
        environment_changes: what differs from the baseline's environment.
        load: what disturbed the run's hosts (the load monitor's warnings).
    """
    mine = {f.key: f for f in figures if f.samples}
    keys = list(baseline.figures)
    level = baseline.band_level()
    tested = [k for k in keys if k in mine]
    pairs = [(baseline.figures[k], mine[k].samples) for k in tested]
    found = dict(zip(tested, one_sided_p(pairs), strict=True))
    p_raw = [found.get(k) for k in keys]
    out = []
    for key, p in zip(keys, adjusted(p_raw), strict=True):
        base = baseline.figures[key]
        tolerance = tolerance_for(base, tolerances)
        band = base.band(level)
        wide = band is not None and band > tolerance
        limit = band if wide and band is not None else tolerance
        judged_by = "run-to-run band" if wide else "tolerance"
        f = mine.get(key)
        if f is None:
            out.append(
                FigureVerdict(
                    key, base.name, base.labels, base.unit, base.better, WARNING,
                    base.center, None, None, None, False, limit, judged_by,
                    "the baseline has it and this run does not",
                )
            )  # fmt: skip
            continue
        change = worse_by(base, f.center)
        if p is None:  # untestable: passing the limit is the evidence
            significant = change > limit
        else:
            significant = p < ALPHA
        past = change > limit
        status, cause, excused = OK, None, False
        if past:
            status = CRITICAL if significant else WARNING
            if load:
                status, excused = WARNING, True
                cause = "measured under load, not called a regression"
            elif environment_changes:
                status, excused = WARNING, True
                cause = "the environment changed, not called a regression"
            elif not significant:
                cause = "past its limit but not significant against the baseline's samples"
        out.append(
            FigureVerdict(
                key, base.name, base.labels, base.unit, base.better, status, base.center,
                f.center, change, p, significant, limit, judged_by, cause, excused,
            )
        )  # fmt: skip
    out.sort(key=lambda v: (-v.status, -(v.worse_by if v.worse_by is not None else math.inf)))
    return Verdict(
        baseline.name,
        run_id,
        checked_unix,
        out,
        list(environment_changes),
        list(load),
        sum(1 for k in mine if k not in baseline.figures),
    )


def tolerance_for(base: FigureBase, tolerances: Mapping[str, float]) -> float:
    """The tolerance of a figure: by its name, else its class, else "all", else 10 %."""
    for key in (base.name, base.tolerance, "all"):
        if key in tolerances:
            return tolerances[key]
    return DEFAULT_TOLERANCE
