"""A link slowed by 20 % from night 10, on a 2-node virtual cluster: what each verdict says.

Sixteen "nights" of the same p2p request (8 B, 64 KiB, 1 MiB) on 2 nodes at --rate
(400 mbit: the link, not the two shared cores, bounds the bandwidth there). Nights 1-5 are
plain runs and become the baseline (`baseline create nightly --from-last 5`); nights 6-16
are measuring checks of it (`check --baseline nightly --json`), each one stored as a run.
From night --step-at (10) csnode2's link runs at (1 - --drop) of the rate. Printed per
night: the check's status, its inter-node figures (change against the baseline, status)
and, where the check reads the history, the step it found and whether it alarmed; at the end
`history --changes` over every run: the change points of the inter-node figures, with the
run each was placed at. Not a test: a demonstration with its figures.

    flock /tmp/commscope-bench.lock .venv/bin/python bench/history_vcluster.py \
        [--nights 16] [--step-at 10] [--drop 0.2] [--rate 400mbit] [--store DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from commscope.measure import vcluster

SLOW_NODE = "csnode2"
REQUEST = ["run", "p2p", "--vcluster", "--sizes", "8,64KiB,1MiB", "--label", "nightly"]
BASELINE_RUNS = 5


def commscope(store: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, COMMSCOPE_STORE=str(store))
    return subprocess.run(
        [sys.executable, "-m", "commscope", *args], capture_output=True, text=True, env=env
    )


def inter_node(verdict: dict) -> list[str]:
    """The check's inter-node figures, one short line each, with the history's step if any."""
    lines = []
    for f in verdict.get("figures", []):
        if 'pair="inter-node"' in f["key"]:
            worse = f.get("worse_by")
            change = f"{worse:+.1%}" if isinstance(worse, (int, float)) else "n/a"
            step = f.get("history") or {}
            found = (
                f"; history: step {step['worse_by']:+.1%} from run {step['change_run']},"
                f" q {step['q_value']:.2g}, alarm {step['alarm']} ({step['why']})"
                if step
                else ""
            )
            lines.append(f"    {f['key']}: {change} {f['status']}{found}")
    history = verdict.get("history") or {}
    if history:
        lines.append(
            f"    {history.get('note') or 'history: searched'}, {history.get('nights_read')}"
            f" nights read, alarms {history.get('alarms')}"
        )
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nights", type=int, default=16)
    parser.add_argument("--step-at", type=int, default=10)
    parser.add_argument("--drop", type=float, default=0.2)
    parser.add_argument("--rate", default="400mbit")
    parser.add_argument("--store", help="folder of the store [default: a temporary one]")
    args = parser.parse_args()
    store = Path(args.store or tempfile.mkdtemp(prefix="history-vcluster-")) / "store.sqlite"
    if vcluster.status() is not None:
        print("a vcluster is up: run 'commscope vcluster down' first", file=sys.stderr)
        return 2
    rate_bits = vcluster.parse_rate(args.rate)
    slowed = f"{int(rate_bits * (1 - args.drop) / 1e6)}mbit"
    vcluster.up(2, args.rate)
    print(f"store {store}; {SLOW_NODE} at {slowed} from night {args.step_at}", flush=True)
    try:
        for night in range(1, args.nights + 1):
            if night == args.step_at:
                vcluster.set_rate(SLOW_NODE, slowed)
            start = time.monotonic()
            if night <= BASELINE_RUNS:
                out = commscope(store, *REQUEST, "--quiet")
                print(f"night {night:2d}: run, exit {out.returncode}", flush=True)
                if night == BASELINE_RUNS:
                    made = commscope(store, "baseline", "create", "nightly", "--from-last", "5")
                    print(f"  baseline create: exit {made.returncode}", flush=True)
                continue
            out = commscope(store, "check", "--baseline", "nightly", "--json")
            verdict = json.loads(out.stdout) if out.stdout.strip() else {}
            took = time.monotonic() - start
            print(
                f"night {night:2d}: check exit {out.returncode} ({took:.0f} s):"
                f" {verdict.get('summary', out.stderr.strip())}",
                flush=True,
            )
            print("\n".join(inter_node(verdict)), flush=True)
        changes = commscope(store, "history", "--changes", "--json")
        report = json.loads(changes.stdout) if changes.stdout.strip() else {}
        print(f"history --changes: {report.get('summary', changes.stderr.strip())}")
        for group in report.get("groups", []):
            print(f"  runs {group['runs'][0]}-{group['runs'][-1]} on {','.join(group['hosts'])}")
            for c in group["changes"]:
                if 'pair="inter-node"' in c["key"]:
                    print(
                        f"    run {c['run']}: {c['key']} {c['change']:+.1%} {c['direction']}"
                        f" (p {c['p_value']:.3g}, q {c['q_value']:.3g})"
                    )
    finally:
        vcluster.down()
    return 0


if __name__ == "__main__":
    sys.exit(main())
