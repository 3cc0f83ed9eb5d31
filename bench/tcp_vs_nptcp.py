"""commscope's TCP ping-pong against NetPIPE's NPtcp, interleaved rounds, loopback and vcluster.

Prints, per round and as the median of rounds, the 8-byte one-way latency and the peak
ping-pong throughput of each, and their ratios (goals: latency <= 1.05x NPtcp, peak
throughput >= 0.95x). Both use the NetPIPE size schedule (+-3 bytes) up to --max-size and
the system's default socket buffers. Not a test: it prints figures. The vcluster part needs
root; it builds a 2-node cluster at 1 gbit and always removes it.

Statistics differ: commscope reports the median of its samples, NetPIPE the best of its
trials, so "best" also gives commscope's peak from its fastest sample per size. "peak >=
256K" leaves out the sizes that the vcluster links' token bucket (16 KB) lets through faster
than the link rate, which no real link does.

    flock /tmp/commscope-mpi.lock .venv/bin/python bench/tcp_vs_nptcp.py \
        [--rounds 3] [--max-size 1MiB] [--where loopback,vcluster]
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from commscope.data.records import Point
from commscope.data.store import Store
from commscope.importers import netpipe
from commscope.measure import vcluster
from commscope.measure.tcp import program as prog
from commscope.measure.tcp import session
from commscope.units import netpipe_schedule, parse_size

NPTCP_PORT = 5377


BIG = 256 << 10
Figures = tuple[float, float, float, float]


def figures(points: list[Point]) -> Figures:
    """8-byte one-way time (s) and peak throughputs (bytes/s): all sizes, best sample, >= 256K."""
    by_size = {p.bytes: p for p in points}
    sized = [p for p in points if p.bytes > 0]
    peak = max(p.bandwidth_Bps for p in sized)
    best = max(p.bytes / min(p.samples_s) for p in sized)
    big = max((p.bandwidth_Bps for p in sized if p.bytes >= BIG), default=float("nan"))
    return by_size[8].latency_s, peak, best, big


def nptcp_round(
    client: list[str], server: list[str], host: str, max_bytes: int, workdir: Path
) -> Figures:
    """Run NPtcp once (receiver in ``server``, transmitter in ``client``)."""
    out = workdir / "np.out"
    out.unlink(missing_ok=True)
    receiver = subprocess.Popen(
        [*server, "NPtcp", "-P", str(NPTCP_PORT)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        time.sleep(0.5)  # NPtcp prints nothing when it listens
        subprocess.run(
            [
                *client,
                "NPtcp",
                "-h",
                host,
                "-P",
                str(NPTCP_PORT),
                "-o",
                str(out),
                "-u",
                str(max_bytes),
            ],
            check=True,
            capture_output=True,
            timeout=900,
            cwd=workdir,
        )
    finally:
        try:
            os.killpg(receiver.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        receiver.wait()
    imported = netpipe.parse(str(out), out.read_text().splitlines(), "inter-node")
    return figures([r for r in imported.records if isinstance(r, Point)])


def commscope_round(where: dict[str, Any], sizes: list[int], store_path: Path) -> Figures:
    """Run commscope's TCP ping-pong once at ``where`` (loopback or vcluster)."""
    request = {
        "benchmark": "tcp",
        "timeout_s": 900,
        "where": where,
        "tcp": {"mode": "pingpong", "sizes": sizes, "sockbuf": 0},
    }
    with Store.open(store_path) as store:
        run_id = store.create_run("tcp", "bench", None, where["kind"], 2, request)
        session.run(store, run_id, request)
        return figures(store.points(run_id))


def compare(name: str, rounds: int, tools: dict[str, Any]) -> None:
    results: dict[str, list[Figures]] = {tool: [] for tool in tools}
    print(f"\n{name}")
    print(
        f"{'round':>5} {'tool':>10} {'8 B latency (us)':>17} {'peak (MB/s)':>12} "
        f"{'best':>8} {'peak >= 256K':>13}"
    )
    for i in range(rounds):
        for tool, fn in tools.items():
            f = fn()
            results[tool].append(f)
            print(
                f"{i + 1:>5} {tool:>10} {f[0] * 1e6:>17.2f} {f[1] / 1e6:>12.1f} "
                f"{f[2] / 1e6:>8.1f} {f[3] / 1e6:>13.1f}",
                flush=True,
            )
    med = {t: [statistics.median(f[k] for f in r) for k in range(4)] for t, r in results.items()}
    for tool, (lat, peak, best, big) in med.items():
        print(
            f"median {tool:>10}: 8 B latency {lat * 1e6:.2f} us, peak {peak / 1e6:.1f} MB/s,"
            f" best {best / 1e6:.1f} MB/s, peak >= 256K {big / 1e6:.1f} MB/s"
        )
    c, n = med["commscope"], med["NPtcp"]
    print(
        f"ratio commscope/NPtcp ({name}): latency {c[0] / n[0]:.3f} (goal <= 1.05), "
        f"peak throughput {c[1] / n[1]:.3f} (goal >= 0.95), best {c[2] / n[2]:.3f}, "
        f"peak >= 256K {c[3] / n[3]:.3f}"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--max-size", default="1MiB")
    parser.add_argument("--where", default="loopback,vcluster")
    args = parser.parse_args()
    max_bytes = parse_size(args.max_size)
    sizes = [s for s in netpipe_schedule(max_bytes, 3) if s > 0]
    prog.find()  # build outside the timed rounds if needed
    places = args.where.split(",")
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        if "loopback" in places:
            compare(
                "loopback",
                args.rounds,
                {
                    "NPtcp": lambda: nptcp_round([], [], "127.0.0.1", max_bytes, work),
                    "commscope": lambda: commscope_round(
                        {"kind": "loopback"}, sizes, work / "s.sqlite"
                    ),
                },
            )
        if "vcluster" in places:
            if os.geteuid() != 0:
                print("\nvcluster: skipped, needs root")
                return 0
            state = vcluster.up(2, "1gbit")
            try:
                a, b = (["ip", "netns", "exec", n.name] for n in state.nodes[:2])
                host = state.nodes[1].address
                compare(
                    "vcluster, 2 nodes at 1 gbit",
                    args.rounds,
                    {
                        "NPtcp": lambda: nptcp_round(a, b, host, max_bytes, work),
                        "commscope": lambda: commscope_round(
                            {"kind": "vcluster"}, sizes, work / "s.sqlite"
                        ),
                    },
                )
            finally:
                vcluster.down()
    return 0


if __name__ == "__main__":
    sys.exit(main())
