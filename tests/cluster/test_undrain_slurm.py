"""Undrain rechecks with the virtual cluster's real Slurm (root): only a repaired node returns.

Four nodes at 200 mbit (a recheck measures a node with three partners); csnode3's link is
slowed to 50 mbit both ways and ``run matrix --vcluster --drain`` drains it. ``undrain``
measures it again through a maintenance reservation with csnode4, csnode1 and csnode2:
still slow, it stays drained with a reason naming the recheck's run (exit 2); once its link
is back at 200 mbit, ``undrain`` returns it (exit 0). Neither leaves a reservation or a job
behind.
"""

from __future__ import annotations

import json
import subprocess

import pytest

from commscope.measure import vcluster
from tests.conftest import have_mpi, need

pytestmark = pytest.mark.cluster
SLOW = "csnode3"
RATE = "200mbit"
QUICK = ("--sizes", "64K", "--samples", "5")


def sh(*argv: str) -> str:
    return subprocess.run(list(argv), capture_output=True, text=True, timeout=60, check=True).stdout


def state_and_reason(node: str) -> tuple[str, str]:
    """sinfo's state and reason of ``node``."""
    state, reason = sh("sinfo", "-h", "-N", "-n", node, "-o", "%T|%E").splitlines()[0].split("|", 1)
    return state, reason


def nothing_left() -> None:
    """No reservation and no job outlives an undrain."""
    assert "No reservations" in sh("scontrol", "show", "reservation")
    assert sh("squeue", "-h").strip() == ""


@pytest.mark.parametrize("cluster", [(4, RATE, ("slurm",))], indirect=True)
def test_undrain_keeps_a_slow_node_drained_and_returns_a_repaired_one(cli, cluster):
    need(have_mpi("openmpi"), "openmpi is not installed")
    vcluster.set_rate(SLOW, "50mbit")
    # Drained by a run over ssh (as test_drain_slurm's): one srun launch less to wait for.
    out = cli("run", "matrix", "--vcluster", *QUICK, "--drain", "--json", timeout=300)
    assert out.returncode == 2, out.stdout + out.stderr  # CRITICAL: drained
    drained = json.loads(out.stdout)["drain"]["nodes"]
    assert [(n["node"], n["action"]) for n in drained] == [(SLOW, "drained")]

    out = cli("undrain", "--json", "--recheck-wait", "60", timeout=300)
    print(out.stdout, out.stderr)
    assert out.returncode == 2, out.stderr  # still slow: drained again
    [node] = json.loads(out.stdout)["nodes"]
    assert (node["node"], node["rechecked"], node["outcome"]) == (SLOW, True, "drained again")
    assert node["partners"] == ["csnode4", "csnode1", "csnode2"] and node["run"] is not None
    measured = node["measured"]
    assert measured["slow"] and measured["value"] < 0.5 * measured["typical"], measured
    state, reason = state_and_reason(SLOW)
    assert state == "drained" and reason == node["new_reason"]
    assert reason.startswith("commscope: recheck: bandwidth ") and reason.endswith(
        f"run {node['run']}"
    )
    nothing_left()

    vcluster.set_rate(SLOW, RATE)  # repaired
    out = cli("undrain", "--recheck-wait", "60", timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr
    assert f"returned to service: {SLOW}, rechecked in run " in out.stdout, out.stdout
    assert f"rechecking {SLOW} with csnode4, csnode1, csnode2" in out.stderr
    # Back in service; "idle*" until slurmctld's next ping reaches its slurmd.
    assert state_and_reason(SLOW)[0].rstrip("*") == "idle"
    nothing_left()
