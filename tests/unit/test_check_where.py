"""Where a check runs, without Slurm: one check of a baseline at a time, a run of part of the
baseline's hosts judged on them, and `run`'s Slurm options refused where they cannot apply.

The same with the virtual cluster's real Slurm: tests/cluster/test_check_where_slurm.py.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from commscope.errors import CommscopeError
from commscope.jobs import check_lock
from commscope.status import OK, UNKNOWN
from tests.synthetic_checks import store_run
from tests.unit.test_check import unknown_exports


@pytest.fixture
def base(cli: Any) -> Any:
    """A store with a baseline 'nightly' of three runs on n0 and n1."""
    runs = [store_run(cli.store, seed) for seed in (1, 2, 3)]
    cli("baseline", "create", "nightly", *map(str, runs), check=True)
    return cli


def test_a_second_check_of_a_baseline_is_refused_naming_the_first(tmp_path: Path) -> None:
    store = str(tmp_path / "store.sqlite")
    with check_lock.held(store, "nightly", 60.0) as path:
        assert path == tmp_path / "store.sqlite.check-nightly.lock"
        mine = json.loads(path.read_text())
        assert mine["pid"] == os.getpid() and mine["host"] == socket.gethostname()
        with pytest.raises(CommscopeError) as err, check_lock.held(store, "nightly", 60.0):
            pass
        since = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(mine["since_unix"]))
        assert str(err.value) == (
            f"check of baseline nightly already running (pid {os.getpid()} on"
            f" {socket.gethostname()} since {since}); wait for it to end"
        )
        with check_lock.held(store, "weekly", 60.0):  # another baseline: its own lock
            pass
    assert not path.exists()
    with check_lock.held(store, "nightly", 60.0):  # released: the next check takes it
        pass


def _lock(path: Path, pid: int, host: str, since: float, until: float) -> None:
    holder = {"pid": pid, "host": host, "since_unix": since, "until_unix": until}
    path.write_text(json.dumps(holder))


def test_a_lock_whose_holder_is_gone_is_taken_over(tmp_path: Path) -> None:
    store = str(tmp_path / "s.sqlite")
    path = check_lock.path_for(store, "nightly")
    ended = subprocess.Popen(["true"])  # a pid that is gone once waited for
    ended.wait()
    pid = ended.pid
    now = time.time()
    _lock(path, pid, socket.gethostname(), now - 10, now + 3600)
    with check_lock.held(store, "nightly", 60.0):
        assert json.loads(path.read_text())["pid"] == os.getpid()
    # Another host's lock: its pid cannot be looked at, so it holds until its bound passes.
    _lock(path, 1, "elsewhere", now - 10, now + 3600)
    with pytest.raises(CommscopeError, match=r"pid 1 on elsewhere since"):
        with check_lock.held(store, "nightly", 60.0):
            pass
    _lock(path, 1, "elsewhere", now - 7200, now - 3600)
    with check_lock.held(store, "nightly", 60.0):
        pass
    assert not path.exists()


def test_a_measuring_check_of_a_running_baseline_is_unknown_and_exported(
    base: Any, tmp_path: Path
) -> None:
    path = check_lock.path_for(str(base.store), "nightly")
    _lock(path, os.getpid(), socket.gethostname(), time.time(), time.time() + 3600)
    prom, xml = tmp_path / "c.prom", tmp_path / "c.xml"
    out = base("check", "--baseline", "nightly", "--prometheus", str(prom), "--junit", str(xml))
    assert out.returncode == UNKNOWN
    said = f"check of baseline nightly already running (pid {os.getpid()}"
    assert out.stderr.startswith(f"commscope check: error: {said}")
    _, reason, error = unknown_exports(prom, xml)
    assert reason.startswith(said) and said in error
    assert path.exists()  # the first check's lock is left alone


def test_a_run_of_part_of_the_hosts_is_judged_on_them_with_allow_subset(base: Any) -> None:
    alone = store_run(base.store, 4, nodes=("n0", "n0"))
    out = base("check", "--baseline", "nightly", str(alone))
    assert out.returncode == UNKNOWN
    assert "ran on n0, baseline nightly on n0,n1" in out.stderr

    out = base("check", "--baseline", "nightly", str(alone), "--allow-subset", "--json")
    assert out.returncode == OK, out.stdout + out.stderr
    assert f"run {alone} left out n1 (not in run {alone})" in out.stderr
    figures = json.loads(out.stdout)["figures"]
    judged = [f for f in figures if f["judged"]]
    assert judged and all(f["labels"]["link"] == "n0->n0" for f in judged)
    links = [f for f in figures if f["labels"].get("link") == "n0->n1"]
    assert links and all(
        f["status"] == "NOT_JUDGED"
        and f["measured"] is None
        and f["not_judged_reason"] == f"not measured: n1 was left out (not in run {alone})"
        for f in links
    )
    colls = [f for f in figures if "link" not in f["labels"]]  # need every node: not comparable
    assert colls and all(f["not_judged_reason"].startswith("measured without n1") for f in colls)
    text = base("check", "--baseline", "nightly", str(alone), "--allow-subset")
    assert f"{len(links) + len(colls)} figures not judged: nodes were left out" in text.stdout


def test_allow_subset_for_a_baseline_not_run_in_slurm_names_the_option(base: Any) -> None:
    out = base("check", "--baseline", "nightly", "--allow-subset")
    assert out.returncode == UNKNOWN
    assert out.stderr.strip() == (
        "commscope check: error: --allow-subset: baseline nightly's runs did not run in Slurm,"
        " so a check cannot leave unavailable nodes out; drop --allow-subset"
    )


@pytest.mark.parametrize(
    ("options", "said"),
    [
        (["--reservation", "maint"], "--reservation maint: only with --slurm"),
        (["--exclusive"], "--exclusive: only with --slurm"),
        (["--slurm-wait", "30"], "--slurm-wait 30: only with --slurm"),
        (["--nodelist", "n[1-2]"], "--nodelist n[1-2]: only with --slurm"),
        (["--slurm", "--time", "5x"], "--time '5x': not one; give a Slurm time"),
        (["--slurm", "--account", "a;b"], "--account 'a;b': not one; give an account's name"),
    ],
)
def test_slurm_options_are_refused_in_one_line_naming_what_was_typed(
    cli: Any, options: list[str], said: str
) -> None:
    out = cli("run", "p2p", *options)
    assert out.returncode == 2 and out.stdout == ""
    [line] = out.stderr.splitlines()
    assert line.startswith(f"commscope run: error: {said}"), line
    assert not Path(cli.store).exists()  # nothing stored
