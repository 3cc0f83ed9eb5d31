"""``commscope check``: did this cluster get worse than its baseline? One line, one exit code.

Exit codes follow the monitoring-plugins convention (Nagios, Icinga, Node Health Check):
0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN (could not measure, missing baseline, bad usage).
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from commscope import status
from commscope.check.excuse import DEFAULT_EXCUSE_NIGHTS
from commscope.check.window import DEFAULT_HISTORY_NIGHTS
from commscope.cli import common
from commscope.errors import CommscopeError
from commscope.jobs import check
from commscope.limits import MAX_EXCUSE_NIGHTS

if TYPE_CHECKING:
    from commscope.check.verdict import Verdict

NAME = "check"
HELP = "judge a run (or a new measurement) against a baseline: exit 0 OK, 1 WARN, 2 CRIT, 3 UNKNOWN"
EXAMPLES = """examples:
  commscope check --baseline nightly              measure the baseline's request again, judge it
  commscope check --baseline nightly 42           judge stored run 42
  commscope check --baseline nightly --tolerance bw=5%,latency=20%
  commscope check --baseline nightly --prometheus /var/lib/prometheus/node-exporter/commscope.prom
  commscope check --baseline nightly --junit check.xml --json > check.json
  commscope check --baseline nightly --allow-subset   judge the pairs of the nodes still up
  commscope check --baseline nightly --excuse-nights 7   a week to rebase after an upgrade
  commscope check --baseline nightly --history-nights 7  a step alarms for its first week
  commscope check --baseline nightly --no-history   judge tonight against the baseline alone
exit codes: 0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN (as Nagios, Icinga and NHC read them)"""
SHOWN = 15  # figures listed on the terminal, worst first; --json has them all


def setup_parser(p: argparse.ArgumentParser) -> None:
    """Declare the options of `commscope check`."""
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
        "--max-detection-limit",
        metavar="PCT",
        help="do not judge a figure whose detection limit (the change the baseline's runs let"
        " a check see 95 %% of the time) passes this [default: the baseline's, 50%%]",
    )
    _nights(
        p,
        "--excuse-nights",
        (0, MAX_EXCUSE_NIGHTS, DEFAULT_EXCUSE_NIGHTS),
        "a changed environment (MPI, kernel, ...) excuses a worse figure for N nights;"
        " then the check judges it and asks to rebase ('baseline create NAME --from-last K"
        " --replace')",
    )
    p.add_argument(
        "--allow-other-hosts",
        action="store_true",
        help="judge a run of other hosts than the baseline's (its changes are then not called"
        " regressions)",
    )
    p.add_argument(
        "--allow-subset",
        action="store_true",
        help="when a baseline node is drained, down, reserved or not in this allocation,"
        " measure the others and judge their pairs (the left-out node's figures are not"
        " judged) instead of exiting 3",
    )
    p.add_argument(
        "--timeout",
        type=common.number(1.0, 86400.0),
        default=check.DEFAULT_TIMEOUT_S,
        metavar="S",
        help="most seconds a new measurement may take [default: %(default)s]",
    )
    p.add_argument(
        "--once",
        action="store_true",
        help="judge one measurement: do not measure the figures past their limits again"
        " (by default they are, and a figure is CRITICAL only if worse both times; what"
        " recovered is WARNING, transient)",
    )
    _nights(
        p,
        "--history-nights",
        (3, 30, DEFAULT_HISTORY_NIGHTS),  # = changes.MIN_SEGMENT, UPDATE_WINDOW: no NumPy here
        "a step the stored nights show (3 or more nights at a new level, held across"
        " figures at 1%% false discoveries) is CRITICAL while it began within the last N"
        " nights, even inside one night's band",
    )
    p.add_argument(
        "--no-history",
        action="store_true",
        help="judge the night against the baseline alone; do not read the stored nights",
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
    p.add_argument(
        "--prometheus-figures",
        choices=check.PROMETHEUS_FIGURES,
        default="flagged",
        help="figures that get series of their own: the flagged ones, or all (a large"
        " matrix has a million) [default: %(default)s]",
    )


def _nights(p: argparse.ArgumentParser, flag: str, bounds: tuple[int, int, int], text: str) -> None:
    """An option of N nights: (lowest, highest, default)."""
    lo, hi, default = bounds
    p.add_argument(
        flag,
        type=common.whole(lo, hi),
        default=default,
        metavar="N",
        help=f"{text} [default: %(default)s]",
    )


def run(args: argparse.Namespace) -> int:
    """Judge, print, export; every error is UNKNOWN (3)."""
    with status.unknown_on_error():
        try:
            job = _job(args)
        except CommscopeError as bad:  # monitoring reads UNKNOWN, not last night's verdict
            check.export_unknown(args.baseline, bad.one_line(), args.prometheus, args.junit)
            raise
        outcome = check.run_check(job)
    err = common.console(stderr=True)
    for note in outcome.notes:
        err.print(common.terminal_text(note), markup=False)
    if args.json:
        common.print_json(outcome.verdict.to_json())
    else:
        _print(outcome.verdict)
    return outcome.verdict.status


def _job(args: argparse.Namespace) -> check.CheckJob:
    """The check the options ask for; a bad tolerance or label fails here."""
    from commscope import kinds
    from commscope.check import tolerance

    specs = kinds.figure_specs()
    classes = {s.tolerance for s in specs.values()}
    tolerances = tolerance.parse(args.tolerance, [*classes, *specs]) if args.tolerance else {}
    bound = args.max_detection_limit
    if bound is not None:
        bound = tolerance.parse_share(bound, "--max-detection-limit")
    if args.run is None and args.label is not None:
        common.check_label(args.label)
    return check.CheckJob(
        store=args.store,
        baseline=args.baseline,
        run=args.run,
        tolerances=tolerances,
        allow_other_hosts=args.allow_other_hosts,
        allow_subset=args.allow_subset,
        timeout_s=args.timeout,
        label=args.label,
        prometheus=args.prometheus,
        junit=args.junit,
        max_detection_limit=bound,
        again=not args.once,
        prometheus_figures=args.prometheus_figures,
        excuse_nights=args.excuse_nights,
        history=not args.no_history,
        history_nights=args.history_nights,
    )


def _print(verdict: Verdict) -> None:
    from rich.table import Table

    from commscope.check import judging

    out = common.console()
    # One unwrapped line first: what a monitoring system shows as the plugin's output.
    print(common.terminal_text(verdict.summary()), flush=True)
    age = verdict.environment_age
    for change in verdict.environment_changes:
        out.print(common.terminal_text(f"  environment changed: {change}"), markup=False)
    if age is not None and verdict.rebase:
        out.print(
            common.terminal_text(
                f"  first seen {age.when_text()}: no longer excused (--excuse-nights"
                f" {age.allowed}), its figures are judged; when they are the new normal,"
                f" rebase: {verdict.rebase}"
            ),
            markup=False,
        )
    elif age is not None:
        out.print(
            f"  first seen {age.when_text()}: a worse figure is excused, night {age.nights} of"
            f" {age.allowed}; from night {age.allowed + 1} on the check judges it and asks to"
            " rebase",
            markup=False,
        )
    for text in verdict.load:
        out.print(common.terminal_text(f"  load: {text}"), markup=False)
    _print_history(verdict)
    left = judging.figures_left_out(verdict)
    if left:
        out.print(f"  {left} figures not judged: nodes were left out (named above)", markup=False)
    if verdict.not_judged - left:
        out.print(
            f"  {verdict.not_judged - left} figures not judged: their"
            " detection limits pass"
            f" {verdict.max_detection_limit:.0%} (the baseline's runs spread too far to tell a"
            " change from chance; give it more runs, spread over several nights)",
            markup=False,
        )
    flagged = [f for f in verdict.figures if f.status in (status.WARNING, status.CRITICAL)]
    judged = [f for f in verdict.figures if f.judged and f not in flagged]
    not_judged = [f for f in verdict.figures if not f.judged]
    shown = (flagged or judged)[:SHOWN]
    shown += not_judged[: max(0, SHOWN - len(shown))]
    table = Table(title="figures, worst first" if flagged else "figures")
    for col in ("status", "figure", "change", "limit", "detect", "p", "why"):
        right = col in ("change", "limit", "detect", "p")
        table.add_column(col, justify="right" if right else "left")
    for f in shown:
        change = "" if f.worse_by is None else f"{f.worse_by:+.1%}"
        p = "" if f.p_value is None else f"{f.p_value:.2g}"
        detect = "" if f.detection_limit is None else f"{f.detection_limit:.0%}"
        why = f.cause or ("" if f.judged_by == "tolerance" else "judged by its decision threshold")
        table.add_row(
            "not judged" if not f.judged else status.name(f.status),
            common.terminal_text(f.key),
            change,
            f"{f.limit:.0%}" if f.judged else "",
            detect,
            p,
            common.terminal_text(why),
        )
    out.print(table)
    rest = len(verdict.figures) - len(shown)
    if rest > 0:
        out.print(f"{rest} more figures; --json lists every one ('change' > 0: worse)")


def _print_history(verdict: Verdict) -> None:
    """What the history verdict read: its nights and the steps it alarms on."""
    read = verdict.history
    if read is None or not read.searched:
        return  # not asked, or the summary line said why not
    out = common.console()
    since = "" if read.since is None else f", since the environment changed at run {read.since[0]}"
    alarms = read.alarms()
    out.print(
        f"  history: {len(read.runs)} nights read (runs {read.runs[0]}-{read.runs[-1]}{since});"
        f" {len(read.steps)} figures with a step, {len(alarms)} began within the last"
        f" {read.nights} nights and persist (false steps held at {read.fdr:.0%} across figures)",
        markup=False,
    )
