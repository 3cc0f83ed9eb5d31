"""`commscope export`: a run's raw records as CSV or JSON."""

from __future__ import annotations

import argparse
import csv
import sys
from typing import Any

from commscope.cli import common, json_text
from commscope.data.records import Point
from commscope.data.store import Store
from commscope.errors import StoreError

HELP = (
    "export a run's raw records: JSON lines hold every record (header, then each measured"
    " record); CSV one row per point-to-point sample"
)
EXAMPLES = """examples:
  commscope export latest --format csv > run.csv
  commscope export 3 --format json > run.jsonl     (header line, then one line per record)
"""


def setup_parser(p: argparse.ArgumentParser) -> None:
    """Declare the options of `commscope export`."""
    p.add_argument("run", nargs="?", default="latest", help="run id or 'latest' [default: latest]")
    p.add_argument("--format", choices=("csv", "json"), default="csv", help="[default: csv]")


def _json_line(data: Any, what: str) -> str:
    """``data`` as one line of strict JSON (no NaN or Infinity, which JSON does not have).

    Raises:
        StoreError: ``data`` holds such a number; stores written before imports refused
            them can hold one.
    """
    try:
        return json_text.record_line(data)
    except ValueError:
        raise StoreError(
            f"{what} holds a number that is not finite (NaN or Infinity), which"
            " JSON cannot carry; import or measure that run again"
        ) from None


def run(args: argparse.Namespace) -> int:
    """Write the run to stdout."""
    Store.check_ref(args.run)  # a bad reference is named before a missing store
    with common.open_store(args, write=False) as store:
        run_id = store.resolve_run(args.run)
        info = store.get_run(run_id)
        records = store.measurements(run_id)
    points = [r for r in records if isinstance(r, Point)]
    if args.format == "json":
        lines = [_json_line(info.header, f"run {run_id}'s header")] if info.header else []
        lines += [
            _json_line(r.raw, f"run {run_id}'s record {' '.join(map(str, r.key))} B")
            for r in records
        ]
        sys.stdout.write("".join(lines))  # all checked first: no half-written output
        return 0
    if len(points) < len(records):
        common.console(stderr=True).print(
            f"export: CSV holds point-to-point samples; {len(records) - len(points)} other"
            f" records of run {run_id} (collectives, contention...) are in --format json",
            markup=False,
        )
    w = csv.writer(sys.stdout)
    w.writerow(
        [
            "run",
            "op",
            "pair",
            "rank_a",
            "rank_b",
            "bytes",
            "bytes_per_sample",
            "iters_per_sample",
            "sample",
            "time_s",
            "interrupted",
        ]
    )
    for p in points:
        out = set(p.interrupted)
        for i, t in enumerate(p.samples_s):
            w.writerow(
                [
                    run_id,
                    p.op,
                    p.pair,
                    p.ranks[0],
                    p.ranks[1],
                    p.bytes,
                    p.bytes_per_sample,
                    p.iters_per_sample,
                    i,
                    repr(t),
                    int(i in out),
                ]
            )
    return 0
