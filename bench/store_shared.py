"""What a store on a shared filesystem costs a writer, next to a store on this machine's disk.

On a shared filesystem every write transaction and every read takes the store's lock file
(``data/store_lock``: create with O_EXCL, drop the cached pages, remove) and SQLite keeps a
rollback journal, not WAL (``data/store_file``). A run commits one point per transaction, so
that is the cost a nightly check pays. This writes ``--runs`` runs of ``--points`` collective
points each, run by run as a measurement does (create the run, a segment, each point, finish),
into a fresh store in each folder given:

- ``local``: a store under --local-dir (default: a temporary folder), WAL as always there;
- ``DIR``: a store in each --shared-dir, for instance an NFS home or an sshfs mount (caches
  off: ``sshfs HOST:DIR MNT -o dir_cache=no,attr_timeout=0,entry_timeout=0``), where
  commscope finds the shared filesystem and takes turns through the lock.

Prints, per folder, the filesystem's type, the median over ``--repeats`` of the time per
transaction, and the ratio to the local store.

    .venv/bin/python bench/store_shared.py --shared-dir /mnt/nfs/me [--runs 10] [--points 20]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from commscope.data import filesystem
from commscope.data.record_parse import record_from_dict
from commscope.data.records import Coll
from commscope.data.store import Store


def point(size: int) -> Coll:
    rec = record_from_dict(
        {
            "type": "coll",
            "op": "allreduce",
            "group": "world",
            "nranks": 4,
            "bytes": size,
            "root": None,
            "method": "window",
            "times_s": [1e-5 * (1 + i / 100) for i in range(40)],
            "flags": [0] * 40,
            "stage": [1] * 40,
            "stop": "rule_b",
        },
        "bench",
    )
    assert isinstance(rec, Coll)
    return rec


def write(path: Path, runs: int, points: int) -> float:
    """Seconds per transaction to write ``runs`` runs of ``points`` points into ``path``."""
    records = [point(8 * (i + 1)) for i in range(points)]
    start = time.perf_counter()
    for i in range(runs):
        with Store.open(path) as store:
            run = store.create_run("coll", f"bench {i}", "bench", "none", 4, {})
            seg = store.start_segment(run, ["bench"])
            for rec in records:
                store.add_point(run, seg, rec)
            store.finish_segment(seg, "complete")
            store.set_run_status(run, "complete")
    return (time.perf_counter() - start) / (runs * (points + 4))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--local-dir", type=Path, help="a folder on this machine's disk")
    parser.add_argument("--shared-dir", type=Path, action="append", default=[])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--points", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    local = args.local_dir or Path(tempfile.mkdtemp(prefix="store-shared-"))
    folders = [("local", local), *((str(d), d) for d in args.shared_dir)]
    print(f"{args.runs} runs x ({args.points} points + 4) transactions, {args.repeats} repeats")
    base = None
    for name, folder in folders:
        times = []
        for repeat in range(args.repeats):
            work = folder / f"store-shared-bench-{repeat}"
            work.mkdir(parents=True, exist_ok=True)
            try:
                times.append(write(work / "store.sqlite", args.runs, args.points))
            finally:
                shutil.rmtree(work, ignore_errors=True)
        fstype = filesystem.shared_type(folder / "x") or "local"
        per = statistics.median(times)
        base = base or per
        print(
            f"{name:40s} {fstype:12s} {per * 1e3:8.2f} ms/transaction"
            f" (min {min(times) * 1e3:.2f})  x{per / base:.1f}"
        )


if __name__ == "__main__":
    main()
