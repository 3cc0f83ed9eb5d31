"""Real launchers across the virtual cluster: hostfile runs through sshd, runs through Slurm."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from commscope.data.store import Store
from commscope.measure import vcluster
from tests.cluster.test_vcluster import assert_nothing_left
from tests.conftest import have_mpi, need

pytestmark = pytest.mark.cluster
BOTH = ("ssh", "slurm")
P2P = ("p2p", "--sizes", "8,65536", "--ops", "pingpong,bw")
COLL = ("coll", "--sizes", "8,65536", "--ops", "alltoall,bcast")


def sh(*argv: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(argv), capture_output=True, text=True, timeout=120, env=env)


def stored(cli, out: subprocess.CompletedProcess[str]):
    assert out.returncode == 0, out.stdout + out.stderr
    run_id = json.loads(out.stdout)["run"]
    with Store.open(cli.store) as store:
        return store.get_run(run_id), store.points(run_id), store.colls(run_id)


def node_map(run) -> list[str]:
    return [rank["node"] for rank in run.header["ranks"]]


@pytest.mark.parametrize("cluster", [(2, "200mbit", BOTH)], indirect=True)
def test_daemons_run_in_their_nodes_and_down_stops_every_one(cluster):
    daemons = vcluster.daemons()
    assert set(daemons) == {
        "sshd-csnode1",
        "sshd-csnode2",
        "munged",
        "slurmctld",
        "slurmd-csnode1",
        "slurmd-csnode2",
    }
    assert all(vcluster.alive(pid) for pid in daemons.values()), daemons
    for node in ("csnode1", "csnode2"):
        for daemon in (f"sshd-{node}", f"slurmd-{node}"):
            assert sh("ip", "netns", "identify", str(daemons[daemon])).stdout.strip() == node
    assert sh("ssh", "csnode2", "hostname").stdout.strip() == "csnode2"
    assert sh("sinfo", "-h", "-N", "-o", "%N %T").stdout.split() == [
        "csnode1",
        "idle",
        "csnode2",
        "idle",
    ]
    vcluster.down()
    assert not [name for name, pid in daemons.items() if vcluster.alive(pid)]
    assert_nothing_left()


@pytest.mark.parametrize("cluster", [(2, "200mbit", ("ssh",))], indirect=True)
@pytest.mark.parametrize("family", ["openmpi", "mpich"])
def test_hostfile_runs_start_ranks_through_ssh(cli, cluster, family, tmp_path):
    need(have_mpi(family), f"{family} is not installed")
    hostfile = tmp_path / "hosts"
    hostfile.write_text("csnode1 slots=1\ncsnode2:1\n")
    logs = [vcluster.STATE_DIR / "ssh" / f"sshd-{n}.log" for n in ("csnode1", "csnode2")]
    for bench in (P2P, COLL):
        run, points, colls = stored(
            cli,
            cli("run", *bench, "--mpi", family, "--hostfile", str(hostfile), "--json", timeout=600),
        )
        assert node_map(run) == ["csnode1", "csnode2"]
        assert run.request["placement"]["hosts"] == [["csnode1", 1], ["csnode2", 1]]
        if bench is P2P:
            assert {p.pair for p in points} == {"inter-node"}
            assert {p.op for p in points} == {"pingpong", "bw"}
        else:
            assert {c.op for c in colls} == {"alltoall", "bcast"}
    for log in logs:  # each node's own sshd let the launcher in
        assert "Accepted publickey for root" in log.read_text()


@pytest.mark.parametrize("cluster", [(2, "200mbit", BOTH)], indirect=True)
@pytest.mark.parametrize("family", ["openmpi", "mpich"])
def test_inside_an_allocation_ranks_start_with_srun(cli, cluster, family):
    need(have_mpi(family), f"{family} is not installed")
    out = subprocess.run(
        [
            "salloc",
            "-N",
            "2",
            "--ntasks-per-node",
            "1",
            *cli.argv("run", *P2P, "--mpi", family, "--json"),
        ],
        capture_output=True,
        text=True,
        env=cli.env,
        timeout=600,
    )
    run, points, _ = stored(cli, out)
    assert run.request["launcher"] == "srun"
    assert run.request["slurm"]["plugin"] == ("pmix_v4" if family == "openmpi" else "pmi2")
    assert run.request["slurm"]["own"] is False and run.request["np"] == 2
    assert node_map(run) == ["csnode1", "csnode2"]
    assert {p.pair for p in points} == {"inter-node"}


@pytest.mark.parametrize("cluster", [(2, "200mbit", BOTH)], indirect=True)
@pytest.mark.parametrize("family", ["openmpi", "mpich"])
def test_slurm_option_gets_an_allocation_and_gives_it_back(cli, cluster, family):
    need(have_mpi(family), f"{family} is not installed")
    run, _, colls = stored(
        cli,
        cli(
            "run",
            *COLL,
            "--mpi",
            family,
            "--slurm",
            "-N",
            "2",
            "--ranks-per-node",
            "2",
            "--json",
            timeout=600,
        ),
    )
    assert run.request["slurm"]["own"] is True and run.request["np"] == 4
    assert node_map(run) == ["csnode1", "csnode1", "csnode2", "csnode2"]
    assert {c.op for c in colls} == {"alltoall", "bcast"}
    assert sh("squeue", "-h").stdout.strip() == ""  # released
    # The two nodes are namespaces of this one machine: the load table sees one host with
    # all four ranks, and says so when they outnumber its CPUs.
    with Store.open(cli.store) as store:
        [host] = store.segments(run.id)[-1].end["load"]
    assert host["nodes"] == ["csnode1", "csnode2"] and host["ranks"] == 4
    shown = json.loads(cli("show", str(run.id), "--json", check=True).stdout)
    oversubscribed = [w for w in shown["load_warnings"] if "oversubscribed" in w]
    assert bool(oversubscribed) == (4 > host["cpus"]), (host, shown["load_warnings"])


@pytest.mark.parametrize("cluster", [(2, "200mbit", BOTH)], indirect=True)
def test_a_slurm_without_the_mpi_plugin_is_refused_in_one_line(cli, cluster, tmp_path):
    need(have_mpi("mpich"), "mpich is not installed")
    # A real Slurm whose plugin folder lacks the PMI plugins.
    real = Path("/usr/lib/x86_64-linux-gnu/slurm-wlm")
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    for lib in real.iterdir():
        if not lib.name.startswith(("mpi_pmi2", "mpi_pmix")):
            (plugins / lib.name).symlink_to(lib)
    conf = tmp_path / "slurm.conf"
    conf.write_text(Path("/etc/slurm/slurm.conf").read_text() + f"PluginDir={plugins}\n")
    env = dict(cli.env, SLURM_CONF=str(conf))
    out = subprocess.run(
        cli.argv("run", *P2P, "--mpi", "mpich", "--slurm"),
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 2, out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and "pmi2" in lines[0] and "srun --mpi=list" in lines[0], lines
    assert sh("squeue", "-h").stdout.strip() == ""
    with Store.open(cli.store) as store:
        assert store.list_runs() == []


@pytest.mark.parametrize("cluster", [(2, "200mbit", BOTH)], indirect=True)
def test_hpl_solves_in_an_allocation_of_its_own_and_in_the_one_it_runs_in(cli, cluster):
    from tests.simgrid.test_simulate_app import HPL_SOURCE

    need(have_mpi("openmpi"), "openmpi is not installed")
    need(HPL_SOURCE.exists(), f"HPC Challenge source at {HPL_SOURCE} (apt-get source hpcc)")
    hpl = ("run", "hpl", "--mpi", "openmpi", "--matrix-order", "400", "--nb", "50")
    hpl += ("--source", str(HPL_SOURCE), "--json")
    # --slurm: one allocation, big enough for the largest grid, for both grids; then released.
    out = cli(*hpl, "--grid", "1x2,2x1", "--slurm", timeout=900)
    assert out.returncode == 0, out.stderr
    own = json.loads(out.stdout)["runs"]
    assert [r["grid"] for r in own] == ["1x2", "2x1"]
    assert len({r["slurm"]["job"] for r in own}) == 1
    for r in own:
        assert r["passed"] and r["hosts"] == ["csnode1", "csnode2"], r
        assert r["slurm"]["own"] is True and r["slurm"]["plugin"] == "pmix_v4"
        assert r["slurm_nodes"] == 2 and r["ranks_per_node"] == 1
    assert sh("squeue", "-h").stdout.strip() == ""  # released
    # Inside an allocation: its two tasks on one node each, started by srun, not released.
    inside = subprocess.run(
        ["salloc", "-N", "2", "--ntasks-per-node", "1", *cli.argv(*hpl, "--grid", "2x1")],
        capture_output=True,
        text=True,
        env=cli.env,
        timeout=900,
    )
    assert inside.returncode == 0, inside.stderr
    [r] = json.loads(inside.stdout)["runs"]
    assert r["passed"] and r["hosts"] == ["csnode1", "csnode2"], r
    assert r["slurm"]["own"] is False and r["slurm"]["job"] != own[0]["slurm"]["job"]
    with Store.open(cli.store) as store:
        assert {store.get_run(x["run"]).launcher for x in [*own, r]} == {"srun"}
