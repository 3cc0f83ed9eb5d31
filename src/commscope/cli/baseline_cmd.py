"""``commscope baseline``: keep stored runs' figures under a name, for ``check`` to judge by."""

from __future__ import annotations

import argparse
import re
import time
from typing import Any

from commscope.cli import common
from commscope.errors import UsageError
from commscope.limits import MAX_FROM_LAST

NAME = "baseline"
HELP = "keep a baseline of stored runs' figures (centers, run-to-run spread, limits) for 'check'"
EXAMPLES = """examples:
  commscope baseline create nightly 12 13 14 15 16   runs of several nights: their spread counts
  commscope baseline create nightly --from-last 5    the 5 newest good runs like the newest run
  commscope baseline create nightly --from-last 10 --replace  rebase on its last ten checks' runs
  commscope baseline list                         every baseline, its age, runs and figures
  commscope baseline show nightly                 its environment and figures
  commscope baseline show nightly --json          everything, as JSON
  commscope baseline delete nightly"""
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


def baseline_name(text: str) -> str:
    """A baseline name: letters, digits, '.', '_' and '-', at most 64, first a letter or digit."""
    if not _NAME.fullmatch(text):
        raise argparse.ArgumentTypeError(
            f"{common.terminal_text(repr(text))} is not a baseline name; use letters, digits,"
            " '.', '_' and '-' (at most 64, starting with a letter or digit)"
        )
    return text


def setup_parser(parser: argparse.ArgumentParser) -> None:
    """Add the ``create``, ``list``, ``show`` and ``delete`` actions."""
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)

    def action(name: str, help_text: str, description: str, example: str) -> Any:
        return actions.add_parser(
            name,
            help=help_text,
            description=description,
            epilog=f"examples:\n  commscope baseline {example}",
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )

    create = action(
        "create",
        "make a baseline of one or more stored runs of one kind and the same hosts",
        "Make a baseline of stored runs, named by id or the last N good runs of a request"
        " (--from-last). Several runs, best of several nights, give each figure's run-to-run"
        " spread: what a check needs to tell a change from chance. A run far off the others,"
        " or one the load monitor flagged, is left out of a figure's spread and named."
        " Figures whose detection limit passes the bound are not judged.",
        "create nightly 12 13 14 15 16\n"
        "  commscope baseline create nightly --from-last 5\n"
        "  commscope baseline create nightly --from-last 5 --like 42\n"
        "  commscope baseline create nightly --from-last 10 --replace   (rebase on ten OK nights)",
    )
    create.add_argument("name", type=baseline_name, help="the baseline's name")
    create.add_argument(
        "runs", nargs="*", metavar="RUN", help="run ids or 'latest' (or --from-last N)"
    )
    create.add_argument(
        "--from-last",
        type=common.whole(1, MAX_FROM_LAST),
        metavar="N",
        help="take the newest N good runs like the reference run: its kind, request, hosts"
        " and environment; complete, not flagged by the load monitor",
    )
    create.add_argument(
        "--like",
        metavar="RUN",
        help="the reference run of --from-last [default: the newest complete run; with"
        " --replace, the newest complete run of the replaced baseline's request]",
    )
    create.add_argument(
        "--replace",
        action="store_true",
        help="replace a baseline of that name (a rebase), in one transaction",
    )
    create.add_argument(
        "--max-detection-limit",
        default="50%",
        metavar="PCT",
        help="a figure whose detection limit passes this is not judged by its checks"
        " [default: %(default)s]",
    )
    create.add_argument(
        "--full", action="store_true", help="print every figure's limits, not only per family"
    )
    listing = action(
        "list",
        "every baseline with its age, runs and figure count",
        "List every baseline: when it was made, how old it is, the days its oldest and"
        " newest runs were measured, its runs and figure count.",
        "list --json",
    )
    listing.add_argument("--json", action="store_true", help="print JSON")
    show = action(
        "show",
        "a baseline's age, environment and figures",
        "Show a baseline's age (made when, its runs measured when), its environment and"
        " every figure's center and band.",
        "show nightly",
    )
    show.add_argument("name", help="the baseline's name")
    show.add_argument("--json", action="store_true", help="print the whole baseline as JSON")
    show.add_argument("--full", action="store_true", help="per figure, the runs left out and why")
    delete = action(
        "delete",
        "remove a baseline (its runs stay)",
        "Remove a baseline; the runs it was made of stay in the store.",
        "delete nightly",
    )
    delete.add_argument("name", help="the baseline's name")


def run(args: argparse.Namespace) -> int:
    """Carry out the action."""
    return {"create": _create, "list": _list, "show": _show, "delete": _delete}[args.action](args)


def _create(args: argparse.Namespace) -> int:
    from commscope.check.tolerance import parse_share
    from commscope.jobs.baseline import BaselineJob, create

    bound = parse_share(args.max_detection_limit, "--max-detection-limit")
    if bool(args.runs) == (args.from_last is not None):
        raise UsageError(
            "baseline create: give run ids or --from-last N, not both and not neither"
            f" (e.g. 'commscope baseline create {args.name} --from-last 5')"
        )
    if args.like is not None and args.from_last is None:
        raise UsageError("--like RUN chooses the runs of --from-last N; give --from-last too")
    job = BaselineJob(
        store=args.store,
        name=args.name,
        runs=tuple(args.runs),
        from_last=args.from_last,
        like=args.like,
        replace=args.replace,
        max_detection_limit=bound,
    )
    outcome = create(job)
    made = outcome.baseline
    ids = made.runs
    if outcome.picked is not None:
        print(
            f"--from-last {args.from_last}: runs {', '.join(map(str, ids))}, like run"
            f" {outcome.picked.reference} (passed over: {outcome.picked.skipped_text()})"
        )
    limits = made.limits()
    judged = sum(1 for x in limits.values() if x.judged)
    print(
        f"baseline {args.name}{' replaced' if outcome.replaced else ''}: {len(made.figures)}"
        f" figures from run{'s' if len(ids) > 1 else ''} {', '.join(map(str, ids))}; {judged}"
        f" can be judged (detection limit within {bound:.0%})"
    )
    _detection(made, limits, args.full)
    return 0


def _pct(pair: tuple[float, float] | None) -> str:
    return "" if pair is None else f"{pair[0]:.1%} / {pair[1]:.1%}"


def _detection(made: Any, limits: Any, full: bool) -> None:
    """Left-out runs, per family (or per figure) L_C and L_D, and the figures not judged."""
    from rich.table import Table

    from commscope.check import detection

    out = common.console()
    for row in detection.left_out(made):
        run = "?" if row.run is None else row.run
        print(f"left out: run {run} ({row.cause}) from {row.figures} figures' spread")
    if full:
        table = Table(title="figures: decision threshold (L_C) and detection limit (L_D)")
        for col in ("figure", "runs kept", "df", "L_C", "L_D", "left out"):
            table.add_column(col, justify="left" if col in ("figure", "left out") else "right")
        for key, base in made.figures.items():
            lim = limits[key]
            table.add_row(
                common.terminal_text(key),
                f"{lim.n} of {len(base.run_centers)}",
                "" if not lim.df else "inf" if lim.df == float("inf") else f"{lim.df:.1f}",
                "" if lim.decision is None else f"{lim.decision:.1%}",
                "" if lim.detection is None else f"{lim.detection:.1%}",
                common.terminal_text("; ".join(base.left_out_text())),
            )
    else:
        table = Table(
            title="families: decision threshold (L_C) and detection limit (L_D), median / largest"
        )
        for col in ("family", "figures", "judged", "prior d0", "L_C", "L_D"):
            table.add_column(col, justify="left" if col == "family" else "right")
        for fam in detection.families(made, limits):
            d0 = fam.prior.d0
            table.add_row(
                fam.family,
                str(fam.figures),
                str(fam.judged),
                "none" if d0 == 0 else "inf" if d0 == float("inf") else f"{d0:.1f}",
                _pct(fam.decision),
                _pct(fam.detection),
            )
    out.print(table)
    coarse = detection.coarse(made, limits)
    for c in coarse[: None if full else 10]:
        left = f"; left out: {'; '.join(c.left_out)}" if c.left_out else ""
        out.print(common.terminal_text(f"warning: {c.key} {c.reason}{left}"), markup=False)
    if len(coarse) > 10 and not full:
        print(f"warning: {len(coarse) - 10} more figures not judged; --full lists them")


def _list(args: argparse.Namespace) -> int:
    from commscope.check import age as ages
    from commscope.jobs.baseline import age

    now = time.time()
    with common.open_store(args, write=False) as store:
        rows = []
        for name, _ in store.baseline_names():
            body = store.baseline(name)
            rows.append(
                {
                    "name": name,
                    **age(store, body).to_json(now),
                    "kind": body["kind"],
                    "runs": body["runs"],
                    "figures": len(body["figures"]),
                }
            )
    if args.json:
        common.print_json({"baselines": rows})
        return 0
    if not rows:
        print("no baselines; make one with 'commscope baseline create NAME --from-last N'")
        return 0
    from rich.table import Table

    table = Table(title="baselines")
    for col in ("name", "made", "age", "runs measured", "kind", "runs", "figures"):
        table.add_column(col, justify="right" if col in ("age", "figures") else "left")
    for r in rows:
        made = ages.BaselineAge(r["created_unix"], r["oldest_run_unix"], r["newest_run_unix"])
        table.add_row(
            r["name"],
            ages.when(r["created_unix"]),
            f"{ages.age_text(now - r['created_unix'])} old",
            made.runs_text().removeprefix("runs of "),
            r["kind"],
            ",".join(map(str, r["runs"])),
            str(r["figures"]),
        )
    common.console().print(table)
    return 0


def _show(args: argparse.Namespace) -> int:
    from commscope.check.baseline import Baseline
    from commscope.check.verdict import shown
    from commscope.jobs.baseline import age

    now = time.time()
    with common.open_store(args, write=False) as store:
        body = store.baseline(args.name)
        made_age = age(store, body)
    if args.json:
        common.print_json({**body, "age": made_age.to_json(now)})
        return 0
    made = Baseline.from_json(body)
    out = common.console()
    out.print(
        f"baseline {made.name}: {made.kind} runs {', '.join(map(str, made.runs))};"
        f" {made_age.text(now)}",
        markup=False,
    )
    for key, value in made.environment.items():
        if key != "engine_options" and value not in (None, [], {}):
            shown_value = ",".join(map(str, value)) if isinstance(value, list) else str(value)
            out.print(common.terminal_text(f"  {key}: {shown_value}"), markup=False)
    from rich.table import Table

    limits = made.limits()
    table = Table(
        title="figures (L_C: how far one more run falls by chance in 1 % of checks;"
        " L_D: the change a check sees 95 % of the time)"
    )
    cols = ("figure", "center", "runs", "L_C", "L_D", "samples")
    for col in (*cols, "left out") if args.full else cols:
        table.add_column(col, justify="left" if col in ("figure", "left out") else "right")
    for key, f in made.figures.items():
        lim = limits[key]
        row = [
            common.terminal_text(key),
            shown(f.center, f.unit),
            f"{lim.n} of {len(f.run_centers)}",
            "" if lim.decision is None else f"{lim.decision:.1%}",
            "not judged" if lim.detection is None else f"{lim.detection:.1%}",
            str(f.n_samples),
        ]
        if args.full:
            row.append(common.terminal_text("; ".join(f.left_out_text())))
        table.add_row(*row)
    out.print(table)
    _detection(made, limits, False)
    return 0


def _delete(args: argparse.Namespace) -> int:
    with common.open_store(args, create=False) as store:
        store.delete_baseline(args.name)
    print(f"baseline {args.name} deleted; its runs stay in the store")
    return 0
