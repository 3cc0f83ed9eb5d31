"""Draining with a real Slurm in the virtual cluster (root).

csnode3's link is slowed to a quarter of the others', both ways; an admin has drained csnode1
for maintenance beforehand. ``run matrix --drain`` must drain exactly csnode3 with a reason
that starts with "commscope:" (read back from sinfo and scontrol), ``undrain --no-recheck``
must return csnode3 and leave csnode1 drained, also when csnode1 is named (the recheck is
tests/cluster/test_undrain_slurm.py's).
"""

from __future__ import annotations

import json
import subprocess

import pytest

from commscope.measure import vcluster
from tests.conftest import have_mpi, need

pytestmark = pytest.mark.cluster
SLOW = "csnode3"
ADMINS = "csnode1"
MAINTENANCE = "maintenance: cable swap"


def sh(*argv: str) -> str:
    return subprocess.run(list(argv), capture_output=True, text=True, timeout=60, check=True).stdout


def states() -> dict[str, tuple[str, str]]:
    """Node -> (state, reason), from sinfo."""
    out = sh("sinfo", "-h", "-N", "-o", "%N|%T|%E")
    return {
        name: (state, reason)
        for name, state, reason in (line.split("|", 2) for line in out.splitlines())
    }


def scontrol_reason(node: str) -> str:
    """The Reason field of ``scontrol show node -o`` (it ends with [user@time])."""
    line = sh("scontrol", "show", "node", "-o", node)
    return line.split(" Reason=", 1)[1].strip()


@pytest.mark.parametrize("cluster", [(4, "200mbit", ("slurm",))], indirect=True)
def test_drain_drains_the_slow_node_and_undrain_returns_only_it(cli, cluster):
    need(have_mpi("openmpi"), "openmpi is not installed")
    vcluster.set_rate(SLOW, "50mbit")
    sh("scontrol", "update", f"NodeName={ADMINS}", "State=DRAIN", f"Reason={MAINTENANCE}")
    assert states()[ADMINS] == ("drained", MAINTENANCE)

    out = cli(
        "run", "matrix", "--vcluster", "--sizes", "64K", "--samples", "5", "--drain",
        "--json", timeout=600,
    )  # fmt: skip
    print(out.stdout, out.stderr)
    assert out.returncode == 2, out.stderr  # CRITICAL: a node drained
    drained = json.loads(out.stdout)["drain"]
    assert [(n["node"], n["action"]) for n in drained["nodes"]] == [(SLOW, "drained")]
    assert drained["problems"] == [] and drained["applied"] is True
    reason = drained["nodes"][0]["reason"]
    assert reason.startswith("commscope: bandwidth ") and reason.endswith(
        f"run {json.loads(out.stdout)['run']}"
    )

    now = states()
    assert now[SLOW] == ("drained", reason)
    assert scontrol_reason(SLOW).startswith(f"{reason} [root@")
    assert now[ADMINS] == ("drained", MAINTENANCE)
    assert [n for n, (state, _) in now.items() if "drain" in state] == [ADMINS, SLOW]

    dry = cli("undrain", "--dry-run", "--no-recheck")
    assert dry.returncode == 0, dry.stderr
    assert f"would run: scontrol update NodeName={SLOW} State=RESUME" in dry.stdout
    assert states()[SLOW][0] == "drained"

    out = cli("undrain", "--json", "--no-recheck")
    assert out.returncode == 0, out.stderr
    shown = json.loads(out.stdout)
    assert [(n["node"], n["outcome"]) for n in shown["nodes"]] == [
        (SLOW, "returned without a recheck")
    ]
    assert [entry["node"] for entry in shown["left"]] == [ADMINS]
    now = states()
    # Back in service; "idle*" until slurmctld's next ping reaches its slurmd.
    assert now[SLOW][0].rstrip("*") == "idle" and now[ADMINS] == ("drained", MAINTENANCE)

    named = cli("undrain", ADMINS)
    assert named.returncode == 1 and f"left alone: {ADMINS}" in named.stdout
    assert states()[ADMINS] == ("drained", MAINTENANCE)
