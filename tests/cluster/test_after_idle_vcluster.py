"""The first exchange after idle, timed between two nodes over real TCP (root, virtual cluster).

`vcluster up --tcp-cc reno --tcp-slow-start-after-idle 1`: reno leaves the window to TCP, so
an idle connection restarts there, and the run must say so for each node. Each repetition's
first exchange after 0.5 s idle crosses the 50 mbit links: it moves 1 MiB each way, so it
cannot take less than 1 MiB at that rate, whatever the restart costs (nothing here:
docs/validation/contention.md gives the figures).
"""

from __future__ import annotations

import json
import subprocess

import pytest

from commscope.data.store import Store
from commscope.measure import vcluster
from tests.conftest import have_mpi, need

pytestmark = pytest.mark.cluster

RATE_BPS = 50e6
MIB = 1 << 20
RESTARTING = {"tcp_cc": "reno", "slow_start_after_idle": 1}


@pytest.mark.parametrize("cluster", [(2, "50mbit", RESTARTING)], indirect=True)
def test_each_repetition_times_an_exchange_after_idle_across_the_link(cli, cluster):
    need(have_mpi("openmpi"), "openmpi is not installed")
    state = vcluster.status()
    assert cluster.slow_start_after_idle == 1 and state is not None and state.healthy
    out = cli(
        "run", "contention", "--vcluster", "--ranks-per-node", "1", "--mpi", "openmpi",
        "--levels", "nic", "--sizes", "1MiB", "--repeats", "3", "--iterations", "2",
        "--idle", "0.5",
        "--json", "--timeout", "600",
        timeout=900,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    run_id = json.loads(out.stdout)["run"]
    with Store.open(cli.store) as store:
        [point] = store.contentions(run_id)
    assert (point.level, point.cf, point.bytes, point.idle_s) == ("nic", 1, MIB, 0.5)
    wire_s = MIB * 8 / RATE_BPS  # each way at once: an exchange takes one direction's time
    after = [2 * max(rep) for rep in point.after_idle_s]
    print("after idle (ms):", [round(t * 1e3, 1) for t in after], "wire", round(wire_s * 1e3, 1))
    assert len(after) == 3 and min(after) > 0.95 * wire_s

    shown = json.loads(cli("show", str(run_id), "--json", check=True).stdout)
    names = [n.name for n in cluster.nodes]
    assert shown["tcp_congestion_control"] == {"reno": names}
    assert shown["tcp_slow_start_after_idle"] == [{"value": 1, "nodes": names}]
    assert shown["tcp_idle_restart_nodes"] == names
    [cell] = shown["contention_after_idle"]
    assert cell["after_idle_exchange_s"] == pytest.approx(sorted(after)[1])
    text = cli("show", str(run_id), check=True).stdout
    assert "TCP slow start after idle (tcp_slow_start_after_idle): 1 on every node" in text
    assert "after 0.5 s idle" in text

    # The health check watches the setting: a node changed behind its back is a problem.
    changed = cluster.nodes[1].name
    subprocess.run(
        ["ip", "netns", "exec", changed, "sysctl", "-q", "-w",
         "net.ipv4.tcp_slow_start_after_idle=0"],
        check=True,
    )  # fmt: skip
    state = vcluster.status()
    assert state is not None and not state.healthy
    assert f"{changed} has tcp_slow_start_after_idle 0, not 1" in state.problems
