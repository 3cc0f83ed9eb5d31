"""Judge a run's figures against a baseline: per figure OK, WARNING, CRITICAL or not judged.

The run is the unit: a figure's evidence is its run center (the median of the run's raw
samples) against the baseline's kept run centers, on the figure's scale (log for a positive
figure, :mod:`commscope.check.baseline`). With ybar the kept centers' mean, s~ the moderated
run-to-run standard deviation on df degrees of freedom (:mod:`commscope.check.moderated`)
and n the kept runs, a judged figure's statistic in its worse direction is

    t = (y_run - ybar) / (s~ sqrt(1 + 1/n))     (ybar - y_run for a figure where higher is better)

and its one-sided p-value P(T_df >= t): under an unchanged cluster one more run's center is
a draw of the same distribution as the baseline's, and T is Student's t (exactly so when the
log centers are normal and the family's variances follow the moderated model).

The p-values of one check's judged figures are held together with the Benjamini-Hochberg
procedure at q = ``ALPHA`` (Benjamini and Hochberg 1995, "Controlling the false discovery
rate: a practical and powerful approach to multiple testing"): an unchanged cluster raises
an alarm in at most about ``ALPHA`` of checks however many figures they hold (where one
99 % band per figure would alarm in 1 - 0.99^k of checks with k figures). BH controls the
rate for independent p-values and under positive regression dependence (Benjamini and
Yekutieli 2001), which figures of one run plausibly have: a busy or slow link moves its
figures the same way. The Benjamini-Yekutieli correction, valid under any dependence, costs
a factor of sum(1/i) ~ ln k + 0.58 (10 with 10,000 figures) and is not used.

Statuses, per figure:

- CRITICAL: significant after BH and worse than the figure's tolerance (a practical floor,
  default 10 %, ``--tolerance``): a change that is both real and large enough to matter.
- WARNING: worse than the tolerance and significant on its own (p <= ``ALPHA``) but not
  after holding the check's figures together; or a figure the baseline has and the run
  lacks; or a change that would be CRITICAL or WARNING under load or a changed environment
  (another MPI, kernel, hosts...): the verdict names that cause and does not call it a
  regression. A changed environment excuses for a stated number of nights only
  (:mod:`commscope.check.excuse`); after them the figures are judged as on any night and
  the whole check is at least WARNING, asking to rebase.
- NOT JUDGED: the baseline's detection limit for the figure passes the bound
  (``--max-detection-limit``, 50 % by default): its runs spread too far for a check to tell
  a change from chance. Never OK: the check says so. A check with no judged figure measured
  is UNKNOWN.
- OK otherwise.

Raw samples describe a run; they are never evidence between runs (they say how precisely
one run was measured, not how far the next run may fall). Exit codes follow the
monitoring-plugins convention (Nagios, Icinga, NHC): 0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy import stats

from commscope.check.baseline import ALPHA, Baseline, FigureBase, Limits
from commscope.check.excuse import EnvironmentAge
from commscope.check.steps import HistoryRead, Step
from commscope.kinds.figures import HIGHER, Figure
from commscope.status import CRITICAL, OK, UNKNOWN, WARNING
from commscope.status import name as status_name
from commscope.units import rate_text, time_text

NOT_MEASURED = "not measured:"  # how a figure of a host left out is named
MEASURED_WITHOUT = "measured without"  # ...and one measured on the hosts that remained

CHECK_VERSION = 2  # 2: figures not judged, moderated t statistics, p-values between runs
RECORD_KIND = "check"  # the run data a verdict is kept under, by baseline name
DEFAULT_TOLERANCE = 0.10
NOT_JUDGED = -1  # a figure's status when the baseline cannot judge it; never an exit code
NOT_JUDGED_NAME = "NOT_JUDGED"


def figure_status_name(status: int) -> str:
    """A figure's status as JSON and the terminal name it: OK ... CRITICAL, or NOT_JUDGED."""
    return NOT_JUDGED_NAME if status == NOT_JUDGED else status_name(status)


@dataclass(frozen=True)
class FigureVerdict:
    """One figure judged (or not)."""

    key: str
    name: str
    labels: dict[str, str]
    unit: str
    better: str
    status: int  # OK, WARNING, CRITICAL, or NOT_JUDGED
    baseline: float
    measured: float | None  # None: the run lacks this figure
    worse_by: float | None  # relative change in the worse direction (negative: better)
    p_value: float | None  # one-sided, against the baseline's runs; None: not judged
    p_adjusted: float | None  # after Benjamini-Hochberg over the check's judged figures
    significant: bool  # after the adjustment
    tolerance: float
    decision_threshold: float | None  # L_C as a share; None: cannot be drawn
    detection_limit: float | None  # L_D as a share; None: cannot be drawn
    t: float | None
    df: float | None
    cause: str | None  # why a figure is flagged, excused, or not judged
    excused: bool = False  # would be flagged, but measured under load or a changed environment
    first: float | None = None  # measured twice: the first run's value (measured: their mean)
    again: float | None = None  # measured twice: the second run's value
    history: Step | None = None  # its newest step in the history (:mod:`commscope.check.steps`)
    # The baseline could not judge it, and its history did: a step past its tolerance.
    by_history: bool = False

    @property
    def judged(self) -> bool:
        """Whether it was judged: by the baseline, or (``by_history``) by its history."""
        return self.status != NOT_JUDGED

    @property
    def limit(self) -> float:
        """The change past which it may be flagged: its tolerance or decision threshold."""
        if self.by_history:
            return self.tolerance
        return max(self.tolerance, self.decision_threshold or 0.0)

    @property
    def judged_by(self) -> str:
        """What makes its limit: the tolerance, the decision threshold, or the history."""
        if self.by_history:
            return "history"
        wide = (self.decision_threshold or 0.0) > self.tolerance
        return "decision threshold" if wide else "tolerance"

    def text(self) -> str:
        """One line: status, key, values, change and why."""
        head = f"{figure_status_name(self.status).replace('_', ' '):10} {self.key}"
        if self.measured is None:
            return f"{head}: not measured (baseline {shown(self.baseline, self.unit)})"
        change = "" if self.worse_by is None else f" ({_change(self.worse_by)})"
        line = (
            f"{head}: {shown(self.measured, self.unit)} against {shown(self.baseline, self.unit)}"
        )
        line += change
        if self.judged:
            line += f", limit {self.limit:.0%} by {self.judged_by}"
        if self.p_value is not None:
            line += f", p {self.p_value:.2g}"
            if self.p_adjusted is not None:
                line += f" ({self.p_adjusted:.2g} adjusted)"
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
            "status": figure_status_name(self.status),
            "judged": self.judged,
            "not_judged_reason": None if self.judged else self.cause,
            "baseline": self.baseline,
            "measured": self.measured,
            "worse_by": self.worse_by,
            "t": self.t,
            "df": None if self.df is None or math.isinf(self.df) else self.df,
            "p_value": self.p_value,
            "p_adjusted": self.p_adjusted,
            "significant": self.significant,
            "tolerance": self.tolerance,
            "decision_threshold": self.decision_threshold,
            "detection_limit": self.detection_limit,
            "limit": self.limit,
            "judged_by": self.judged_by,
            "cause": self.cause,
            "excused": self.excused,
            "measured_first": self.first,
            "measured_again": self.again,
            "history": None if self.history is None else self.history.to_json(),
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
    max_detection_limit: float = 0.5  # the bound figures were judged against
    again_run: int | None = None  # the run that measured the flagged figures again
    measured_unix: float | None = None  # when the run was measured (None: unknown)
    environment_age: EnvironmentAge | None = None  # how long its changes have been seen
    rebase: str | None = None  # the command to rebase, once a change no longer excuses
    history: HistoryRead | None = None  # what the history verdict read (None: not asked)

    @property
    def status(self) -> int:
        """The worst judged figure's status, at least WARNING when it asks to rebase.

        UNKNOWN when no judged figure was measured.
        """
        if not any(f.judged and f.measured is not None for f in self.figures):
            return UNKNOWN
        worst = max(f.status for f in self.figures)
        return max(worst, WARNING) if self.rebase else worst

    @property
    def not_judged(self) -> int:
        """How many figures the baseline could not judge."""
        return sum(1 for f in self.figures if not f.judged)

    def counts(self) -> dict[str, int]:
        """How many figures have each status (NOT_JUDGED too)."""
        return {
            figure_status_name(s): sum(1 for f in self.figures if f.status == s)
            for s in (OK, WARNING, CRITICAL, NOT_JUDGED)
        }

    def summary(self) -> str:
        """The one line a monitoring system shows: status, baseline, run, worst figure.

        Once a changed environment no longer excuses, the line ends with its age, what
        changed and the command that rebases; a history too short to search says so
        ("history: 4 nights, needs 6").
        """
        line = self._summary()
        if self.history is not None and self.history.note and self.status != UNKNOWN:
            line += f"; {self.history.note}"
        age = self.environment_age
        if self.rebase and age is not None and self.status != UNKNOWN:
            line += (
                f"; the environment changed {age.when_text()} ({'; '.join(age.changes)});"
                f" rebase: {self.rebase}"
            )
        return line

    def _summary(self) -> str:
        counts = self.counts()
        status = status_name(self.status)
        head = f"commscope {status}: run {self.run_id} against baseline {self.baseline}"
        if self.status == UNKNOWN:
            gone = [f for f in self.figures if left_out(f)]
            if gone and self.not_judged == len(self.figures):
                rest = len(self.figures) - len(gone)
                limits = f"; {rest} more: detection limits past {self.max_detection_limit:.0%}"
                return (
                    f"{head}: none of its {len(self.figures)} figures can be judged;"
                    f" {len(gone)} because a node was left out ({gone[0].cause})"
                    f"{limits if rest else ''}"
                )
            if self.not_judged and any(f.measured is not None for f in self.figures):
                return (
                    f"{head}: none of its {len(self.figures)} figures can be judged: their"
                    f" detection limits pass {self.max_detection_limit:.0%} or cannot be"
                    " drawn; give the baseline more runs, spread over several nights"
                )
            why = self.load[0] if self.load else f"'commscope show {self.run_id}' says why"
            return f"{head}: no figure of the baseline was measured; {why}"
        tally = ", ".join(
            f"{n} {name.lower().replace('_', ' ')}" for name, n in counts.items() if n
        )
        worst = self.figures[0]
        if worst.status == OK:
            judged = len(self.figures) - self.not_judged
            return f"{head}: {judged} figures within their limits ({tally})"
        again = "" if self.again_run is None else f" (measured again in run {self.again_run})"
        step = worst.history
        if step is not None and step.alarm:
            again += f" ({step.text()})"
        return f"{head}: {tally}; worst {worst.key} {_change(worst.worse_by)}{again}"

    def record(self) -> dict[str, Any]:
        """What is kept with the run: the status, when, the figures flagged, how many not judged."""
        return {
            "status": status_name(self.status),
            "checked_unix": self.checked_unix,
            "measured_unix": self.measured_unix,
            "flagged": [f.key for f in self.figures if f.status in (WARNING, CRITICAL)],
            "not_judged": self.not_judged,
            "again_run": self.again_run,
            "environment_changes": self.environment_changes,  # nights a change has excused
        }

    def to_json(self) -> dict[str, Any]:
        """The versioned JSON of ``check --json``."""
        age = self.environment_age
        return {
            "check_version": CHECK_VERSION,
            "status": status_name(self.status),
            "exit_code": self.status,
            "summary": self.summary(),
            "baseline": self.baseline,
            "run": self.run_id,
            "checked_unix": self.checked_unix,
            "counts": self.counts(),
            "alpha": ALPHA,
            "max_detection_limit": self.max_detection_limit,
            "environment_changes": self.environment_changes,
            "environment_age": None if age is None else age.to_json(),
            "rebase": self.rebase,
            "load": self.load,
            "new_figures": self.new_figures,
            "again_run": self.again_run,
            "history": None if self.history is None else self.history.to_json(),
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


def statistic(base: FigureBase, limits: Limits, measured: float) -> float:
    """The t of a run's center against the baseline's kept runs, positive when worse."""
    step = base.y(measured) - limits.mean
    if base.better == HIGHER:
        step = -step
    if limits.scale > 0:
        return step / limits.scale
    return 0.0 if step == 0 else math.copysign(math.inf, step)


def one_sided_p(ts: Sequence[float], dfs: Sequence[float]) -> list[float]:
    """P(T_df >= t) for each pair, in one vectorised call (a check may hold 10^4 figures)."""
    if not ts:
        return []
    found = stats.t.sf(np.array(ts, dtype=float), np.array(dfs, dtype=float))
    return [1.0 if math.isnan(float(p)) else float(p) for p in np.atleast_1d(found)]


def adjusted(p_values: Sequence[float | None]) -> list[float | None]:
    """Benjamini-Hochberg adjusted p-values of those known (None stays None)."""
    known = [(i, p) for i, p in enumerate(p_values) if p is not None]
    out: list[float | None] = [None] * len(p_values)
    if known:
        fixed = stats.false_discovery_control(np.array([p for _, p in known]), method="bh")
        for (i, _), q in zip(known, np.atleast_1d(fixed), strict=True):
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
    max_detection_limit: float | None = None,
    excuse_environment: bool = True,
) -> Verdict:
    """Judge ``figures`` (a run's) against ``baseline``.

    Args:
        baseline: what the run is judged against.
        run_id: the run's id, named in the verdict.
        figures: the run's figures.
        tolerances: the tolerated share per tolerance class or figure name ("all": every
            figure), as :func:`commscope.check.tolerance.parse` gives them.
        checked_unix: when the check ran.
        environment_changes: what differs from the baseline's environment.
        load: what disturbed the run's hosts (the load monitor's warnings).
        max_detection_limit: figures whose detection limit passes it are not judged
            (default: the baseline's own bound).
        excuse_environment: whether ``environment_changes`` excuse a worse figure (False
            once they have been seen longer than a check excuses them).
    """
    bound = baseline.max_detection_limit if max_detection_limit is None else max_detection_limit
    limits = baseline.limits(bound)
    mine = {f.key: f for f in figures if f.samples}
    keys = list(baseline.figures)
    ts = {
        k: statistic(baseline.figures[k], limits[k], mine[k].center)
        for k in keys
        if limits[k].judged and k in mine
    }
    ps = dict(zip(ts, one_sided_p(list(ts.values()), [limits[k].df for k in ts]), strict=True))
    raw = [ps.get(k) for k in keys]
    out = []
    for key, p, q in zip(keys, raw, adjusted(raw), strict=True):
        base, lim = baseline.figures[key], limits[key]
        tolerance = tolerance_for(base, tolerances)
        f = mine.get(key)
        measured = None if f is None else f.center
        change = None if measured is None else worse_by(base, measured)
        t = ts.get(key)
        df = lim.df if lim.judged else None
        status, cause, excused = OK, None, False
        significant = q is not None and q <= ALPHA
        if f is None:
            status, cause = WARNING, "the baseline has it and this run does not"
        elif not lim.judged:
            status, cause = NOT_JUDGED, lim.reason
        elif change is not None and change > tolerance and p is not None and p <= ALPHA:
            if significant:
                status = CRITICAL
            else:
                status = WARNING
                cause = (
                    f"past its tolerance and beyond chance on its own (p {p:.2g}), not after"
                    f" holding the check's {len(ts)} figures together"
                )
            if load:
                status, excused = WARNING, True
                cause = "measured under load, not called a regression"
            elif environment_changes and excuse_environment:
                status, excused = WARNING, True
                cause = "the environment changed, not called a regression"
        out.append(
            FigureVerdict(
                key, base.name, base.labels, base.unit, base.better, status, base.center,
                measured, change, p, q, significant, tolerance, lim.decision, lim.detection,
                t, df, cause, excused,
            )
        )  # fmt: skip
    return Verdict(
        baseline.name,
        run_id,
        checked_unix,
        order(out),
        list(environment_changes),
        list(load),
        sum(1 for k in mine if k not in baseline.figures),
        bound,
    )


def order(figures: Sequence[FigureVerdict]) -> list[FigureVerdict]:
    """Worst first: by status, then by how much worse (an unmeasured figure first among equals)."""
    return sorted(
        figures, key=lambda v: (-v.status, -(v.worse_by if v.worse_by is not None else math.inf))
    )


def tolerance_for(base: FigureBase, tolerances: Mapping[str, float]) -> float:
    """The tolerance of a figure: by its name, else its class, else "all", else 10 %."""
    for key in (base.name, base.tolerance, "all"):
        if key in tolerances:
            return tolerances[key]
    return DEFAULT_TOLERANCE


def left_out(figure: FigureVerdict) -> bool:
    """True for a figure not judged because a host of the baseline was left out."""
    causes = (NOT_MEASURED, MEASURED_WITHOUT)
    return not figure.judged and (figure.cause or "").startswith(causes)
