"""bw and bibw with one receive buffer and one per message: commscope beside osu_bw/osu_bibw.

Each round runs commscope's bw and bibw with ``--recv-buffers one,each`` (both series in one
launch, alternating size by size), then osu_bw and osu_bibw with ``-b single`` and
``-b multiple`` (their receive-buffer choices), at the same sizes. Prints every round, then
the median and range of each over the rounds, in GB/s (10^9 bytes/s). Not a test.

    flock /tmp/commscope-bench.lock .venv/bin/python bench/bw_recv_buffers.py \\
        --peers ~/.cache/commscope-peers/openmpi [--rounds 3] [--sizes 1MiB,4MiB]

``--peers`` is a folder made by ``../shared/peers/build.sh DEST openmpi`` (osu/ and imb/).
"""

from __future__ import annotations

import argparse
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from commscope.data.request import RunRequest
from commscope.data.store import Store
from commscope.measure import engine, runner
from commscope.measure import mpi as mpi_mod
from commscope.units import parse_size_list

BIND = ["-np", "2", "--bind-to", "core", "--map-by", "core"]


def commscope_run(
    store: Store, mpi: mpi_mod.MPIInstall, sizes: list[int]
) -> dict[tuple[str, int], float]:
    """(series, bytes) -> median bandwidth of one message, for bw, bw_each, bibw, bibw_each."""
    request = {
        "benchmark": "p2p",
        "mpi": mpi.choice,
        "np": 2,
        "launcher": "auto",
        "timeout_s": 600,
        "engine": {"ops": "bw,bibw", "sizes": sizes, "recv_buffers": "one,each"},
    }
    run_id = store.create_run("p2p", "recv buffers", mpi.tag, mpi.launcher, 2, request)
    runner.run(store, run_id, RunRequest.from_json(request), mpi)
    return {(p.op, p.bytes): p.bandwidth_Bps for p in store.points(run_id)}


def osu_run(
    mpi: mpi_mod.MPIInstall, peers: Path, test: str, buffers: str, sizes: list[int]
) -> dict[int, float]:
    """osu_bw or osu_bibw with ``-b buffers``: bytes/s per size (its MB/s are 10^6 bytes/s)."""
    exe = peers / "osu" / "c" / "mpi" / "pt2pt" / "standard" / test
    text = subprocess.run(
        [mpi.launcher, *BIND, str(exe), "-m", f"{min(sizes)}:{max(sizes)}", "-b", buffers],
        capture_output=True,
        text=True,
        check=True,
        timeout=600,
    ).stdout
    rows = re.findall(r"^(\d+)\s+([\d.]+)\s*$", text, re.M)
    return {int(m): float(mbs) * 1e6 for m, mbs in rows if int(m) in sizes}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--peers", type=Path, required=True, help="folder with osu/")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--sizes", default="1MiB,4MiB")
    parser.add_argument("--mpi", default="openmpi")
    args = parser.parse_args()
    mpi = mpi_mod.resolve(args.mpi)
    if mpi.family != "openmpi":
        sys.exit("bw_recv_buffers.py: the launcher flags here are Open MPI's")
    engine.find(mpi)
    sizes = parse_size_list(args.sizes)
    rows: dict[tuple[str, int], list[float]] = {}
    with tempfile.TemporaryDirectory() as tmp, Store.open(Path(tmp) / "s.sqlite") as store:
        for i in range(args.rounds):
            found = {
                (f"commscope {op}", m): v for (op, m), v in commscope_run(store, mpi, sizes).items()
            }
            for test in ("osu_bw", "osu_bibw"):
                for buffers in ("single", "multiple"):
                    for m, v in osu_run(mpi, args.peers, test, buffers, sizes).items():
                        found[(f"{test} -b {buffers}", m)] = v
            for (name, m), v in sorted(found.items()):
                rows.setdefault((name, m), []).append(v)
                print(f"{i + 1:>3} {name:>26} {m:>8} {v / 1e9:6.2f} GB/s", flush=True)
    print(f"\nmedian (min-max) GB/s over {args.rounds} rounds:")
    for (name, m), xs in sorted(rows.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        print(
            f"{name:>26} {m:>8} {statistics.median(xs) / 1e9:6.2f} "
            f"({min(xs) / 1e9:.2f}-{max(xs) / 1e9:.2f})"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
