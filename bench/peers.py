"""commscope beside OSU 7.4, IMB-MPI1 and NetPIPE on this node, round by round, for each MPI.

Each round, for Open MPI and MPICH (2 ranks, this node), runs commscope, then OSU, then IMB,
then NetPIPE (NPopenmpi, Open MPI only), one size per invocation:

- one-way latency at 0 and 8 B (commscope ``run p2p --ops pingpong``, osu_latency, IMB
  PingPong t[usec], NetPIPE's one-way time: its best trial; OSU and NetPIPE have no 0 B point);
- bandwidth at 1 and 4 MiB (commscope ``bw``, osu_bw, IMB Uniband: a window of Isends like
  osu_bw's, where IMB's PingPong rate would be a ping-pong's);
- MPI_Alltoall at 1 MiB, ``--runs`` independent runs quiet and as many with a busy loop on one
  core, interleaved (commscope's window method and ``--sync barrier``, osu_alltoall's Avg
  Latency, IMB Alltoall's t_avg): the mean and the run-to-run CV (std / mean) of each;
- the wall time of each invocation: the whole command, Python's start-up included for commscope.

Then per-round ratios (latency: commscope / min(OSU, IMB); bandwidth: commscope / osu_bw), the
medians of the rounds and the goals (docs/validation/peers.md) as PASS/MISS
lines. Peers are built once with ../shared/peers/build.sh into
~/.cache/commscope-peers/<mpi>. Not a test: it prints figures.

    flock /tmp/commscope-bench.lock .venv/bin/python bench/peers.py [--rounds 5] [--runs 8]
        [--mpi openmpi,mpich] [--quick]
"""

from __future__ import annotations

import argparse
import math
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import peers_mbw
import peers_rma
from peers_figures import (
    A2A_SIZE,
    BW_SIZES,
    LAT_SIZES,
    LOADS,
    TOOLS,
    A2ARun,
    Cell,
    Outcome,
    cell_rows,
    check_targets,
    print_header,
    print_notes,
    print_rows,
    round_ratios,
    summarize_rounds,
)
from peers_run import (
    BUILD_SCRIPT,
    OSU_A2A,
    OSU_PT2PT,
    Setup,
    commscope_argv,
    commscope_run,
    cs_a2a,
    cs_p2p,
    hog,
    imb,
    job,
    make_setup,
    netpipe,
    osu,
    recv_buffer_args,
)

import commscope

# ---------------------------------------------------------------- one round


def note(cell: Cell, name: str, o: Outcome) -> None:
    """Keep an invocation's wall time (not when it hung or failed) and its trouble."""
    if o.error:
        cell.errors.append(f"{name}: {o.error}")
    elif o.hung:
        cell.hung += 1
    else:
        cell.wall[name] = o.wall_s


def p2p_round(s: Setup, has_netpipe: bool) -> dict[str, Cell]:
    cells = {t: Cell() for t in TOOLS}
    c = cells["commscope"]
    for size in LAT_SIZES:
        o, c.lat[size], _ = cs_p2p(s, "pingpong", size)
        note(c, f"lat{size}", o)
    for size in BW_SIZES:
        o, c.bw[size], window = cs_p2p(s, "bw", size)
        c.window[size] = window or 0
        note(c, f"bw{size}", o)
    c = cells["osu"]
    o, t_us = osu(s, OSU_PT2PT / "osu_latency", 8)  # OSU has no 0 B point
    c.lat[8] = t_us * 1e-6
    note(c, "lat8", o)
    for size in BW_SIZES:
        o, mbs = osu(s, OSU_PT2PT / "osu_bw", size)
        c.bw[size] = mbs * 1e6
        note(c, f"bw{size}", o)
    c = cells["imb"]
    for size in LAT_SIZES:
        o, row = imb(s, "PingPong", size)
        c.lat[size] = row.get("t[usec]", math.nan) * 1e-6
        note(c, f"lat{size}", o)
    for size in BW_SIZES:
        o, row = imb(s, "Uniband", size)
        c.bw[size] = row.get("Mbytes/sec", math.nan) * 1e6  # IMB's MB is 10^6 bytes
        note(c, f"bw{size}", o)
    if has_netpipe and s.mpi.family == "openmpi":
        c = cells["netpipe"]
        o, c.lat[8] = netpipe(s, 8)  # NetPIPE refuses sizes below 1 byte
        note(c, "lat8", o)
    return cells


def peer_a2a(o: Outcome, value: float) -> A2ARun:
    return A2ARun(value, value, ("failed",) if o.error else (), o.wall_s)


def a2a_round(s: Setup, cells: dict[str, Cell], runs: int, cpu: int) -> None:
    """``runs`` Alltoall runs per tool, quiet and with a hog on ``cpu``, interleaved."""
    steps: list[tuple[str, Callable[[], A2ARun]]] = [
        ("commscope", lambda: cs_a2a(s, None)),
        ("cs barrier", lambda: cs_a2a(s, "barrier")),
        ("osu", lambda: peer_a2a(*_osu_a2a(s))),
        ("imb", lambda: peer_a2a(*_imb_a2a(s))),
    ]
    for _ in range(runs):
        for load in LOADS:
            with hog(cpu if load == "hog" else None):
                for tool, fn in steps:
                    cells[tool].a2a[load].append(fn())


def _osu_a2a(s: Setup) -> tuple[Outcome, float]:
    o, t_us = osu(s, OSU_A2A, A2A_SIZE)
    return o, t_us * 1e-6


def _imb_a2a(s: Setup) -> tuple[Outcome, float]:
    o, row = imb(s, "Alltoall", A2A_SIZE)
    return o, row.get("t_avg[usec]", math.nan) * 1e-6


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--rounds", type=int, default=5, help="rounds (5: 7-11 minutes on this 2-core machine)"
    )
    parser.add_argument(
        "--runs",
        type=int,
        default=8,
        help="Alltoall runs per tool and load in each round (CV over these)",
    )
    parser.add_argument("--mpi", default="openmpi,mpich")
    parser.add_argument(
        "--quick",
        action="store_true",
        help="one round of 3 Alltoall runs: a smoke check, not figures",
    )
    parser.add_argument("--build-script", type=Path, default=BUILD_SCRIPT)
    args = parser.parse_args()
    if args.quick:
        args.rounds, args.runs = 1, 3
    return args


def warm_up(s: Setup, has_netpipe: bool) -> None:
    """One untimed pass: builds commscope's engine, pages every binary and MPI in."""
    cs_p2p(s, "pingpong", 8)
    osu(s, OSU_PT2PT / "osu_latency", 8)
    imb(s, "PingPong", 8)
    if has_netpipe and s.mpi.family == "openmpi":
        netpipe(s, 8)


def describe(setups: dict[str, Setup], bw_note: str, has_netpipe: bool, cpu: int) -> None:
    s0 = next(iter(setups.values()))
    print(
        f"commscope {commscope.__version__} from {Path(commscope.__file__).parent}: "
        f"{' '.join(s0.commscope)}"
    )
    for name, s in setups.items():
        print(f"{name}: {s.mpi.tag}, peers in {s.peers}; launch: {' '.join(job(s, ['PROGRAM']))}")
    print(f"commscope bw receive buffers: {bw_note}")
    print(
        "bandwidth peers: osu_bw and IMB Uniband (both a window of Isends); latency: "
        "osu_latency, IMB PingPong t[usec], NetPIPE's best trial"
    )
    print(
        "Alltoall: commscope T (trimmed mean of valid launches), osu_alltoall Avg Latency, "
        f"IMB t_avg; hog: a busy loop on cpu {cpu}"
    )
    if sys.dont_write_bytecode:
        print(
            "note: PYTHONDONTWRITEBYTECODE is set: commscope's sources without a cached .pyc "
            "are compiled at every start, which its wall times include"
        )
    if not has_netpipe:
        print("NetPIPE: NPopenmpi not found (apt-get install netpipe-openmpi): left out")
    elif "mpich" in setups:
        print("NetPIPE: NPopenmpi is built for Open MPI only: no MPICH row")
    print()


def main() -> int:
    args = parse_args()
    mpis = [m.strip() for m in args.mpi.split(",") if m.strip()]
    cpu = min(os.sched_getaffinity(0))
    has_netpipe = shutil.which("NPopenmpi") is not None
    cs = commscope_argv()
    t_start = time.monotonic()
    rounds: list[dict[str, dict[str, Cell]]] = []
    with tempfile.TemporaryDirectory(prefix="commscope-peers-") as tmp:
        bw_args, bw_note = recv_buffer_args(cs, dict(os.environ))
        setups = {m: make_setup(m, args, Path(tmp), cs, bw_args) for m in mpis}
        describe(setups, bw_note, has_netpipe, cpu)
        for s in setups.values():
            warm_up(s, has_netpipe)
        print_header()
        for r in range(args.rounds):
            rounds.append({})
            for mpi, s in setups.items():
                cells = p2p_round(s, has_netpipe)
                a2a_round(s, cells, args.runs, cpu)
                rounds[-1][mpi] = cells
                print_rows(str(r + 1), mpi, cell_rows(cells), round_ratios(cells))
                print_notes(str(r + 1), mpi, cells)
        peers_rma.rounds(setups, args.rounds, commscope_run, osu)  # one-sided put latency
    summarize_rounds(rounds, mpis)
    check_targets(rounds, mpis)
    print(
        f"\n{args.rounds} round(s), {args.runs} Alltoall runs per tool and load, "
        f"{time.monotonic() - t_start:.0f} s in all"
    )
    # Multi-pair bandwidth beside osu_mbw_mr: its own module, the same MPIs and rounds.
    peers_mbw.compare(mpis, args.rounds, [1, 2], [8, 4096, 1 << 20], 64)
    return 0


if __name__ == "__main__":
    sys.exit(main())
