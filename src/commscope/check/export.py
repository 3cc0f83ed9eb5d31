"""A verdict for monitoring and CI: node_exporter's textfile format and a JUnit XML file.

Prometheus: the maintained ``prometheus_client`` writes the exposition format, and its
``write_to_textfile`` writes a temporary file and renames it over the target, so a scrape
never sees half a file. Metrics carry base units in their names (``_seconds``,
``_bytes_per_second``) and the figure's labels; ``commscope_check_status`` holds the exit
code and ``commscope_check_timestamp_seconds`` when the check ran. Per figure,
``commscope_check_figure_status`` is 0 OK, 1 WARNING, 2 CRITICAL, or -1 for a figure not
judged (its detection limit passes the bound: below every status, so an alert on ``>= 1`` or
``>= 2`` never fires on it, and never 0, which would claim OK), and
``commscope_check_figure_judged`` is 1 or 0; ``commscope_check_figures_not_judged`` counts
them; ``commscope_check_rebase_asked`` is 1 once a changed environment no longer excuses
(:mod:`commscope.check.excuse`). Per-figure series are written for the flagged figures
(WARNING, CRITICAL) by default and for every figure with ``figures="all"``: a matrix
baseline of 1,000 nodes holds a million figures, and a series each would swamp the
monitoring server.

A check that ends without a verdict (it could not measure, was refused, interrupted,
timed out) still writes both files: ``commscope_check_status`` 3 with a fresh timestamp and
``commscope_check_unknown_info{reason="..."} 1``, and a JUnit file whose one case is an
error naming the reason. Monitoring never goes on showing last night's verdict.

JUnit: one test case per figure (``junitparser``); a CRITICAL figure is a failure that names
the figure, the baseline, the measured value and the change (and the step, "history: step
... from run N", when the stored nights made it CRITICAL,
:mod:`commscope.check.history_verdict`; Prometheus shows that through the figure's status,
with no series of its own); a figure excused by load or a changed environment is skipped
with that cause, and so is a figure not judged, with its detection limit; a WARNING passes
with its line as output. Every text in it is one line with its control characters escaped
(:func:`commscope.strict.visible`): XML 1.0 has no place for them, and a figure named after
a stored host name may hold any.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import TYPE_CHECKING

from commscope import safe_write
from commscope.check.verdict import NOT_JUDGED, Verdict
from commscope.errors import UsageError
from commscope.status import CRITICAL, UNKNOWN, WARNING
from commscope.status import name as status_name
from commscope.strict import visible

if TYPE_CHECKING:
    from prometheus_client import CollectorRegistry

PREFIX = "commscope_"


def check_prometheus_path(path: str) -> Path:
    """Refuse a textfile path node_exporter would not read, or that cannot be written.

    Raises:
        UsageError: not ending in .prom, a directory, or its folder cannot be written.
    """
    if not path.endswith(".prom"):
        raise UsageError(
            f"--prometheus {path}: node_exporter's textfile collector reads only *.prom files;"
            " give a name ending in .prom"
        )
    return safe_write.check_target(path, "--prometheus")


def write_prometheus(verdict: Verdict, path: str, figures: str = "flagged") -> None:
    """Write the verdict's status and figures to ``path`` atomically (textfile format).

    ``figures``: "flagged" (WARNING, CRITICAL) or "all" get per-figure series.
    """
    from prometheus_client import CollectorRegistry, Gauge

    registry = CollectorRegistry()
    base = {"baseline": verdict.baseline}
    for name, text, value in (
        ("status", "commscope check: 0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN", verdict.status),
        ("timestamp_seconds", "when the check ran (Unix time)", verdict.checked_unix),
        ("run", "the stored run the check judged", verdict.run_id),
        (
            "figures_not_judged",
            "figures whose detection limit passes the bound",
            verdict.not_judged,
        ),
        (
            "rebase_asked",
            "1: a changed environment no longer excuses, the check asks to rebase",
            int(verdict.rebase is not None),
        ),
    ):
        gauge = Gauge(f"{PREFIX}check_{name}", text, list(base), registry=registry)
        gauge.labels(**base).set(value)
    figure_status = Gauge(
        f"{PREFIX}check_figure_status",
        f"per figure: 0 OK, 1 WARNING, 2 CRITICAL, {NOT_JUDGED} not judged",
        ["baseline", "figure"],
        registry=registry,
    )
    figure_judged = Gauge(
        f"{PREFIX}check_figure_judged",
        "per figure: 1 judged, 0 not judged (its detection limit passes the bound)",
        ["baseline", "figure"],
        registry=registry,
    )
    by_name: dict[str, list[tuple[dict[str, str], float]]] = {}
    for f in verdict.figures:
        if figures != "all" and f.status not in (WARNING, CRITICAL):
            continue
        figure_status.labels(baseline=verdict.baseline, figure=f.key).set(f.status)
        figure_judged.labels(baseline=verdict.baseline, figure=f.key).set(int(f.judged))
        if f.measured is not None:
            by_name.setdefault(f.name, []).append((f.labels, f.measured))
    for name, values in sorted(by_name.items()):
        names = sorted({k for labels, _ in values for k in labels} | {"baseline"})
        gauge = Gauge(f"{PREFIX}{name}", f"{name} as measured", names, registry=registry)
        for labels, value in values:
            full = {k: labels.get(k, "") for k in names} | base
            gauge.labels(**full).set(value)
    _write(registry, path)


def write_prometheus_unknown(baseline: str, reason: str, path: str) -> None:
    """Write an UNKNOWN check (no verdict) to ``path``: status 3, now, and the reason."""
    from prometheus_client import CollectorRegistry, Gauge

    registry = CollectorRegistry()
    base = {"baseline": baseline}
    for name, text, value in (
        ("status", "commscope check: 0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN", UNKNOWN),
        ("timestamp_seconds", "when the check ran (Unix time)", time.time()),
    ):
        Gauge(f"{PREFIX}check_{name}", text, list(base), registry=registry).labels(**base).set(
            value
        )
    why = Gauge(
        f"{PREFIX}check_unknown_info",
        "why the check could not decide (1 while it is UNKNOWN)",
        ["baseline", "reason"],
        registry=registry,
    )
    why.labels(baseline=baseline, reason=reason).set(1)
    _write(registry, path)


def _write(registry: CollectorRegistry, path: str) -> None:
    """Write ``registry`` to ``path`` through a temporary file renamed over it."""
    from prometheus_client import write_to_textfile

    target = check_prometheus_path(path)
    try:
        write_to_textfile(os.fspath(target), registry)
    except OSError as err:
        raise UsageError(
            f"--prometheus {path}: cannot write it ({err.strerror}); check the folder's"
            " permissions and free space"
        ) from None


def junit_text(verdict: Verdict) -> str:
    """The verdict as JUnit XML: one test case per figure."""
    from junitparser import Failure, JUnitXml, Skipped, TestCase, TestSuite

    suite = TestSuite(f"commscope check {verdict.baseline}")
    for f in verdict.figures:
        case = TestCase(visible(f.key), classname=f"commscope.check.{verdict.baseline}")
        line = f"{f.text()} (baseline {verdict.baseline}, run {verdict.run_id})"
        if f.excused:
            line += f": {'; '.join([*verdict.load, *verdict.environment_changes])}"
        line = visible(line)
        if f.status == CRITICAL:
            case.result = [Failure(line, "regression")]
        elif not f.judged or f.excused:
            case.result = [Skipped(line)]
        elif f.status == WARNING:
            case.system_out = f"{status_name(f.status)}: {line}"
        suite.add_testcase(case)
    xml = JUnitXml()
    xml.add_testsuite(suite)
    xml.update_statistics()
    return str(xml.tostring().decode("utf-8"))


def write_junit(verdict: Verdict, path: str) -> None:
    """Write the JUnit file to ``path`` through a temporary file."""
    safe_write.write_text(path, junit_text(verdict), "--junit")


def junit_unknown_text(baseline: str, reason: str) -> str:
    """An UNKNOWN check as JUnit XML: one case, an error naming the reason."""
    from junitparser import Error, JUnitXml, TestCase, TestSuite

    suite = TestSuite(f"commscope check {baseline}")
    case = TestCase(f"commscope check {baseline}", classname=f"commscope.check.{baseline}")
    case.result = [Error(visible(f"commscope UNKNOWN: {reason}"), "unknown")]
    suite.add_testcase(case)
    xml = JUnitXml()
    xml.add_testsuite(suite)
    xml.update_statistics()
    return str(xml.tostring().decode("utf-8"))


def write_junit_unknown(baseline: str, reason: str, path: str) -> None:
    """Write an UNKNOWN check (no verdict) to ``path`` as JUnit XML."""
    safe_write.write_text(path, junit_unknown_text(baseline, reason), "--junit")
