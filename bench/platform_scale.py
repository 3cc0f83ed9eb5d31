"""Time and peak memory of writing a SimGrid platform from a cluster model, at 1k and 10k nodes.

Target (issue 53): a 10,000-node fat-tree platform is written in <= 5 s and <= 1 GB. Each
case runs in a fresh child process: it reads the model (``model_from_dict``, as ``simulate
run`` does), writes the platform (``platform_xml``) to a file, and reports its wall time, the
Python heap's peak (tracemalloc) and the process's peak resident memory above what it held
after imports. Then SimGrid itself loads the file (a small C program, tests/simgrid/
route_latency.c, built with cc -lsimgrid when SimGrid's headers are here): its wall time and
peak resident memory, for scale. Flat models, dragonflies and tori are shown beside the fat
trees; a listed-switches model is not (N^2 routes, at most 256 nodes).

    flock /tmp/commscope-bench.lock .venv/bin/python bench/platform_scale.py [--no-simgrid]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

NIC = {"nic": {"bandwidth": "12.5GB/s", "latency": "1us"}}
CASES: list[tuple[str, dict[str, Any]]] = [
    ("fat tree 1k", {"topology": {"kind": "fat_tree", "down": [20, 50], "up": [1, 10]}}),
    (
        "fat tree 10k",
        {"topology": {"kind": "fat_tree", "down": [25, 20, 20], "up": [1, 10, 10]}},
    ),
    ("flat 1k", {"nodes": 1000}),
    ("flat 10k", {"nodes": 10_000}),
    (
        "dragonfly 1k",
        {
            "topology": {
                "kind": "dragonfly",
                "groups": 8,
                "chassis": 4,
                "routers": 8,
                "nodes_per_router": 4,
            }
        },
    ),
    (
        "dragonfly 9k",
        {
            "topology": {
                "kind": "dragonfly",
                "groups": 16,
                "chassis": 6,
                "routers": 16,
                "nodes_per_router": 6,
            }
        },
    ),
    ("torus 1k", {"topology": {"kind": "torus", "dims": [10, 10, 10]}}),
    ("torus 10k", {"topology": {"kind": "torus", "dims": [10, 20, 50]}}),
]


def child(doc: dict[str, Any], out: str) -> None:
    """Write one platform; print JSON figures (in the child process)."""
    import tracemalloc

    from commscope.predict.model_yaml import model_from_dict
    from commscope.simulate.params import params_for
    from commscope.simulate.platform import platform_xml

    base_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    tracemalloc.start()
    start = time.perf_counter()
    model = model_from_dict({"sockets": 2, "cores": 8, "channels": NIC, **doc}, "bench")
    text = platform_xml(model, params_for(model))
    Path(out).write_text(text, "utf-8")
    wall = time.perf_counter() - start
    heap = tracemalloc.get_traced_memory()[1]
    rss_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - base_kb
    print(
        json.dumps(
            {
                "nodes": model.nodes,
                "s": wall,
                "heap": heap,
                "rss": rss_kb * 1024,
                "bytes": len(text),
            }
        )
    )


def simgrid_loader(tmp: Path) -> Path | None:
    """The route printer, built; None without cc or SimGrid."""
    source = Path(__file__).resolve().parent.parent / "tests" / "simgrid" / "route_latency.c"
    if not shutil.which("cc") or not Path("/usr/include/simgrid/engine.h").exists():
        return None
    out = tmp / "route_latency"
    done = subprocess.run(["cc", "-O1", "-o", str(out), str(source), "-lsimgrid"], check=False)
    return out if done.returncode == 0 else None


def simgrid_load(loader: Path, platform: Path) -> tuple[float, float]:
    """Wall seconds and peak resident bytes of SimGrid loading ``platform``."""
    start = time.perf_counter()
    proc = subprocess.Popen(
        [str(loader), str(platform), "1", "--log=root.thres:critical"],
        stdout=subprocess.DEVNULL,
    )
    _, status, usage = os.wait4(proc.pid, 0)
    if status != 0:
        raise SystemExit(f"SimGrid could not load {platform} (status {status})")
    return time.perf_counter() - start, usage.ru_maxrss * 1024.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-simgrid", action="store_true", help="only write the platforms")
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(json.loads(args.child[0]), args.child[1])
        return
    with tempfile.TemporaryDirectory() as tmp_dir:
        tmp = Path(tmp_dir)
        loader = None if args.no_simgrid else simgrid_loader(tmp)
        print(
            f"{'model':<14} {'nodes':>6} {'write s':>8} {'heap MB':>8} {'RSS+ MB':>8}"
            f" {'file MB':>8} {'SimGrid s':>10} {'SimGrid MB':>11}"
        )
        for name, doc in CASES:
            out = tmp / "platform.xml"
            done = subprocess.run(
                [sys.executable, __file__, "--child", json.dumps(doc), str(out)],
                capture_output=True,
                text=True,
                check=True,
            )
            r = json.loads(done.stdout)
            sg = simgrid_load(loader, out) if loader else None
            sg_text = f"{sg[0]:>10.2f} {sg[1] / 1e6:>11.0f}" if sg else f"{'-':>10} {'-':>11}"
            print(
                f"{name:<14} {r['nodes']:>6} {r['s']:>8.3f} {r['heap'] / 1e6:>8.1f}"
                f" {r['rss'] / 1e6:>8.1f} {r['bytes'] / 1e6:>8.2f} {sg_text}"
            )


if __name__ == "__main__":
    main()
