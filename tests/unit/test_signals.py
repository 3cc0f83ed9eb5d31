"""SIGTERM and SIGHUP end a command as Ctrl-C does; resuming closes what a killed run left open."""

from __future__ import annotations

import json
import signal
import time
import types
from pathlib import Path

import pytest

from commscope import cli
from commscope.cli import runs_cmd
from commscope.data.request import RunRequest
from commscope.data.store import Store
from commscope.errors import Interrupted, interrupt_cause
from commscope.jobs import runs
from commscope.measure import launch, runner
from commscope.measure.mpi import MPIInstall
from tests import synthetic_runs

MPI = MPIInstall("openmpi", "openmpi", "4.1.4", "/usr/bin/mpicc", "/usr/bin/mpirun")


def _command(monkeypatch: pytest.MonkeyPatch, body) -> None:
    """Make `commscope runs` run ``body(args)`` instead."""
    monkeypatch.setattr(runs_cmd, "run", body)


@pytest.fixture
def foreground_signals():
    """The dispositions a command started from an interactive shell has.

    Run under nohup or as a background job of a script, pytest inherits SIGHUP or SIGINT
    ignored, and commscope rightly keeps an ignored signal ignored: the tests that send one
    set what a terminal user has, and put back what they found.
    """
    found = {sig: signal.getsignal(sig) for sig in cli.TERMINATING}
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGHUP, signal.SIG_DFL)
    yield
    for sig, handler in found.items():
        signal.signal(sig, handler)


def _signal_this_thread(sig: signal.Signals) -> None:
    """Deliver ``sig`` to the calling (main) thread and wait for its handler to act.

    raise_signal, not os.kill: a signal sent to the process may go to another of its threads,
    and on a busy machine arrive only after the main thread is blocked, where pause() would
    then wait forever. The wait is bounded: a handler that does not raise fails the test.
    """
    signal.raise_signal(sig)
    time.sleep(30)


def test_interrupted_names_the_signal_and_its_exit_status():
    err = Interrupted(signal.SIGTERM)
    assert isinstance(err, KeyboardInterrupt)
    assert str(err) == "interrupted by SIGTERM" and err.exit_code == 143
    assert Interrupted(signal.SIGHUP).exit_code == 129
    assert interrupt_cause(err) == "interrupted by SIGTERM"
    assert interrupt_cause(KeyboardInterrupt()) == "interrupted"


@pytest.mark.parametrize(
    ("sig", "status"), [(signal.SIGTERM, 143), (signal.SIGHUP, 129), (signal.SIGINT, 130)]
)
def test_a_signal_ends_the_command_with_one_line_and_128_plus_signum(
    monkeypatch, capsys, tmp_path, sig, status, foreground_signals
):
    before = {s: signal.getsignal(s) for s in cli.TERMINATING}
    cleaned = []

    def body(args):
        try:
            _signal_this_thread(sig)  # the handler raises before this returns
        finally:
            cleaned.append(True)
        return 0

    _command(monkeypatch, body)
    assert cli.main(["--store", str(tmp_path / "s.sqlite"), "runs"]) == status
    lines = capsys.readouterr().err.splitlines()
    assert lines == [f"commscope runs: interrupted by {signal.Signals(sig).name}"]
    assert cleaned == [True]
    assert {s: signal.getsignal(s) for s in cli.TERMINATING} == before


def test_a_second_signal_does_not_cut_the_cleanup_short(
    monkeypatch, capsys, tmp_path, foreground_signals
):
    steps = []

    def body(args):
        try:
            _signal_this_thread(signal.SIGTERM)
        finally:
            signal.raise_signal(signal.SIGTERM)  # e.g. an impatient supervisor
            steps.append("cleanup finished")
        return 0

    _command(monkeypatch, body)
    assert cli.main(["--store", str(tmp_path / "s.sqlite"), "runs"]) == 143
    assert steps == ["cleanup finished"]
    assert len(capsys.readouterr().err.splitlines()) == 1


def test_an_ignored_signal_stays_ignored(monkeypatch, tmp_path):
    previous = signal.signal(signal.SIGHUP, signal.SIG_IGN)
    seen = []
    try:
        _command(monkeypatch, lambda args: seen.append(signal.getsignal(signal.SIGHUP)) or 0)
        assert cli.main(["--store", str(tmp_path / "s.sqlite"), "runs"]) == 0
    finally:
        signal.signal(signal.SIGHUP, previous)
    assert seen == [signal.SIG_IGN]


def _fake_engine(monkeypatch: pytest.MonkeyPatch, interrupt_after: int | None) -> list[str]:
    """Replace the engine and launcher: a header, then points, then SIGTERM or the end."""
    header = synthetic_runs.header()
    points = synthetic_runs.points("intra-socket", (0, 1))[:5]
    lines = [json.dumps(header.raw)] + [json.dumps(p.raw) for p in points]
    monkeypatch.setattr(
        runner.engine, "find", lambda mpi: types.SimpleNamespace(path=Path("/x/commscope-engine"))
    )

    def streaming(job, on_line, timeout_s, **kwargs):
        for k, line in enumerate(lines):
            if interrupt_after is not None and k == interrupt_after + 1:
                raise Interrupted(signal.SIGTERM)
            on_line(line)
        on_line(json.dumps({"type": "end", "elapsed_s": 1.0, "points": len(points)}))
        return launch.JobResult(0, "", False)

    monkeypatch.setattr(runner.launch, "run_streaming", streaming)
    return lines


def _request() -> dict:
    sizes = sorted({p.bytes for p in synthetic_runs.points("intra-socket", (0, 1))[:5]})
    return {
        "benchmark": "p2p",
        "np": 4,
        "launcher": "auto",
        "timeout_s": 60,
        "engine": {"ops": "pingpong", "sizes": sizes, "pairs": "auto"},
    }


def test_sigterm_marks_the_segment_and_run_incomplete_and_keeps_points(tmp_path, monkeypatch):
    _fake_engine(monkeypatch, interrupt_after=3)
    with Store.open(tmp_path / "s.sqlite") as store:
        run_id = store.create_run("p2p", None, "openmpi-4.1.4", "mpirun", 4, _request())
        with pytest.raises(Interrupted) as err:
            runner.run(store, run_id, RunRequest.from_json(_request()), MPI)
        run = store.get_run(run_id)
        (segment,) = store.segments(run_id)
    assert run.status == "incomplete" and run.n_points == 3
    assert run.message.startswith("interrupted by SIGTERM; 3 new points stored (3 in run 1)")
    assert f"'commscope run --resume {run_id}'" in run.message
    assert segment.status == "incomplete" and segment.message == run.message
    assert segment.ended_unix is not None
    assert str(err.value) == run.message  # what the CLI prints


def test_resume_closes_a_segment_left_running(tmp_path):
    path = tmp_path / "s.sqlite"
    with Store.open(path) as store:
        run_id = store.create_run("p2p", None, "openmpi-4.1.4", "mpirun", 4, _request())
        killed = store.start_segment(run_id, ["mpirun"])  # its process was SIGKILLed
        store.set_run_status(run_id, "incomplete", "interrupted")
        done = store.start_segment(run_id, ["mpirun"])
        store.finish_segment(done, "incomplete", "lost rank 1")
        assert runs.resumable_request(store, str(run_id))[0] == run_id
        segments = {s.id: s for s in store.segments(run_id)}
    assert segments[killed].status == "incomplete" and segments[killed].ended_unix
    assert "closed when the run was resumed" in segments[killed].message
    assert segments[done].message == "lost rank 1"  # closed segments are left as they were
