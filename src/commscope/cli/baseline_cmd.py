"""``commscope baseline``: keep stored runs' figures under a name, for ``check`` to judge by."""

from __future__ import annotations

import argparse
import datetime
import re
from typing import Any

from commscope.cli import common
from commscope.errors import UsageError

NAME = "baseline"
HELP = "keep a baseline of stored runs' figures (center and run-to-run spread) for 'check'"
EXAMPLES = """examples:
  commscope baseline create nightly 12 13 14     three runs: the spread between them counts
  commscope baseline list                         every baseline, its runs and figures
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
        "Make a baseline of stored runs. Several runs give each figure's run-to-run spread,"
        " which a check uses where it is wider than the tolerance.",
        "create nightly 12 13 14",
    )
    create.add_argument("name", type=baseline_name, help="the baseline's name")
    create.add_argument("runs", nargs="+", metavar="RUN", help="run ids or 'latest'")
    listing = action(
        "list",
        "every baseline with its runs and figure count",
        "List every baseline with its runs and figure count.",
        "list --json",
    )
    listing.add_argument("--json", action="store_true", help="print JSON")
    show = action(
        "show",
        "a baseline's environment and figures",
        "Show a baseline's environment and every figure's center and band.",
        "show nightly",
    )
    show.add_argument("name", help="the baseline's name")
    show.add_argument("--json", action="store_true", help="print the whole baseline as JSON")
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
    from commscope.check.judging import make_baseline
    from commscope.data.run_data import read_run

    with common.open_store(args) as store:
        ids = [store.resolve_run(r) for r in args.runs]
        if len(set(ids)) != len(ids):
            raise UsageError("a run is named twice; give each run once")
        names = dict(store.baseline_names())
        if args.name in names:
            raise UsageError(
                f"baseline {args.name!r} exists; choose another name or delete it first"
                f" ('commscope baseline delete {args.name}')"
            )
        made = make_baseline(args.name, [read_run(store, i) for i in ids])
        store.add_baseline(args.name, made.to_json())
    banded = sum(1 for f in made.figures.values() if f.spread is not None)
    print(
        f"baseline {args.name}: {len(made.figures)} figures from run"
        f"{'s' if len(ids) > 1 else ''} {', '.join(map(str, ids))}"
        + (f" ({banded} with a run-to-run band)" if banded else " (one run: no run-to-run band)")
    )
    return 0


def _when(unix: float) -> str:
    return datetime.datetime.fromtimestamp(unix).strftime("%Y-%m-%d %H:%M")


def _list(args: argparse.Namespace) -> int:
    with common.open_store(args, write=False) as store:
        rows = []
        for name, created in store.baseline_names():
            body = store.baseline(name)
            rows.append(
                {
                    "name": name,
                    "created_unix": created,
                    "kind": body["kind"],
                    "runs": body["runs"],
                    "figures": len(body["figures"]),
                }
            )
    if args.json:
        common.print_json({"baselines": rows})
        return 0
    if not rows:
        print("no baselines; make one with 'commscope baseline create NAME RUN [RUN...]'")
        return 0
    from rich.table import Table

    table = Table(title="baselines")
    for col in ("name", "created", "kind", "runs", "figures"):
        table.add_column(col, justify="right" if col == "figures" else "left")
    for r in rows:
        table.add_row(
            r["name"],
            _when(r["created_unix"]),
            r["kind"],
            ",".join(map(str, r["runs"])),
            str(r["figures"]),
        )
    common.console().print(table)
    return 0


def _show(args: argparse.Namespace) -> int:
    from commscope.check.baseline import Baseline
    from commscope.check.verdict import shown

    with common.open_store(args, write=False) as store:
        body = store.baseline(args.name)
    if args.json:
        common.print_json(body)
        return 0
    made = Baseline.from_json(body)
    out = common.console()
    out.print(
        f"baseline {made.name}: {made.kind} runs {', '.join(map(str, made.runs))}, made"
        f" {_when(made.created_unix)}"
    )
    for key, value in made.environment.items():
        if key != "engine_options" and value not in (None, [], {}):
            shown_value = ",".join(map(str, value)) if isinstance(value, list) else str(value)
            out.print(common.terminal_text(f"  {key}: {shown_value}"), markup=False)
    from rich.table import Table

    level = made.band_level()
    table = Table(
        title=f"figures (band: how far one more run may fall by chance, {level:.0%} one-sided)"
    )
    for col in ("figure", "center", "runs", "band", "samples"):
        table.add_column(col, justify="left" if col == "figure" else "right")
    for f in made.figures.values():
        band = f.band(level)
        table.add_row(
            common.terminal_text(f.key),
            shown(f.center, f.unit),
            str(len(f.run_centers)),
            "" if band is None else f"{band:.1%}",
            str(f.n_samples),
        )
    out.print(table)
    return 0


def _delete(args: argparse.Namespace) -> int:
    with common.open_store(args) as store:
        store.delete_baseline(args.name)
    print(f"baseline {args.name} deleted; its runs stay in the store")
    return 0
