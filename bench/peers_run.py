"""How bench/peers.py runs each program: commscope, OSU, IMB and NetPIPE, one figure per call.

Commands run with a watchdog (a peer that hangs in MPI_Finalize after its last line is ended),
peers are built once with ../shared/peers/build.sh, and each tool's output is read here.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from peers_figures import A2A_SIZE, A2ARun, Outcome

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
