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
medians of the rounds and the goals (docs/peers.md) as PASS/MISS
lines. Peers are built once with ../shared/peers/build.sh into
~/.cache/commscope-peers/<mpi>. Not a test: it prints figures.

    flock /tmp/commscope-bench.lock .venv/bin/python bench/peers.py [--rounds 5] [--runs 8]
        [--mpi openmpi,mpich] [--quick]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
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

import commscope
from commscope.analysis import load as load_analysis
from commscope.analysis.coll import min_valid_of, summarize
from commscope.data.store import Store
from commscope.measure import launch
from commscope.measure import mpi as mpi_mod

TIMEOUT_S = 180.0
GRACE_S = 5.0  # a peer still running this long after its last line hangs in MPI_Finalize
BUILD_SCRIPT = Path(__file__).resolve().parents[2] / "shared" / "peers" / "build.sh"
OSU_PT2PT = Path("osu/c/mpi/pt2pt/standard")
OSU_A2A = Path("osu/c/mpi/collective/blocking/osu_alltoall")
IMB = Path("imb/IMB-MPI1")
# Words that name the OSU-like choice (one receive buffer reused) of a receive-buffer option.


@dataclass
class Setup:
    """What every invocation of one MPI needs."""

    mpi: mpi_mod.MPIInstall
    peers: Path
    workdir: Path
    store: Path
    commscope: list[str]
    env: dict[str, str]
    bw_args: list[str]


# ---------------------------------------------------------------- running commands


def run_cmd(
    argv: list[str],
    env: dict[str, str],
    done: re.Pattern[str] | None = None,
    timeout_s: float = TIMEOUT_S,
) -> Outcome:
    """Run argv in its own process group; return its wall time and output.

    When ``done`` matches the output so far and the job is still running GRACE_S later, it
    hangs in MPI_Finalize (MPICH 4.0 does): its group is killed and the outcome marked hung.
    """
    out: list[str] = []
    complete = threading.Event()
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        argv,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )

    def read() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            out.append(line)
            if done is not None and done.search("".join(out)):
                complete.set()

    err: list[str] = []
    readers = [
        threading.Thread(target=read, daemon=True),
        threading.Thread(target=lambda: err.extend(proc.stderr or []), daemon=True),
    ]
    for t in readers:
        t.start()
    verdict: dict[str, bool] = {}
    watchdog = threading.Thread(
        target=_watch, args=(proc, complete, timeout_s, verdict), daemon=True
    )
    watchdog.start()
    proc.wait()  # blocking, so the wall time ends when the job does
    wall = time.perf_counter() - t0
    for t in readers:
        t.join(timeout=5)
    text = "".join(out)
    if verdict.get("timeout"):
        return Outcome(wall, text, error=f"timed out after {timeout_s:.0f} s")
    if verdict.get("hung"):
        return Outcome(wall, text, hung=True)
    if proc.returncode != 0:
        tail = "".join(err).strip().splitlines()[-1:] or ["no stderr"]
        return Outcome(wall, text, error=f"exit {proc.returncode}: {tail[0][:120]}")
    return Outcome(wall, text)


def _watch(
    proc: subprocess.Popen[str],
    complete: threading.Event,
    timeout_s: float,
    verdict: dict[str, bool],
) -> None:
    """Kill proc's group on timeout, or GRACE_S after its output was complete."""
    deadline = time.monotonic() + timeout_s
    while proc.poll() is None:
        if complete.wait(timeout=0.2):
            try:
                proc.wait(timeout=GRACE_S)
                return
            except subprocess.TimeoutExpired:
                verdict["hung"] = True
                break
        if time.monotonic() > deadline:
            verdict["timeout"] = True
            break
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)  # the group this bench started for the job


@contextlib.contextmanager
def hog(cpu: int | None) -> Iterator[None]:
    """A busy loop pinned to ``cpu`` while the block runs (nothing when cpu is None)."""
    if cpu is None:
        yield
        return
    proc = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        os.sched_setaffinity(proc.pid, {cpu})
        yield
    finally:
        proc.kill()
        proc.wait()


# ---------------------------------------------------------------- setting up


def commscope_argv() -> list[str]:
    """The ``commscope`` script next to this Python, else ``python -m commscope``."""
    script = Path(sys.executable).with_name("commscope")
    return [str(script)] if script.exists() else [sys.executable, "-m", "commscope"]


def build_peers(mpi: str, script: Path) -> Path:
    """Build OSU and IMB for ``mpi`` once into the cache; return that folder."""
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    dest = cache / "commscope-peers" / mpi
    if not ((dest / OSU_PT2PT / "osu_latency").exists() and (dest / IMB).exists()):
        print(f"building OSU and IMB for {mpi} into {dest} (a few minutes)", flush=True)
        subprocess.run([str(script), str(dest), mpi], check=True, stdout=subprocess.DEVNULL)
    return dest


def recv_buffer_args(cs: list[str], env: dict[str, str]) -> tuple[list[str], str]:
    """commscope bw's receive-buffer option for OSU's policy, and a note saying so."""
    del cs, env  # the option exists in every version this bench runs against
    return ["--recv-buffers", "one"], "--recv-buffers one (one buffer reused, as osu_bw)"


def make_setup(
    choice: str, args: argparse.Namespace, tmp: Path, cs: list[str], bw_args: list[str]
) -> Setup:
    mpi = mpi_mod.resolve(choice)
    workdir = tmp / choice
    workdir.mkdir()
    env = dict(os.environ, **launch.root_env())
    return Setup(
        mpi, build_peers(choice, args.build_script), workdir, tmp / "store.sqlite", cs, env, bw_args
    )


# ---------------------------------------------------------------- one tool, one figure


def job(s: Setup, program: list[str]) -> list[str]:
    """The launch commscope itself would use for 2 ranks here (same binding)."""
    return launch.build_job(s.mpi, 2, program).argv


def commscope_run(s: Setup, args: list[str]) -> tuple[Outcome, int | None]:
    """Run ``commscope run ARGS --json``; return the outcome and the stored run id."""
    argv = [
        *s.commscope,
        "--store",
        str(s.store),
        "run",
        *args,
        "--mpi",
        s.mpi.choice,
        "--np",
        "2",
        "--json",
        "--quiet",
    ]
    o = run_cmd(argv, s.env)
    if o.error:
        return o, None
    run_id = int(json.loads(o.stdout)["run"])
    with Store.open(s.store) as store:
        message = store.get_run(run_id).message or ""
    o.hung = "killed after" in message  # commscope ended a job stuck in MPI_Finalize
    return o, run_id


def cs_p2p(s: Setup, op: str, size: int) -> tuple[Outcome, float, int | None]:
    """commscope one-size p2p: ping-pong one-way seconds, or bw bytes/s; and its window."""
    extra = s.bw_args if op == "bw" else []
    o, run_id = commscope_run(s, ["p2p", "--ops", op, "--sizes", str(size), *extra])
    if run_id is None:
        return o, math.nan, None
    with Store.open(s.store) as store:
        [point] = store.points(run_id)
    value = point.latency_s if op == "pingpong" else point.bandwidth_Bps
    return o, value, point.window


def cs_a2a(s: Setup, sync: str | None) -> A2ARun:
    """commscope Alltoall at 1 MiB, default window method or ``--sync barrier``."""
    o, run_id = commscope_run(
        s,
        [
            "coll",
            "--ops",
            "alltoall",
            "--sizes",
            str(A2A_SIZE),
            *(["--sync", sync] if sync else []),
        ],
    )
    if run_id is None:
        return A2ARun(math.nan, math.nan, ("failed",), o.wall_s)
    with Store.open(s.store) as store:
        [point] = store.colls(run_id)
        header = store.get_run(run_id).header or {}
        ends = [seg.end for seg in store.segments(run_id)]
    # The same summary `commscope show --json` prints, with the run's own minimum; a run-level
    # load warning (a rank waited for a CPU, others took the CPUs) flags it too.
    summary = summarize(point, min_valid=min_valid_of(header.get("options")))
    flags = summary.warnings + tuple(load_analysis.warnings(ends))
    return A2ARun(summary.time_s, summary.median_s, flags, o.wall_s)


def osu_value(o: Outcome, size: int) -> float:
    """The figure on OSU's line for ``size`` (us or MB/s), NaN when absent."""
    m = re.search(rf"^{size}\s+([\d.]+)\s*$", o.stdout, re.MULTILINE)
    return float(m.group(1)) if m else math.nan


def osu(s: Setup, program: Path, size: int) -> tuple[Outcome, float]:
    done = re.compile(rf"^{size}\s+[\d.]+\s*$", re.MULTILINE)
    o = run_cmd(job(s, [str(s.peers / program), "-m", f"{size}:{size}"]), s.env, done)
    return o, osu_value(o, size)


def imb_row(o: Outcome, size: int) -> dict[str, float]:
    """IMB's table row for ``size`` as {column: value}; empty when absent."""
    lines = o.stdout.splitlines()
    for i, line in enumerate(lines):
        if line.lstrip().startswith("#bytes"):
            names = line.split()
            for row in lines[i + 1 :]:
                cols = row.split()
                if cols and cols[0] == str(size):
                    return dict(zip(names, map(float, cols), strict=False))
    return {}


def imb(s: Setup, bench: str, size: int) -> tuple[Outcome, dict[str, float]]:
    lengths = s.workdir / f"len{size}"
    lengths.write_text(f"{size}\n")  # -msglen: exactly this size (-msglog adds 0 B)
    argv = [str(s.peers / IMB), bench, "-msglen", str(lengths), "-npmin", "2"]
    o = run_cmd(job(s, argv), s.env, re.compile("entering MPI_Finalize"))
    return o, imb_row(o, size)


def netpipe(s: Setup, size: int) -> tuple[Outcome, float]:
    """NPopenmpi at one size: its one-way time (column 3, the best of its trials)."""
    out = s.workdir / "np.out"
    out.unlink(missing_ok=True)
    argv = ["NPopenmpi", "-l", str(size), "-u", str(size), "-p", "0", "-o", str(out)]
    o = run_cmd(job(s, argv), s.env)
    rows = out.read_text().split() if out.exists() else []
    return o, float(rows[2]) if len(rows) >= 3 else math.nan


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
