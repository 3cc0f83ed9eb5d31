"""Where a check runs, with the virtual cluster's real Slurm (root).

Three nodes; the baseline ran on csnode2 and csnode3, asked for with `run --slurm
--nodelist csnode[2-3]` and salloc's other options. A check outside an allocation asks for
exactly those nodes (Slurm left alone would take csnode1 first); inside an allocation of
csnode1 and csnode2, or with csnode3 drained or in a maintenance reservation, it exits 3
before measuring, naming csnode3 and its state; `--allow-subset` measures csnode2 alone and
names the inter-node figures as not measured. A second check while one runs exits 3 at once;
`--slurm-wait` bounds the wait for an allocation Slurm cannot grant, and leaves no job
queued. One baseline run of 8-byte ping-pongs keeps it short: where a check runs does not
need a verdict that judges.
"""

from __future__ import annotations

import json
import subprocess
import time

import pytest
from prometheus_client.parser import text_string_to_metric_families

from commscope.data.store import Store
from commscope.jobs import check_lock
from commscope.status import UNKNOWN
from tests.conftest import have_mpi, need

pytestmark = pytest.mark.cluster
QUICK = ("--sizes", "8", "--ops", "pingpong", "--min-samples", "5", "--max-samples", "20")
ASKED = (
    "--slurm", "--nodelist", "csnode[2-3]", "--ranks-per-node", "2", "--account", "ops",
    "--qos", "normal", "--time", "10", "--slurm-wait", "60",
)  # fmt: skip


def sh(*argv: str) -> str:
    return subprocess.run(list(argv), capture_output=True, text=True, timeout=60, check=True).stdout


def slurm_part(cli, run: int) -> dict:
    with Store.open(cli.store, write=False) as store:
        return store.get_run(run).request["slurm"]


def run_count(cli) -> int:
    with Store.open(cli.store, write=False) as store:
        return len(store.list_runs())


def one_error(out, *words: str) -> str:
    assert out.returncode == UNKNOWN, out.stdout + out.stderr
    [line] = out.stderr.splitlines()
    for word in words:
        assert word in line, line
    return line


@pytest.mark.parametrize("cluster", [(3, "1gbit", ("slurm",))], indirect=True)
def test_a_check_runs_where_its_baseline_ran_or_says_why_not(cli, cluster, tmp_path):
    need(have_mpi("openmpi"), "openmpi is not installed")
    out = cli("run", "p2p", *ASKED, *QUICK, "--json", timeout=300)
    assert out.returncode == 0, out.stderr
    first = json.loads(out.stdout)["run"]
    asked = slurm_part(cli, first)
    assert asked["own"] is True and asked["nodes"] == ["csnode2", "csnode3"]
    assert {k: asked[k] for k in ("nodelist", "account", "qos", "time", "wait_s")} == {
        "nodelist": "csnode[2-3]", "account": "ops", "qos": "normal", "time": "10",
        "wait_s": 60,
    }  # fmt: skip
    assert sh("squeue", "-h").strip() == ""  # released
    cli("baseline", "create", "nightly", str(first), check=True)

    # Outside an allocation: exactly the baseline's nodes, asked for as its run was.
    out = cli("check", "--baseline", "nightly", "--once", "--json", timeout=300)
    verdict = json.loads(out.stdout)  # one baseline run judges nothing: UNKNOWN, but measured
    again = slurm_part(cli, verdict["run"])
    assert again["nodes"] == ["csnode2", "csnode3"] and again["own"] is True
    assert again["nodelist"] == "csnode2,csnode3" and again["account"] == "ops"
    assert again["wait_s"] == 60 and "left_out_nodes" not in again

    # Inside an allocation that lacks csnode3: refused before anything is measured.
    runs = run_count(cli)
    inside = subprocess.run(
        ["salloc", "-N", "2", "--nodelist", "csnode[1-2]", *cli.argv("check", "--baseline",
         "nightly", "--once")],
        capture_output=True, text=True, env=cli.env, timeout=300,
    )  # fmt: skip
    said = [ln for ln in inside.stderr.splitlines() if ln.startswith("commscope")]
    assert inside.returncode == UNKNOWN and len(said) == 1, inside.stderr
    assert "csnode3 is idle, not in this allocation (job " in said[0]
    assert "--allow-subset" in said[0] and "--resume" not in said[0]
    assert run_count(cli) == runs

    # Drained: named with its state and reason; --allow-subset measures csnode2 alone.
    sh("scontrol", "update", "NodeName=csnode3", "State=DRAIN", "Reason=cable swap")
    prom = tmp_path / "c.prom"
    out = cli("check", "--baseline", "nightly", "--once", "--prometheus", str(prom))
    one_error(out, "check --baseline nightly: csnode3 is drained (cable swap)")
    families = {f.name: f for f in text_string_to_metric_families(prom.read_text())}
    assert families["commscope_check_status"].samples[0].value == UNKNOWN
    assert run_count(cli) == runs

    out = cli("check", "--baseline", "nightly", "--once", "--allow-subset", "--json", timeout=300)
    verdict = json.loads(out.stdout)
    part = slurm_part(cli, verdict["run"])
    assert part["nodes"] == ["csnode2"] and part["left_out_nodes"] == {
        "csnode3": "drained (cable swap)"
    }
    assert "left out csnode3 (drained (cable swap))" in out.stderr
    inter = [f for f in verdict["figures"] if f["labels"]["pair"] == "inter-node"]
    assert inter and all(
        f["status"] == "NOT_JUDGED"
        and f["not_judged_reason"] == "not measured: csnode3 was left out (drained (cable swap))"
        for f in inter
    )
    sh("scontrol", "update", "NodeName=csnode3", "State=RESUME")

    # A maintenance reservation on csnode3 closes it to the check too.
    sh(
        "scontrol", "create", "reservation", "ReservationName=fix", "StartTime=now",
        "Duration=60", "Nodes=csnode3", "Users=root", "Flags=MAINT,IGNORE_JOBS",
    )  # fmt: skip
    out = cli("check", "--baseline", "nightly", "--once")
    one_error(out, "csnode3 is in maintenance reservation fix")
    sh("scontrol", "delete", "ReservationName=fix")

    # Two checks of one baseline: while the first waits for csnode2 (another job holds it),
    # the second is refused at once; the first measures once the node is free.
    blocker = _hold("csnode2")
    lock = check_lock.path_for(str(cli.store), "nightly")
    first_check = subprocess.Popen(
        cli.argv("check", "--baseline", "nightly", "--once"),
        env=cli.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    deadline = time.monotonic() + 60
    while not lock.exists() and first_check.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    second = cli("check", "--baseline", "nightly", "--once")
    one_error(second, f"check of baseline nightly already running (pid {first_check.pid} on")
    sh("scancel", blocker)
    _, err = first_check.communicate(timeout=300)
    assert "error:" not in err, err  # measured (one baseline run: judged UNKNOWN)
    assert not lock.exists()

    # --slurm-wait bounds the wait for an allocation Slurm cannot grant; no job stays queued.
    blocker = _hold("csnode1")
    start = time.monotonic()
    out = cli("run", "p2p", "--slurm", "--nodelist", "csnode1", "--slurm-wait", "3", *QUICK)
    took = time.monotonic() - start
    assert out.returncode == 1, out.stdout + out.stderr
    [line] = out.stderr.splitlines()
    assert line.startswith(
        "commscope run: error: --slurm: Slurm did not grant 1 node (csnode1) within 3 s"
        " (--slurm-wait 3; salloc: "
    ), line
    assert took < 30, took
    assert sh("squeue", "-h", "-o", "%i").split() == [blocker]


def _hold(node: str) -> str:
    """Hold ``node`` with an allocation of its own; its job id."""
    said = subprocess.run(
        ["salloc", "--no-shell", "-N", "1", "-w", node, "--exclusive", "--job-name=blocker"],
        capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    return said.stderr.split("Granted job allocation ", 1)[1].split()[0]
