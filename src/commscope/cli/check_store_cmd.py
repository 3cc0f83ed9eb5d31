"""`commscope check-store`: what in a store is damaged and what can still be read."""

from __future__ import annotations

import argparse
from pathlib import Path

from commscope import status
from commscope.cli import common
from commscope.data.store_integrity import RunIntegrity, StoreIntegrity, inspect_store

HELP = "check a store file: SQLite's integrity check, its tables, every row's checksum and JSON"
EXAMPLES = """examples:
  commscope check-store
  commscope check-store --store /data/old.sqlite --json | jq '.runs[] | select(.damaged != [])'
exit status: 0 nothing is damaged, 2 something is (CRITICAL), 3 the file cannot be read
(UNKNOWN), as monitoring plugins exit; the file is never changed.
"""


def setup_parser(p: argparse.ArgumentParser) -> None:
    """Declare the options of `commscope check-store`."""
    p.add_argument("--store", dest="check_path", metavar="PATH", help="default: the global --store")
    p.add_argument("--json", action="store_true", help="machine-readable output")


def run(args: argparse.Namespace) -> int:
    """Print what was found, run by run; CRITICAL (2) when anything is damaged."""
    found = inspect_store(Path(args.check_path or args.store).expanduser())
    if args.json:
        common.print_json(found.to_json())
    else:
        for line in _lines(found):
            print(common.terminal_text(line))
    return status.OK if found.ok else status.CRITICAL


def _lines(found: StoreIntegrity) -> list[str]:
    version = f"store version {found.version}" if found.version else "unknown store version"
    lines = [f"{found.path}: {version}, {len(found.runs)} runs"]
    lines += [f"  damaged: {problem}" for problem in found.problems]
    for run in found.runs.values():
        lines.append(f"run {run.id}{_label(run)}: {_held(run)}")
        lines += [f"  damaged: {what}" for what in run.damaged]
    lines += [f"  damaged: {what}" for what in found.loose]
    lines.append(_verdict(found))
    return lines


def _label(run: RunIntegrity) -> str:
    return f" ({run.label})" if isinstance(run.label, str) and run.label else ""


def _held(run: RunIntegrity) -> str:
    held = ", ".join(f"{n} {kind}{'s' if n != 1 else ''}" for kind, n in run.readable.items())
    state = "DAMAGED" if run.damaged else "rows ok"
    return f"{state}; readable: {held or 'nothing'}"


def _verdict(found: StoreIntegrity) -> str:
    if found.ok:
        return "ok: nothing is damaged"
    bad = sum(1 for r in found.runs.values() if r.damaged)
    if found.problems:
        return (
            "damage found in the file itself: commands refuse what they read of it, and rows"
            " may be missing without an error; restore it from a backup ('sqlite3 STORE"
            " .recover' may salvage rows SQLite can read)"
        )
    loose = " and in rows that belong to no run" if found.loose else ""
    return (
        f"damage found in {bad} of {len(found.runs)} runs{loose}: the other runs can still be"
        " shown, exported and written to; commands refuse the damaged ones until the store is"
        " restored"
    )
