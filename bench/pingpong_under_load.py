"""Ping-pong at 1 and 4 MiB, quiet and with a busy loop on one core: commscope, IMB and OSU.

Each round runs, quiet and then with a process spinning on one core (started just before and
killed just after each launch): commscope's ping-pong (the median of the samples no rank lost
its core in, and beside it, as "commscope-all", the median of every sample, the figure before
interrupted samples were left out), IMB-MPI1 PingPong (the mean of one timed block of
repetitions: 40 at 1 MiB, 10 at 4 MiB) and osu_latency (the mean of 100 timed round trips at
these sizes). For commscope it also prints how long one sample lasts, the share of samples that
took more than twice the point's fastest one and the share the engine found interrupted (a
rank switched out by the kernel). Not a test: it prints figures.

    flock /tmp/commscope-bench.lock .venv/bin/python bench/pingpong_under_load.py \\
        --peers ~/.cache/commscope-peers/openmpi [--rounds 3] [--sizes 1MiB,4MiB]

``--peers`` is a folder made by ``../shared/peers/build.sh DEST openmpi`` (osu/ and imb/).
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

from commscope.data.request import RunRequest
from commscope.data.store import Store
from commscope.measure import engine, runner
from commscope.measure import mpi as mpi_mod
from commscope.units import parse_size_list

BIND = ["-np", "2", "--bind-to", "core", "--map-by", "core"]


def commscope_run(
    store: Store, mpi: mpi_mod.MPIInstall, sizes: list[int], label: str
) -> dict[int, tuple[float, float, float, float, float, int]]:
    """Per size: bandwidth (B/s) at the kept and at the all-sample median, one sample's fastest
    wall time (s), the share of samples over twice that, the interrupted share, samples."""
    request = {
        "benchmark": "p2p",
        "mpi": mpi.choice,
        "np": 2,
        "launcher": "auto",
        "timeout_s": 600,
        "engine": {"ops": "pingpong", "sizes": sizes},
    }
    run_id = store.create_run("p2p", label, mpi.tag, mpi.launcher, 2, request)
    runner.run(store, run_id, RunRequest.from_json(request), mpi)
    out = {}
    for p in store.points(run_id):
        wall = 2 * p.iters_per_sample * np.asarray(p.samples_s)  # one sample's round trips
        every = p.bytes_per_sample / float(np.median(p.samples_s))
        out[p.bytes] = (
            p.bandwidth_Bps,
            every,
            float(wall.min()),
            float((wall > 2 * wall.min()).mean()),
            p.interrupted_share,
            p.n_samples,
        )
    return out


def imb_run(mpi: mpi_mod.MPIInstall, peers: Path, sizes: list[int]) -> dict[int, float]:
    """IMB-MPI1 PingPong: bytes/s per size (its Mbytes/sec column is 10^6 bytes/s)."""
    lo, hi = min(sizes).bit_length() - 1, max(sizes).bit_length() - 1
    text = subprocess.run(
        [mpi.launcher, *BIND, str(peers / "imb" / "IMB-MPI1"), "PingPong", "-msglog", f"{lo}:{hi}"],
        capture_output=True,
        text=True,
        check=True,
        timeout=600,
    ).stdout
    rows = re.findall(r"^\s+(\d+)\s+\d+\s+[\d.]+\s+([\d.]+)\s*$", text, re.M)
    return {int(m): float(mbs) * 1e6 for m, mbs in rows if int(m) in sizes}


def osu_run(mpi: mpi_mod.MPIInstall, peers: Path, sizes: list[int]) -> dict[int, float]:
    """osu_latency: bytes / one-way time per size."""
    exe = peers / "osu" / "c" / "mpi" / "pt2pt" / "standard" / "osu_latency"
    text = subprocess.run(
        [mpi.launcher, *BIND, str(exe), "-m", f"{min(sizes)}:{max(sizes)}"],
        capture_output=True,
        text=True,
        check=True,
        timeout=600,
    ).stdout
    rows = re.findall(r"^(\d+)\s+([\d.]+)\s*$", text, re.M)
    return {int(m): int(m) / (float(us) * 1e-6) for m, us in rows if int(m) in sizes}


class Hog:
    """A busy loop for the duration of a ``with`` block: none, on one cpu, or anywhere."""

    def __init__(self, on: bool, cpu: int | None) -> None:
        self.on, self.cpu = on, cpu
        self.proc: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> Hog:
        if self.on:
            self.proc = subprocess.Popen(["sh", "-c", "while :; do :; done"])
            if self.cpu is not None:
                os.sched_setaffinity(self.proc.pid, {self.cpu})
        return self

    def __exit__(self, *exc: object) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--peers", type=Path, required=True, help="folder with osu/ and imb/")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--sizes", default="1MiB,4MiB", help="powers of two")
    parser.add_argument("--mpi", default="openmpi")
    parser.add_argument(
        "--hog-cpu",
        default=str(sorted(os.sched_getaffinity(0))[1]),
        help="cpu the busy loop runs on, or 'any' to leave it to the scheduler"
        " [default: the second one, rank 1's]",
    )
    args = parser.parse_args()
    mpi = mpi_mod.resolve(args.mpi)
    if mpi.family != "openmpi":
        sys.exit("pingpong_under_load.py: the launcher flags here are Open MPI's")
    engine.find(mpi)
    sizes = parse_size_list(args.sizes)
    cpu = None if args.hog_cpu == "any" else int(args.hog_cpu)
    rows: dict[tuple[str, str, int], list[float]] = {}
    print(
        f"{'round':>5} {'load':>5} {'tool':>13} {'bytes':>8} {'GB/s':>6}  commscope: sample,"
        " share > 2x fastest, share interrupted, samples"
    )
    with tempfile.TemporaryDirectory() as tmp, Store.open(Path(tmp) / "s.sqlite") as store:
        for i in range(args.rounds):
            for load in ("quiet", "hog"):
                with Hog(load == "hog", cpu):
                    cs = commscope_run(store, mpi, sizes, f"{load} {i}")
                with Hog(load == "hog", cpu):
                    imb = imb_run(mpi, args.peers, sizes)
                with Hog(load == "hog", cpu):
                    osu = osu_run(mpi, args.peers, sizes)
                for m in sizes:
                    bw, every, wall, slow, hit, n = cs[m]
                    found = (
                        ("commscope", bw),
                        ("commscope-all", every),
                        ("IMB", imb.get(m)),
                        ("OSU", osu.get(m)),
                    )
                    for tool, value in found:
                        if value is None:
                            continue
                        rows.setdefault((load, tool, m), []).append(value)
                        extra = (
                            f"  {wall * 1e3:.3f} ms, {slow:.0%}, {hit:.0%}, {n}"
                            if tool == "commscope"
                            else ""
                        )
                        print(
                            f"{i + 1:>5} {load:>5} {tool:>13} {m:>8} {value / 1e9:>6.2f}{extra}",
                            flush=True,
                        )
    print(f"\nmedian (min-max) GB/s over {args.rounds} rounds; hog on cpu {args.hog_cpu}:")
    for (load, tool, m), xs in sorted(rows.items()):
        print(
            f"{load:>5} {tool:>13} {m:>8} {statistics.median(xs) / 1e9:6.2f} "
            f"({min(xs) / 1e9:.2f}-{max(xs) / 1e9:.2f})"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
