"""A rank killed mid-run: the CLI names it, keeps every measured point, and resume finishes."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import time

import pytest

from commscope.data.store import Store
from tests.conftest import have_mpi, need

pytestmark = pytest.mark.mpi
SIZES = ",".join(str(2**k) for k in range(0, 21))  # 21 sizes x 2 ops: long enough to interrupt


def _stored_points(path) -> tuple[int, dict | None]:
    try:
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=5)
        try:
            n = db.execute("SELECT COUNT(*) FROM points").fetchone()[0]
            row = db.execute("SELECT header_json FROM runs ORDER BY id DESC LIMIT 1").fetchone()
        finally:
            db.close()
    except sqlite3.OperationalError:
        return 0, None
    return n, json.loads(row[0]) if row and row[0] else None


@pytest.mark.parametrize("family", ["openmpi", "mpich"])
def test_killed_rank_is_named_points_kept_and_resume_measures_only_the_rest(cli, family):
    need(have_mpi(family), f"{family} is not installed")
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
        "120",
    ]
    proc = subprocess.Popen(
        cli.argv(*args), env=cli.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    deadline = time.monotonic() + 60
    n, header = 0, None
    while time.monotonic() < deadline and (n < 3 or header is None):
        time.sleep(0.1)
        n, header = _stored_points(cli.store)
    assert n >= 3 and header, "the run never stored its first points"
    victim = header["ranks"][1]["pid"]
    os.kill(victim, signal.SIGKILL)
    started = time.monotonic()
    out, err = proc.communicate(timeout=120)
    assert proc.returncode != 0
    assert time.monotonic() - started < 60
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1, err
    assert "rank 1" in err and "commscope run --resume" in err

    with Store.open(cli.store) as store:
        run_id = store.resolve_run("latest")
        run = store.get_run(run_id)
        kept = store.measured_keys(run_id)
    assert run.status == "incomplete"
    assert len(kept) >= n  # nothing committed before the kill was lost
    assert "rank 1" in (run.message or "")

    resumed = cli("run", "--resume", str(run_id), "--json", check=True)
    assert json.loads(resumed.stdout)["status"] == "complete"
    with Store.open(cli.store) as store:
        run = store.get_run(run_id)
        segments = store.segments(run_id)
        final = store.measured_keys(run_id)
    assert run.status == "complete"
    assert len(final) == 2 * 21
    assert kept <= final
    assert len(segments) == 2
    assert segments[0].n_points == len(kept)
    assert segments[1].n_points == len(final) - len(kept)  # only the missing points re-measured
