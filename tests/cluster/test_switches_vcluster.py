"""Two switches joined by a slow uplink, and a node's own link rate, for real (root).

The first test builds the shape and checks it without MPI: which bridge each link is on, the
tbf of every uplink end and of a node with its own rate, the health check and the cleanup.
The second measures the matrix across two switches: ``commscope topology`` must put csnode1,2
behind one switch and csnode3,4 behind the other, and the vcluster's Slurm must accept the
topology.conf it writes (``scontrol show topology``).
"""

from __future__ import annotations

import json
import subprocess

import pytest

from commscope.measure import vcluster
from commscope.measure.vcluster import system
from tests.cluster.test_vcluster import fresh, ping, sh  # noqa: F401 - the fixture
from tests.conftest import have_mpi, need

pytestmark = pytest.mark.cluster


def qdisc(*where: str) -> dict:
    """The root qdisc of a device: ``("dev", X)`` here, or ``("-n", NS, "dev", X)``."""
    *ns, _, dev = where
    out = sh("tc", *ns, "-j", "qdisc", "show", "dev", dev)
    (root,) = [q for q in json.loads(out.stdout) if q.get("root")]
    return root


def master(link: str) -> str | None:
    (info,) = json.loads(sh("ip", "-j", "link", "show", "dev", link).stdout)
    return info.get("master")


def test_two_switches_with_a_slow_uplink_are_built_checked_and_removed(fresh, cli):  # noqa: F811
    state = vcluster.up(4, "200mbit,csnode4=100mbit", switches=2, uplink_rate="50mbit")
    assert state.healthy and state.leaves == ("csbr1", "csbr2")
    assert [master(n.veth) for n in state.nodes] == ["csbr1", "csbr1", "csbr2", "csbr2"]
    for uplink in state.uplinks:
        assert master(uplink.core_end) == "csbr0" and master(uplink.leaf_end) == uplink.leaf
        for end in (uplink.core_end, uplink.leaf_end):  # both directions at the uplink rate
            root = qdisc("dev", end)
            assert root["kind"] == "tbf" and root["options"]["rate"] == 50_000_000 // 8
    # csnode4's own rate, both ways; the others at the cluster's.
    assert qdisc("-n", "csnode4", "dev", "eth0")["options"]["rate"] == 100_000_000 // 8
    assert qdisc("dev", "csveth4")["options"]["rate"] == 100_000_000 // 8
    assert qdisc("dev", "csveth3")["options"]["rate"] == 200_000_000 // 8
    ping("csnode1", "csnode4")  # across the core
    ping("csnode3", state.bridge_address)  # the host sits on the core
    ping("csnode1", "csnode2")

    shown = json.loads(cli("vcluster", "status", "--json", check=True).stdout)
    assert shown["healthy"] and shown["switches"] == 2 and shown["uplink_rate"] == "50mbit"
    assert [(n["name"], n["switch"], n["rate"]) for n in shown["nodes"]] == [
        ("csnode1", "csbr1", "200mbit"),
        ("csnode2", "csbr1", "200mbit"),
        ("csnode3", "csbr2", "200mbit"),
        ("csnode4", "csbr2", "100mbit"),
    ]
    text = cli("vcluster", "status", check=True).stdout
    assert "2 switches (csbr1, csbr2) joined by 50mbit uplinks" in text
    assert vcluster.up(4, "200mbit,csnode4=100mbit", switches=2, uplink_rate="50mbit") == state

    # The health check sees a leaf down, an uplink gone and a node moved to another switch.
    sh("ip", "link", "set", "csbr2", "down")
    sh("ip", "link", "del", "csup1")  # takes csupl1 with it
    sh("ip", "link", "set", "csveth2", "master", "csbr2")
    problems = vcluster.status().problems  # type: ignore[union-attr]
    for expected in (
        "bridge csbr2 is down",
        "uplink end csup1 missing",
        "uplink end csupl1 missing",
        "csveth2 is not on switch csbr1",
    ):
        assert expected in problems, problems
    assert cli("vcluster", "status").returncode == 1

    # down removes the rest, also what it finds by name alone.
    system.write_state(vcluster.plan(1))  # a state that no longer lists the leaves
    removed = vcluster.down()
    assert "uplink csup2" in removed and "bridge csbr1" in removed and "bridge csbr2" in removed
    left = [n for n in system.links() if n.startswith(("csbr", "csup", "csveth"))]
    assert left == []


def scontrol_topology() -> dict[str, dict[str, set[str]]]:
    """``scontrol show topology``: switch -> its nodes and its switches, expanded."""
    out = subprocess.run(
        ["scontrol", "show", "topology"], capture_output=True, text=True, timeout=30, check=True
    ).stdout
    found = {}
    for line in out.splitlines():
        fields = dict(f.split("=", 1) for f in line.split() if "=" in f)
        if "SwitchName" not in fields:
            continue
        found[fields["SwitchName"]] = {
            key: set(
                subprocess.run(
                    ["scontrol", "show", "hostnames", fields[key]],
                    capture_output=True,
                    text=True,
                    timeout=30,
                    check=True,
                ).stdout.split()
            )
            if fields.get(key)
            else set()
            for key in ("Nodes", "Switches")
        }
    return found


@pytest.mark.parametrize(
    "cluster", [(4, "200mbit", ("slurm",), {"switches": 2, "uplink_rate": "50mbit"})], indirect=True
)
def test_measured_switches_become_slurms_topology(cli, cluster, tmp_path):
    need(have_mpi("openmpi"), "openmpi is not installed")
    # Slurm starts with the switches as built.
    built = scontrol_topology()
    assert built["csbr1"]["Nodes"] == {"csnode1", "csnode2"}
    assert built["csbr2"]["Nodes"] == {"csnode3", "csnode4"}
    assert built["csbr0"]["Switches"] == {"csbr1", "csbr2"}

    out = cli(
        "run", "matrix", "--vcluster", "--sizes", "64K", "--samples", "4", "--json",
        timeout=600,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    run_id = json.loads(out.stdout)["run"]
    conf = tmp_path / "topology.conf"
    out = cli("topology", str(run_id), "-o", str(conf), "--json")
    assert out.returncode == 0, out.stderr
    print(out.stdout, conf.read_text())
    switches = json.loads(out.stdout)["switches"]
    leaves = sorted(sorted(s["nodes"]) for s in switches if s["nodes"])
    assert leaves == [["csnode1", "csnode2"], ["csnode3", "csnode4"]]
    # Across the uplink the links run at 50 mbit or less, within a leaf well above it.
    top = next(s for s in switches if s["switches"])
    assert top["bandwidth_Bps"] <= 50e6 / 8 < min(s["bandwidth_Bps"] for s in switches[:2])

    out = cli("vcluster", "slurm-topology", str(conf))
    assert out.returncode == 0, out.stderr
    shown = scontrol_topology()
    print(shown)
    measured = {name: parts for name, parts in shown.items() if name not in built}
    assert sorted(sorted(p["Nodes"]) for p in measured.values() if not p["Switches"]) == leaves
    assert any(p["Switches"] and p["Nodes"] == {f"csnode{i}" for i in range(1, 5)}
               for p in measured.values())  # fmt: skip
    assert not set(shown) & set(built)  # the built switches are gone: Slurm read the new file
    # Slurm schedules with it: a job asking for one switch gets two nodes of one leaf.
    job = subprocess.run(
        ["srun", "-N", "2", "--switches=1", "-t", "1", "hostname"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert job.returncode == 0, job.stderr
    assert sorted(job.stdout.split()) in leaves


@pytest.mark.parametrize("cluster", [(3, "1gbit", ("slurm",))], indirect=True)
def test_a_topology_of_two_of_three_nodes_needs_partial_and_names_the_third(cli, cluster, tmp_path):
    """No MPI: a stored matrix of csnode1,2 held against the real Slurm's three nodes."""
    from tests.unit.test_matrix import point, store_run

    pairs = [(0, 1), (1, 0)]
    run = str(store_run(cli.store, [point("matrix_bw", a, b, 100e6) for a, b in pairs],
                        ("csnode1", "csnode2")))  # fmt: skip
    conf = tmp_path / "topology.conf"
    out = cli("topology", run, "-o", str(conf))
    assert out.returncode == 2 and not conf.exists(), out.stderr
    [line] = out.stderr.splitlines()
    assert "1 of Slurm's 3 nodes are in no switch" in line and ": csnode3;" in line, line
    # The vcluster's own file puts all three under csbr0: merged, csnode1 would sit under two.
    out = cli("topology", run, "-o", str(conf), "--merge", "/etc/slurm/topology.conf")
    assert out.returncode == 2 and "would sit under two switches: csbr0" in out.stderr
    assert not conf.exists()
    out = cli("topology", run, "-o", str(conf), "--partial")
    assert out.returncode == 0, out.stderr
    text = conf.read_text()
    assert "# partial: 1 of Slurm's 3 nodes are in no switch here: csnode3\n" in text, text
    # The install step: Slurm reads the partial file (scontrol reconfigure) and shows it.
    assert cli("vcluster", "slurm-topology", str(conf)).returncode == 0
    shown = scontrol_topology()
    assert {n for s in shown.values() for n in s["Nodes"]} == {"csnode1", "csnode2"}, shown
    # A matrix of all three is the whole cluster: written as it is, no word about others.
    every = [(a, b) for a in range(3) for b in range(3) if a != b]
    run = str(store_run(cli.store, [point("matrix_bw", a, b, 100e6) for a, b in every],
                        ("csnode1", "csnode2", "csnode3")))  # fmt: skip
    out = cli("topology", run, "-o", str(conf))
    assert out.returncode == 0 and "note:" not in out.stdout, out.stdout + out.stderr
    assert conf.read_text().splitlines()[1:] == ["SwitchName=s0_0 Nodes=csnode1,csnode2,csnode3"]
