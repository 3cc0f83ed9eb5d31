"""commscope ping-pong against NetPIPE (NPopenmpi) on this machine, interleaved rounds.

Prints, per round and as the median of rounds, the 8-byte one-way latency and the peak
ping-pong bandwidth of each, and their ratios. Not a test: it prints figures.

    .venv/bin/python bench/p2p_vs_netpipe.py [--rounds 5] [--max-size 4MiB]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from commscope.data.request import RunRequest
from commscope.data.store import Store
from commscope.measure import engine, launch, runner
from commscope.measure import mpi as mpi_mod
from commscope.units import netpipe_schedule, parse_size


def netpipe_round(mpi: mpi_mod.MPIInstall, max_bytes: int, workdir: Path) -> tuple[float, float]:
    """Run NPopenmpi once; return (8-byte one-way time s, peak bandwidth bytes/s)."""
    out = workdir / "np.out"
    job = launch.build_job(mpi, 2, ["NPopenmpi", "-o", str(out), "-u", str(max_bytes)])
    env = dict(os.environ, **job.env)
    subprocess.run(job.argv, check=True, capture_output=True, env=env, cwd=workdir)
    rows = [line.split() for line in out.read_text().splitlines() if line.strip()]
    times = {int(r[0]): float(r[2]) for r in rows}  # bytes -> one-way seconds
    peak = max(n / t for n, t in times.items())
    return times[8], peak


def commscope_round(
    mpi: mpi_mod.MPIInstall, sizes: list[int], store_path: Path
) -> tuple[float, float]:
    """Run commscope ping-pong once; return (8-byte one-way time s, peak bandwidth bytes/s)."""
    request = {
        "benchmark": "p2p",
        "mpi": mpi.choice,
        "np": 2,
        "launcher": "auto",
        "timeout_s": 600,
        "engine": {"ops": "pingpong", "sizes": sizes},
    }
    with Store.open(store_path) as store:
        run_id = store.create_run("p2p", "bench", mpi.tag, mpi.launcher, 2, request)
        runner.run(store, run_id, RunRequest.from_json(request), mpi)
        points = store.points(run_id)
    by_size = {p.bytes: p for p in points}
    peak = max(p.bandwidth_Bps for p in points if p.bytes > 0)
    return by_size[8].latency_s, peak


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--max-size", default="4MiB")
    args = parser.parse_args()
    mpi = mpi_mod.resolve("openmpi")
    engine.find(mpi)  # build outside the timed rounds if needed
    max_bytes = parse_size(args.max_size)
    sizes = netpipe_schedule(max_bytes, 3)
    ours, theirs = [], []
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        print(f"{'round':>5} {'tool':>10} {'8 B latency (us)':>17} {'peak bw (MB/s)':>15}")
        for i in range(args.rounds):
            for name, fn in (
                ("netpipe", lambda: netpipe_round(mpi, max_bytes, work)),
                ("commscope", lambda: commscope_round(mpi, sizes, work / "s.sqlite")),
            ):
                lat, peak = fn()
                (theirs if name == "netpipe" else ours).append((lat, peak))
                print(f"{i + 1:>5} {name:>10} {lat * 1e6:>17.3f} {peak / 1e6:>15.1f}", flush=True)
    lat_o = statistics.median(x for x, _ in ours)
    lat_t = statistics.median(x for x, _ in theirs)
    bw_o = statistics.median(y for _, y in ours)
    bw_t = statistics.median(y for _, y in theirs)
    print(f"median  commscope: 8 B latency {lat_o * 1e6:.3f} us, peak {bw_o / 1e6:.1f} MB/s")
    print(f"median    NetPIPE: 8 B latency {lat_t * 1e6:.3f} us, peak {bw_t / 1e6:.1f} MB/s")
    print(f"ratio commscope/NetPIPE: latency {lat_o / lat_t:.3f}, peak bandwidth {bw_o / bw_t:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
