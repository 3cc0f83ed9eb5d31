"""SIGTERM to `commscope run`: the MPI job dies with it, points stay, resume completes the run."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from commscope.data.store import Store
from commscope.errors import StoreError
from tests.conftest import have_mpi, need

pytestmark = pytest.mark.mpi
SIZES = ",".join(str(2**k) for k in range(0, 21))  # 21 sizes: long enough to interrupt
LAUNCHERS = (b"mpirun", b"mpiexec", b"orterun", b"hydra_pmi_proxy", b"prterun")


def _ticks_since_boot() -> int:
    """Now, in the clock ticks /proc/PID/stat gives a process's start time in."""
    uptime = float(Path("/proc/uptime").read_text().split()[0])
    return int(uptime * os.sysconf("SC_CLK_TCK"))


def _ours(store: Path, since: int, pgids: set[int]) -> list[str]:
    """Live processes this test's run left: any in the job's process groups, or an engine or
    launcher started since ``since`` with this test's store in its environment (an orphan
    that left the group). Zombies are dead; the init process reaps them in its own time.
    """
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
            stat = (entry / "stat").read_text()
            environ = (entry / "environ").read_bytes()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        state, pgid, started = fields[0], int(fields[2]), int(fields[19])
        if state == "Z" or started < since:
            continue
        argv = cmdline.split(b"\0")
        is_job = b"commscope-engine" in cmdline or os.path.basename(argv[0]) in LAUNCHERS
        orphan = is_job and f"COMMSCOPE_STORE={store}".encode() in environ.split(b"\0")
        if pgid in pgids or orphan:
            shown = b" ".join(argv).decode(errors="replace")
            found.append(f"{entry.name} ({state}): {shown}")
    return found


def _stored(path: Path) -> tuple[int, dict | None]:
    """Points of the newest run and its header, read through the store."""
    if not path.exists():
        return 0, None
    try:
        with Store.open(path) as store:
            runs = store.list_runs()
            return (runs[-1].n_points, runs[-1].header) if runs else (0, None)
    except StoreError:  # still being created
        return 0, None


@pytest.mark.parametrize("family", ["openmpi", "mpich"])
def test_sigterm_kills_the_job_keeps_the_points_and_resume_closes_every_segment(cli, family):
    need(have_mpi(family), f"{family} is not installed")
    since = _ticks_since_boot()
    args = [
        "run",
        "p2p",
        "--mpi",
        family,
        "--np",
        "2",
        "--sizes",
        SIZES,
        "--ops",
        "pingpong,bw",
        "--min-samples",
        "200",
        "--target-rse",
        "0.0001",
        "--point-budget",
        "0.3",
        "--timeout",
        "300",
        "--json",
    ]
    proc = subprocess.Popen(
        cli.argv("--store", str(cli.store), *args),
        env=cli.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 240  # the first run may build the engine
        n, header = 0, None
        while time.monotonic() < deadline and (n < 1 or header is None):
            assert proc.poll() is None, proc.communicate()
            time.sleep(0.1)
            n, header = _stored(cli.store)
        assert n >= 1 and header, "the run never stored its first point"
        ranks = [r["pid"] for r in header["ranks"]]
        pgids = {os.getpgid(pid) for pid in ranks}
        assert proc.pid not in pgids  # the job runs in a group of its own
        proc.send_signal(signal.SIGTERM)
        sent = time.monotonic()
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert time.monotonic() - sent < 30
    assert proc.returncode == 143, err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1, err
    assert lines[0].startswith("commscope run: interrupted by SIGTERM;")
    assert "commscope run --resume" in lines[0]
    assert "Traceback" not in err and out == ""

    left = _ours(cli.store, since, pgids)
    for _ in range(50):  # ranks killed a moment ago may still be on their way out
        if not left:
            break
        time.sleep(0.1)
        left = _ours(cli.store, since, pgids)
    assert left == [], "\n".join(left)

    with Store.open(cli.store) as store:
        run_id = store.resolve_run("latest")
        run = store.get_run(run_id)
        (segment,) = store.segments(run_id)
        kept = store.measured_keys(run_id)
    assert run.status == "incomplete" and (run.message or "").startswith("interrupted by SIGTERM")
    assert segment.status == "incomplete" and segment.ended_unix is not None
    assert len(kept) >= n  # every point committed before the signal is still there

    resumed = cli("run", "--resume", str(run_id), "--json", timeout=600, check=True)
    assert json.loads(resumed.stdout)["status"] == "complete"
    with Store.open(cli.store) as store:
        run = store.get_run(run_id)
        segments = store.segments(run_id)
        final = store.measured_keys(run_id)
    assert run.status == "complete"
    assert kept <= final and len(final) == 2 * 21
    assert [s.status for s in segments] == ["incomplete", "complete"]
    assert all(s.ended_unix is not None for s in segments)


def _interrupt_when_measuring(cli, *args: str) -> subprocess.CompletedProcess[str]:
    """Start ``commscope ARGS``, SIGTERM it once its newest run stored a point; its outcome."""
    before = len(_runs(cli.store))
    proc = subprocess.Popen(
        cli.argv("--store", str(cli.store), *args), env=cli.env, text=True,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 240  # the first run may build the engine
        while time.monotonic() < deadline:
            assert proc.poll() is None, proc.communicate()
            runs = _runs(cli.store)
            if len(runs) > before and runs[-1].n_points >= 1:
                break
            time.sleep(0.1)
        else:
            raise AssertionError("the run never stored its first point")
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def _runs(path: Path) -> list:
    if not path.exists():
        return []
    try:
        with Store.open(path) as store:
            return store.list_runs()
    except StoreError:  # still being created
        return []


def test_a_check_stopped_by_sigterm_tells_monitoring_unknown(cli, tmp_path):
    """Slurm's time limit ends a nightly check with SIGTERM: both exports say UNKNOWN, why."""
    from junitparser import JUnitXml
    from prometheus_client.parser import text_string_to_metric_families

    need(have_mpi("openmpi"), "openmpi is not installed")
    long_run = ("run", "p2p", "--mpi", "openmpi", "--np", "2", "--sizes", SIZES, "--ops",
                "pingpong", "--min-samples", "200", "--target-rse", "0.0001", "--point-budget",
                "0.3", "--json")  # fmt: skip
    first = _interrupt_when_measuring(cli, *long_run)
    assert first.returncode == 143, first.stderr
    cli("baseline", "create", "b", "latest", check=True)  # a partial run has figures
    prom, xml = tmp_path / "commscope.prom", tmp_path / "check.xml"
    prom.write_text('commscope_check_status{baseline="b"} 0\n')  # last night's OK
    out = _interrupt_when_measuring(
        cli, "check", "--baseline", "b", "--prometheus", str(prom), "--junit", str(xml)
    )
    assert out.returncode == 3 and "Traceback" not in out.stderr, out.stderr  # UNKNOWN
    families = {f.name: f for f in text_string_to_metric_families(prom.read_text())}
    assert families["commscope_check_status"].samples[0].value == 3
    (reason,) = families["commscope_check_unknown_info"].samples
    assert reason.labels["reason"] == "check interrupted by SIGTERM"
    (case,) = list(next(iter(JUnitXml.fromfile(str(xml)))))
    assert "interrupted by SIGTERM" in case.result[0].message
