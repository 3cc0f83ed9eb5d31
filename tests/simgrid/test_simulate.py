"""`commscope simulate` under real SimGrid SMPI: the engine built with smpicc, run on a
platform written from a cluster model, calibrated against a measured curve, validated."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from commscope.data.store import Store
from tests.conftest import CLI
from tests.simgrid.conftest import GIGE, model, one_way

pytestmark = pytest.mark.simgrid


def test_neutral_pingpong_is_latency_plus_size_over_bandwidth(cli: CLI, tmp_path: Path) -> None:
    # Two links of 40 us on the route, 125 MB/s: below the eager limit one message takes
    # exactly 80 us + m / B; above it the engine's control message between samples makes the
    # receiver post late, which SMPI (as a rendezvous) charges one more route latency per
    # sample of one message. SMPI's own per-call costs add ~0.2 us (hence 0.5 %).
    path = model(
        tmp_path,
        "nodes: 2\nsockets: 1\ncores: 2\nchannels: {nic: {bandwidth: 125MB/s, latency: 40us}}\n",
    )
    out = cli(
        "simulate",
        "run",
        "--cluster",
        str(path),
        "--neutral",
        "--json",
        "--",
        "p2p",
        "--ops",
        "pingpong",
        "--sizes",
        "0,1024,16384,262144",
        check=True,
    )
    run = json.loads(out.stdout)["run"]
    times = one_way(cli, run)
    for size in (0, 1024, 16384):
        assert times[("inter-node", size)] == pytest.approx(80e-6 + size / GIGE, rel=5e-3)
    assert times[("inter-node", 262144)] == pytest.approx(120e-6 + 262144 / GIGE, rel=5e-3)
    runs = {r["id"]: r for r in json.loads(cli("runs", "--json", check=True).stdout)}
    assert runs[run]["mpi"].startswith("simgrid-")
    with Store.open(cli.store) as store:
        sim = store.get_run(run).request["simulate"]
    assert '<host_link id="node1" up="node1-nic-up" down="node1-nic-down"/>' in sim["platform_xml"]
    assert "smpi/bw-factor:0:1" in sim["config"] and sim["factors"] == "neutral (0:1)"
    assert sim["hostfile"].splitlines() == ["node0", "node1"]


def test_ranks_of_a_node_share_its_memory_link(cli: CLI, tmp_path: Path) -> None:
    # One node, four ranks: the contention benchmark's two simultaneous pairs each get half
    # of the node's 1 GB/s memory link (SHARED), so t(m, 2) = 2 t(m, 1).
    path = model(
        tmp_path,
        "nodes: 1\nsockets: 1\ncores: 4\nchannels: {memory: {bandwidth: 1GB/s, latency: 0us}}\n",
    )
    out = cli(
        "simulate",
        "run",
        "--cluster",
        str(path),
        "--nodes",
        "1",
        "--ranks-per-node",
        "4",
        "--neutral",
        "--json",
        "--",
        "contention",
        "--sizes",
        "1MiB",
        "--levels",
        "memory",
        "--repeats",
        "1",
        "--iterations",
        "2",
        check=True,
    )
    run = json.loads(out.stdout)["run"]
    with Store.open(cli.store) as store:
        cells = {c.cf: c for c in store.contentions(run)}
    assert set(cells) >= {1, 2}
    t1 = max(max(s) for s in cells[1].samples_s)
    t2 = max(max(s) for s in cells[2].samples_s)
    assert t2 / t1 == pytest.approx(2.0, rel=0.02)


def test_an_idle_spell_changes_nothing_on_a_model_without_tcp(cli: CLI, tmp_path: Path) -> None:
    # SMPI's links have no congestion window to restart: the first exchange after 0.5 s idle
    # takes what the warm ones take, and the idle spell is slept in simulated time.
    path = model(
        tmp_path,
        "nodes: 1\nsockets: 1\ncores: 2\nchannels: {memory: {bandwidth: 1GB/s, latency: 0us}}\n",
    )
    out = cli(
        "simulate", "run", "--cluster", str(path), "--nodes", "1", "--ranks-per-node", "2",
        "--neutral", "--json", "--",
        "contention", "--sizes", "1MiB", "--levels", "memory", "--repeats", "2",
        "--iterations", "2",
        "--idle", "0.5",
        check=True,
    )  # fmt: skip
    run = json.loads(out.stdout)["run"]
    with Store.open(cli.store) as store:
        [cell] = store.contentions(run)
    assert cell.idle_s == 0.5 and cell.after_idle_median_s is not None
    assert cell.after_idle_median_s == pytest.approx(cell.median_s, rel=0.02)


def test_sweep_reports_what_a_parameter_moves(cli: CLI, tmp_path: Path) -> None:
    path = model(
        tmp_path,
        "nodes: 2\nsockets: 1\ncores: 1\nchannels: {nic: {bandwidth: 125MB/s, latency: 10us}}\n",
    )
    out = cli(
        "simulate",
        "run",
        "--cluster",
        str(path),
        "--neutral",
        "--json",
        "--sweep",
        "nic-latency=10us,100us",
        "--",
        "p2p",
        "--ops",
        "pingpong",
        "--sizes",
        "8,4MiB",
        check=True,
    )
    data = json.loads(out.stdout)
    assert data["labels"] == ["nic_latency=10us", "nic_latency=100us"]
    change = {(p["key"][2], p["key"][3]): p["change"] for p in data["points"]}
    # Small messages are latency-bound: ~9x slower; 4 MiB barely moves (<1 %).
    assert change[("inter-node", 8)] > 5
    assert abs(change[("inter-node", 4 << 20)]) < 0.01


def test_bad_inputs_fail_with_one_line(cli: CLI, tmp_path: Path) -> None:
    path = model(tmp_path, "nodes: 2\nsockets: 1\ncores: 1\nsimulation: {lat_factor: 3}\n")
    out = cli("simulate", "run", "--cluster", str(path), "--", "p2p")
    assert out.returncode != 0
    assert "simulation.lat_factor" in out.stderr and len(out.stderr.strip().splitlines()) == 1
    good = model(tmp_path, "nodes: 2\nsockets: 1\ncores: 1\n")
    out = cli("simulate", "run", "--cluster", str(good), "--sweep", "colour=red", "--", "p2p")
    assert out.returncode != 0 and "--sweep colour" in out.stderr
    out = cli("simulate", "run", "--cluster", str(good), "--nodes", "2", "--", "p2p", "--np", "3")
    assert out.returncode == 2 and "--np 3 after --: the placement has 2 ranks" in out.stderr
    out = cli("simulate", "run", "--cluster", str(good), "--", "tcp")
    assert out.returncode != 0 and "simulate an MPI kind: all, p2p" in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1
    assert not cli.store.exists() or json.loads(cli("runs", "--json").stdout) == []


def test_192_rank_alltoall_equals_the_contention_oracle(cli: CLI, tmp_path: Path) -> None:
    # 16 nodes x 12 cores on GigE NICs, free memory links, neutral factors: each node sends
    # 12 x 180 MiB out through its NIC, so the linear all-to-all takes exactly that / B, the
    # count the prediction's oracle (tests/simgrid/test_predict_oracle.py) gives.
    path = model(
        tmp_path,
        "nodes: 16\nsockets: 1\ncores: 12\nchannels: {nic: {bandwidth:"
        " 125MB/s, latency: 0us}, memory: {bandwidth: 1e15, latency: 0us}}\n",
    )
    out = cli(
        "simulate",
        "run",
        "--cluster",
        str(path),
        "--nodes",
        "16",
        "--ranks-per-node",
        "12",
        "--neutral",
        "--samples",
        "1",
        "--smpi-cfg",
        "smpi/alltoall:basic_linear",
        "--",
        "coll",
        "--ops",
        "alltoall",
        "--sizes",
        "1MiB",
        timeout=1200,
        check=True,
    )
    print(out.stdout)
    with Store.open(cli.store) as store:
        [run] = store.list_runs()
        [coll] = store.colls(run.id)
        [seg] = store.segments(run.id)
    want = 12 * 180 * (1 << 20) / GIGE
    assert coll.nranks == 192 and coll.times_s[0] == pytest.approx(want, rel=0.01)
    wall = seg.ended_unix - seg.started_unix
    print(
        f"192-rank all-to-all at 1 MiB: simulated {coll.times_s[0]:.4f} s (oracle {want:.4f}"
        f" s), wall {wall:.1f} s"
    )
    assert "wall" in out.stdout


def test_latency_sweep_lands_in_the_report(cli: CLI, tmp_path: Path) -> None:
    # The sensitivity study of Rechistov et al. 2012 (cluster simulation) on a model: a
    # collective's time against the NIC latency, 80 to 400 us, one simulated run per value,
    # lined up in the HTML report.
    path = model(
        tmp_path,
        "nodes: 4\nsockets: 1\ncores: 2\nchannels: {nic: {bandwidth: 125MB/s, latency: 10us}}\n",
    )
    values = ["80us", "160us", "240us", "320us", "400us"]
    out = cli(
        "simulate",
        "run",
        "--cluster",
        str(path),
        "--nodes",
        "4",
        "--ranks-per-node",
        "2",
        "--json",
        "--sweep",
        "nic-latency=" + ",".join(values),
        "--",
        "coll",
        "--ops",
        "alltoall",
        "--sizes",
        "8,4MiB",
        timeout=600,
        check=True,
    )
    runs = json.loads(out.stdout)["runs"]
    assert len(runs) == 5
    report = tmp_path / "sweep.html"
    cli("report", *map(str, runs), "-o", str(report), check=True)
    html = report.read_text()
    assert "Sweep of nic_latency" in html and html.count('class="sim-sweep"') == 1
    table = html[html.index('class="sim-sweep"') :]
    table = table[: table.index("</table>")]
    for v in values:
        assert f"nic_latency={v}</th>" in table
    rows = {}
    for line in table.splitlines():
        if line.startswith('<tr><td class="l">'):
            cells = [c.split("<")[0] for c in line.split("<td")[1:]]
            rows[cells[0].split(">")[1]] = cells[-1].split(">")[1]
    # 8 B all-to-all: latency-bound, several times slower at 400 us; 4 MiB: bandwidth-bound.
    small = next(v for k, v in rows.items() if k.startswith("alltoall 8 B"))
    large = next(v for k, v in rows.items() if k.startswith("alltoall 4 MiB"))
    assert float(small.split()[0]) > 200 and float(large.split()[0]) < 20, rows
    assert "Sensitivity to nic_latency" in html
    assert "nic_latency from 80us to 400us moves alltoall 8 B" in html


def test_taper_and_switch_latency_in_one_sweep_say_what_matters(cli: CLI, tmp_path: Path) -> None:
    # The what-if question at the size of a purchase, in small: a fat tree of 4 leaves of 4
    # nodes, its leaves' uplinks cut from 4 links (1:1) to 1 (4:1), and the switch latency
    # from 0.1 to 1 us, in one command. A 1 MiB all-to-all sends 12 of its 15 steps across
    # leaves: at 4:1 four flows share a leaf's one uplink, so it takes (3 + 12 x 4) / 15 = 3.4
    # times as long; a microsecond more per hop is lost in 1 ms per step.
    path = model(
        tmp_path,
        "sockets: 1\ncores: 1\nchannels: {nic: {bandwidth: 1GB/s, latency: 1us}}\n"
        "topology: {kind: fat_tree, down: [4, 4], up: [1, 4]}\n",
    )
    out = cli(
        "simulate", "run", "--cluster", str(path), "--nodes", "16", "--neutral", "--json",
        "--sweep", "taper=1,2,4", "--sweep", "switch-latency=100ns,1us",
        "--", "coll", "--ops", "alltoall", "--sizes", "1MiB",
        timeout=600, check=True,
    )  # fmt: skip
    result = json.loads(out.stdout)
    assert result["labels"] == [
        "taper=1", "taper=2", "taper=4", "switch_latency=100ns", "switch_latency=1us"
    ]  # fmt: skip
    (point,) = result["points"]
    full, half, quarter, fast, slow = point["times_s"]
    assert half / full > 1.5 and quarter / full == pytest.approx(3.4, rel=0.15)
    assert slow / fast == pytest.approx(1.0, abs=0.05)
    report = tmp_path / "what-if.html"
    cli("report", *map(str, result["runs"]), "-o", str(report), check=True)
    html = report.read_text()
    assert "Sweep of taper" in html and "Sweep of switch_latency" in html
    matters = html[html.index("What matters") :]
    matters = matters[: matters.index("</ul>")]
    assert "taper 1 to 4 moves alltoall 1 MiB" in matters and "taper matters most" in matters
