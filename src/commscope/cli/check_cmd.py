"""``commscope check``: did this cluster get worse than its baseline? One line, one exit code.

Exit codes follow the monitoring-plugins convention (Nagios, Icinga, Node Health Check):
0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN (could not measure, missing baseline, bad usage).
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from commscope import status
from commscope.cli import common
from commscope.errors import CommscopeError, UsageError

if TYPE_CHECKING:
    from commscope.check.baseline import Baseline
    from commscope.check.verdict import Verdict

NAME = "check"
HELP = "judge a run (or a new measurement) against a baseline: exit 0 OK, 1 WARN, 2 CRIT, 3 UNKNOWN"
EXAMPLES = """examples:
  commscope check --baseline nightly              measure the baseline's request again, judge it
  commscope check --baseline nightly 42           judge stored run 42
  commscope check --baseline nightly --tolerance bw=5%,latency=20%
  commscope check --baseline nightly --prometheus /var/lib/node_exporter/commscope.prom
  commscope check --baseline nightly --junit check.xml --json > check.json
exit codes: 0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN (as Nagios, Icinga and NHC read them)"""
SHOWN = 15  # figures listed on the terminal, worst first; --json has them all
DEFAULT_TIMEOUT_S = 900.0


def setup_parser(p: argparse.ArgumentParser) -> None:
    """Declare the options of `commscope check`."""
    # Bad usage is UNKNOWN (3) for a monitoring plugin, not argparse's 2.
    setattr(p, "usage_exit", status.UNKNOWN)  # noqa: B010 - read by cli.OneLineParser.error
    p.add_argument(
        "run",
        nargs="?",
        metavar="RUN",
        help="a stored run id or 'latest'; without it the baseline's request is measured again",
    )
    p.add_argument("--baseline", required=True, metavar="NAME", help="the baseline to judge by")
    p.add_argument(
        "--tolerance",
        default="",
        metavar="CLASS=PCT,...",
        help="how much worse each class may get unremarked: latency, bw, time, rate, ratio,"
        " compute, all, or a figure name [default: 10%% each]",
    )
    p.add_argument(
        "--allow-other-hosts",
        action="store_true",
        help="judge a run of other hosts than the baseline's (its changes are then not called"
        " regressions)",
    )
    p.add_argument(
        "--timeout",
        type=common.number(1.0, 86400.0),
        default=DEFAULT_TIMEOUT_S,
        metavar="S",
        help="most seconds a new measurement may take [default: %(default)s]",
    )
    p.add_argument("--label", help="label of the new run [default: check NAME]")
    p.add_argument("--json", action="store_true", help="print the versioned verdict as JSON")
    p.add_argument(
        "--junit", metavar="FILE", help="also write a JUnit XML file (a case per figure)"
    )
    p.add_argument(
        "--prometheus",
        metavar="FILE.prom",
        help="also write node_exporter's textfile format there, atomically",
    )


def run(args: argparse.Namespace) -> int:
    """Judge, print, export; every error is UNKNOWN (3)."""
    with status.unknown_on_error():
        return _check(args)


def _check(args: argparse.Namespace) -> int:
    from commscope import kinds
    from commscope.check import export, tolerance
    from commscope.check.baseline import Baseline
    from commscope.check.judging import check_run
    from commscope.data.run_data import read_run

    specs = kinds.figure_specs()
    classes = {s.tolerance for s in specs.values()}
    tolerances = tolerance.parse(args.tolerance, [*classes, *specs]) if args.tolerance else {}
    if args.prometheus:
        export.check_prometheus_path(args.prometheus)
    if args.junit:
        from commscope import safe_write

        safe_write.check_target(args.junit, "--junit")
    with common.open_store(args, write=args.run is None) as store:
        baseline = Baseline.from_json(store.baseline(args.baseline))
        if args.run is None:
            run_id = _measure(args, store, baseline)
        else:
            run_id = store.resolve_run(args.run)
        verdict = check_run(baseline, read_run(store, run_id), tolerances, args.allow_other_hosts)
        if args.run is None:
            _record(store, verdict)
    if args.run is not None:
        _record_if_writable(args, verdict)
    if args.prometheus:
        export.write_prometheus(verdict, args.prometheus)
    if args.junit:
        export.write_junit(verdict, args.junit)
    if args.json:
        common.print_json(verdict.to_json())
    else:
        _print(verdict)
    return verdict.status


def _measure(args: argparse.Namespace, store: Any, baseline: Baseline) -> int:
    """Measure the baseline's request again as a new run; its id."""
    from commscope.cli import run_where
    from commscope.data.request import RunRequest
    from commscope.measure import mpi as mpi_mod
    from commscope.measure import runner

    if "engine" not in baseline.request:
        raise UsageError(
            f"baseline {baseline.name} holds {baseline.kind} runs, which check cannot measure"
            f" again; measure one with 'commscope run {baseline.kind}' and check it:"
            f" 'commscope check --baseline {baseline.name} latest'"
        )
    request = RunRequest.from_json(baseline.request)
    request = request.replace(timeout_s=min(request.timeout_s, args.timeout))
    simulation = None
    if request.simulate:
        from commscope.simulate import smpi

        mpi = smpi.install()
        simulation = smpi.SimulatedLaunch(request.simulate)
    else:
        mpi = mpi_mod.resolve(request.mpi)
    label = args.label if args.label is not None else f"check {baseline.name}"
    with run_where.resumed(request) as live:
        run_id = store.create_run(
            live.benchmark, common.check_label(label), mpi.tag, mpi.launcher, live.np,
            live.to_json(),
        )  # fmt: skip
        try:
            runner.run(store, run_id, live, mpi, simulation=simulation)
        except CommscopeError as err:
            if not store.get_run(run_id).n_points:
                raise
            # Judge what was measured: the missing figures are named as such.
            common.console(stderr=True).print(
                common.terminal_text(f"check: run {run_id} stopped early: {err.one_line()}"),
                markup=False,
            )
    return int(run_id)


def _record(store: Any, verdict: Verdict) -> None:
    """Keep the verdict with the run, beside those of other baselines (the report's trend)."""
    from commscope.check.verdict import RECORD_KIND

    kept = store.run_data(verdict.run_id, RECORD_KIND) or {}
    store.set_run_data(verdict.run_id, RECORD_KIND, {**kept, verdict.baseline: verdict.record()})


def _record_if_writable(args: argparse.Namespace, verdict: Verdict) -> None:
    """Keep the verdict with a stored run; a read-only store is judged, not changed."""
    try:
        with common.open_store(args) as store:
            _record(store, verdict)
    except CommscopeError as err:
        common.console(stderr=True).print(
            common.terminal_text(f"check: verdict not kept with run {verdict.run_id}:"
                                 f" {err.one_line()}"),
            markup=False,
        )  # fmt: skip


def _print(verdict: Verdict) -> None:
    from rich.table import Table

    out = common.console()
    # One unwrapped line first: what a monitoring system shows as the plugin's output.
    print(common.terminal_text(verdict.summary()), flush=True)
    for change in verdict.environment_changes:
        out.print(common.terminal_text(f"  environment changed: {change}"), markup=False)
    for text in verdict.load:
        out.print(common.terminal_text(f"  load: {text}"), markup=False)
    flagged = [f for f in verdict.figures if f.status != status.OK]
    shown = flagged[:SHOWN] if flagged else verdict.figures[:SHOWN]
    table = Table(title="figures, worst first" if flagged else "figures")
    for col in ("status", "figure", "change", "limit", "p", "why"):
        table.add_column(col, justify="right" if col in ("change", "limit", "p") else "left")
    for f in shown:
        change = "" if f.worse_by is None else f"{f.worse_by:+.1%}"
        p = "" if f.p_value is None else f"{f.p_value:.2g}"
        why = f.cause or ("" if f.judged_by == "tolerance" else "judged by the run-to-run band")
        table.add_row(
            status.name(f.status),
            common.terminal_text(f.key),
            change,
            f"{f.limit:.0%}",
            p,
            common.terminal_text(why),
        )
    out.print(table)
    rest = len(verdict.figures) - len(shown)
    if rest > 0:
        out.print(f"{rest} more figures; --json lists every one ('change' > 0: worse)")
