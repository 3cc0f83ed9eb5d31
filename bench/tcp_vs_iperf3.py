"""commscope's TCP stream and ping-pong peak against iperf3 on a 2-node virtual cluster at 1 gbit.

Interleaved rounds, each with iperf3 run just before and just after commscope, so that what
drifts on the machine falls on both:

- stream: `commscope run tcp --tcp-mode stream` (both directions at once, messages of 2000 B
  on average) against `iperf3 --bidir` (a connection per direction, 128 KiB writes); goal:
  each direction >= 0.80 of iperf3's rate in that direction, less iperf3's own drift between
  its runs before and after.
- peak: the ping-pong peak over 256 KiB to 4 MiB against iperf3's best one-second interval
  (its first left out: it also counts what filled the socket buffer); goal: within 10 %, plus
  iperf3's drift. From 256 KiB up the links' token bucket (16 KB) no longer lets a message
  pass unshaped, so smaller messages, faster than the rate, are left out.

Prints every round's figures and ratios and how many rounds met each goal. Not a test: it
prints figures. Needs root (the cluster) and iperf3; it builds the cluster and always removes
it.

    flock /tmp/commscope-bench.lock .venv/bin/python bench/tcp_vs_iperf3.py [--rounds 5]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from commscope.measure import vcluster

IPERF_PORT = 5201
STREAM_GOAL = 0.80
PEAK_GOAL = 0.10


def iperf3(state: vcluster.ClusterState, *args: str) -> dict:
    """Run iperf3 from node 1 to a one-shot server on node 2; its JSON output."""
    a, b = state.nodes[0], state.nodes[1]
    server = subprocess.Popen(
        ["ip", "netns", "exec", b.name, "iperf3", "-s", "-1", "-p", str(IPERF_PORT)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        time.sleep(0.5)  # the server prints nothing when it listens
        client = ["iperf3", "-c", b.address, "-p", str(IPERF_PORT), *args, "-J"]
        out = subprocess.run(
            ["ip", "netns", "exec", a.name, *client],
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        )
    finally:
        server.kill()
        server.wait()
    return json.loads(out.stdout)


def iperf3_bidir_Bps(state: vcluster.ClusterState) -> tuple[float, float]:
    """iperf3 --bidir for 10 s: bytes/s node 1 -> 2 and node 2 -> 1."""
    end = iperf3(state, "-t", "10", "--bidir")["end"]
    return (
        end["sum_received"]["bits_per_second"] / 8,
        end["sum_received_bidir_reverse"]["bits_per_second"] / 8,
    )


def iperf3_peak_Bps(state: vcluster.ClusterState) -> float:
    """iperf3's best one-second interval node 1 -> 2 over 6 s, bytes/s; the first left out."""
    intervals = iperf3(state, "-t", "6")["intervals"][1:]
    return max(float(i["sum"]["bits_per_second"]) for i in intervals) / 8


def run_tcp(store: Path, *args: str) -> dict:
    """`commscope run tcp --vcluster` (argument list, no shell): its one run's JSON."""
    argv = [sys.executable, "-m", "commscope", "--store", str(store), "run", "tcp"]
    out = subprocess.run([*argv, "--vcluster", "--json", *args], capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"commscope run tcp {' '.join(args)} failed: {out.stderr.strip()}")
    (run,) = json.loads(out.stdout)["runs"]
    return run


def stream_round(state: vcluster.ClusterState, store: Path) -> tuple[list[float], float]:
    """Each direction's stream rate over iperf3's (client -> server first), and the floor."""
    before = iperf3_bidir_Bps(state)
    run = run_tcp(store, "--tcp-mode", "stream")
    after = iperf3_bidir_Bps(state)
    reference = [(b + a) / 2 for b, a in zip(before, after, strict=True)]
    drift = max(abs(b - a) / r for b, a, r in zip(before, after, reference, strict=True))
    rate = {d["from"]: d["rate_Bps"] for d in run["stream"]}  # 0: the client, 1: the server
    ratios = [rate[0] / reference[0], rate[1] / reference[1]]
    print(
        f"  stream MB/s each way {rate[0] / 1e6:.1f}, {rate[1] / 1e6:.1f}; iperf3 --bidir"
        f" {reference[0] / 1e6:.1f}, {reference[1] / 1e6:.1f} (drift {drift:.1%}); ratios"
        f" {ratios[0]:.3f}, {ratios[1]:.3f} (goal >= {STREAM_GOAL - drift:.3f})"
    )
    return ratios, STREAM_GOAL - drift


def peak_round(state: vcluster.ClusterState, store: Path) -> tuple[float, float]:
    """The ping-pong peak over iperf3's, and the tolerance its drift allows."""
    before = iperf3_peak_Bps(state)
    run = run_tcp(store, "--sizes", "256K,512K,1MiB,2MiB,4MiB", "--point-budget", "2")
    after = iperf3_peak_Bps(state)
    reference = (before + after) / 2
    tolerance = PEAK_GOAL + abs(before - after) / reference
    peak = run["peak_bandwidth_Bps"]
    print(
        f"  ping-pong peak {peak / 1e6:.1f} MB/s at {run['peak_bytes']} B; iperf3"
        f" {before / 1e6:.1f} and {after / 1e6:.1f} MB/s; ratio {peak / reference:.3f}"
        f" (goal within {tolerance:.3f} of 1)"
    )
    return peak / reference, tolerance


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    if args.rounds < 1:
        sys.exit(f"--rounds {args.rounds}: give 1 or more")
    if os.geteuid() != 0:
        sys.exit("bench/tcp_vs_iperf3.py: the virtual cluster needs root; run it as root")
    if shutil.which("iperf3") is None:
        sys.exit("bench/tcp_vs_iperf3.py: iperf3 is not installed (./setup.sh --test)")
    sys.stdout.reconfigure(line_buffering=True)  # type: ignore[attr-defined]
    store = Path(tempfile.mkdtemp(prefix="commscope-bench-")) / "store.sqlite"
    streams: list[tuple[list[float], float]] = []
    peaks: list[tuple[float, float]] = []
    state = vcluster.up(2, "1gbit")
    try:
        for r in range(args.rounds):
            print(f"round {r + 1} of {args.rounds}")
            streams.append(stream_round(state, store))
            peaks.append(peak_round(state, store))
    finally:
        vcluster.down()
    stream_met = sum(min(ratios) >= floor for ratios, floor in streams)
    peak_met = sum(abs(ratio - 1) <= tol for ratio, tol in peaks)
    low = statistics.median(min(ratios) for ratios, _ in streams)
    print(
        f"stream: {stream_met} of {args.rounds} rounds met the goal; median of the slower"
        f" direction's ratio {low:.3f}"
    )
    print(
        f"peak: {peak_met} of {args.rounds} rounds met the goal; median ratio"
        f" {statistics.median(ratio for ratio, _ in peaks):.3f}"
    )
    print(f"store {store}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
