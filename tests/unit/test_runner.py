"""Pure parts of the runner: engine argument lists and naming a lost rank."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

from commscope.data.record_parse import parse_record
from commscope.data.request import EngineOptions
from commscope.measure.exit_watch import ExitWatch
from commscope.measure.runner import engine_argv, lost_rank

HEADER = parse_record(
    '{"type":"header","schema_version":1,"engine_version":"0.1.0","mpi":{"library_version":"x",'
    '"standard":"3.1"},"nranks":2,"ranks":[{"rank":0,"node":"n0","node_index":0,"socket":0,'
    '"cpu":0,"pid":100},{"rank":1,"node":"n1","node_index":1,"socket":0,"cpu":0,"pid":200}],'
    '"timer":{"name":"tsc","resolution_s":1e-9,"overhead_s":1e-8},"pairs":[],"options":{},'
    '"started_unix":1.0}',
    "test",
)


def test_engine_argv_is_a_list_with_sizes_joined_and_skips_sorted():
    argv = engine_argv(
        "/x/commscope-engine",
        EngineOptions.from_json(
            {"ops": "pingpong", "sizes": [0, 8, 1024], "target_rse": 0.02, "pairs": None}
        ),
        {("pingpong", "intra-socket", 8), ("bw", "intra-socket", 0)},
    )
    assert argv[0] == "/x/commscope-engine"
    assert argv[argv.index("--sizes") + 1] == "0,8,1024"
    assert argv[argv.index("--target-rse") + 1] == "0.02"
    assert "--pairs" not in argv
    assert argv[argv.index("--skip") + 1] == "bw:intra-socket:0,pingpong:intra-socket:8"


def test_open_mpi_report_names_rank_pid_node_and_signal():
    text = "mpirun noticed that process rank 1 with PID 200 on node n1 exited on signal 9 (Killed)."
    assert lost_rank(text, HEADER) == "rank 1 (pid 200 on n1) was lost (signal 9)"


def test_hydra_report_is_mapped_from_pid_to_rank_with_the_header():
    text = (
        "=   BAD TERMINATION OF ONE OF YOUR APPLICATION PROCESSES\n"
        "=   PID 200 RUNNING AT n1\n=   EXIT CODE: 9\n"
        "YOUR APPLICATION TERMINATED WITH THE EXIT STRING: Killed (signal 9)"
    )
    assert lost_rank(text, HEADER) == "rank 1 (pid 200 on n1) was lost (signal 9)"


def test_the_rank_seen_to_end_first_wins_over_the_launchers_report():
    # hydra named rank 0, which it killed itself after rank 1 died
    text = (
        "=   PID 100 RUNNING AT n0\n=   EXIT CODE: 9\n"
        "YOUR APPLICATION TERMINATED WITH THE EXIT STRING: Killed (signal 9)"
    )
    assert lost_rank(text, HEADER, (1,)) == "rank 1 (pid 200 on n1) was lost (signal 9)"
    # two found ended at once: the first is unknown, the launcher's report stands
    assert lost_rank(text, HEADER, (0, 1)) == "rank 0 (pid 100 on n0) was lost (signal 9)"
    # a rank that stopped with the engine's own message ended first, for a reason it gave
    said = "commscope-engine: rank 0: contention level nic cannot be measured\n"
    assert lost_rank(said, HEADER, (0,)) == "rank 0: contention level nic cannot be measured"


def test_exit_watch_sees_which_process_ended_first():
    # Order, not speed: the others are alive (for minutes) until the watch has answered, so
    # however late a loaded machine wakes its thread, rank 1 is the only one it can find.
    procs = [subprocess.Popen(["sleep", "600"]) for _ in range(3)]
    other = subprocess.Popen(["cat"], stdin=subprocess.PIPE)  # not the engine: not watched
    try:
        # Popen returns after fork, maybe before exec: until then /proc shows python, not
        # sleep, and the watch rightly ignores it (the runner only watches after the header).
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not all(
            Path(f"/proc/{p.pid}/cmdline").read_bytes().startswith(b"sleep\0") for p in procs
        ):
            time.sleep(0.01)
        watch = ExitWatch({p.pid: rank for rank, p in enumerate(procs)} | {other.pid: 9}, "sleep")
        assert watch.first() == ()
        other.kill()
        other.wait()
        procs[1].kill()
        procs[1].wait()
        deadline = time.monotonic() + 120
        while not watch.first() and time.monotonic() < deadline:
            time.sleep(0.01)
        assert watch.first() == (1,)
        assert all(p.poll() is None for p in (procs[0], procs[2]))
        watch.stop()
    finally:
        for p in (*procs, other):
            p.kill()
            p.wait()


def test_engine_message_is_passed_through_and_unknown_failures_keep_the_last_line():
    assert (
        lost_rank("commscope-engine: rank 0: no inter-node pair in this allocation\n", HEADER)
        == "rank 0: no inter-node pair in this allocation"
    )
    assert lost_rank("=====\nsomething odd happened\n=====\n", None) == "something odd happened"
    assert lost_rank("", None) == "the job ended without its end record"
