"""Fat tree, dragonfly and torus models under SimGrid: the routes SimGrid computes are the hops
the model counts, and SMPI runs on them measure what those hops imply."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import numpy as np
import pytest

from commscope.data.store import Store
from commscope.predict.model_yaml import load_model
from commscope.simulate.params import params_for
from commscope.simulate.platform import platform_xml
from tests.conftest import CLI
from tests.simgrid.conftest import GIGE, LINK_S, model

pytestmark = pytest.mark.simgrid
NIC = f"channels: {{nic: {{bandwidth: 125MB/s, latency: {LINK_S * 1e6:g}us}}}}\n"
TOPOLOGIES = {
    "fat_tree": "{kind: fat_tree, down: [2, 4, 2], up: [1, 2, 2], links: [1, 2, 1]}",
    "dragonfly": "{kind: dragonfly, groups: 3, chassis: 2, routers: 3, nodes_per_router: 2}",
    "torus": "{kind: torus, dims: [3, 4, 2]}",
}


@pytest.fixture(scope="module")
def routes(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small C program that prints SimGrid's route (links, latency) of every node pair."""
    out = tmp_path_factory.mktemp("routes") / "route_latency"
    source = Path(__file__).with_name("route_latency.c")
    subprocess.run(["cc", "-O1", "-o", str(out), str(source), "-lsimgrid"], check=True)
    return out


@pytest.mark.parametrize("kind", sorted(TOPOLOGIES))
def test_simgrid_routes_every_pair_over_the_hops_the_model_counts(
    routes: Path, tmp_path: Path, kind: str
) -> None:
    path = model(tmp_path, f"sockets: 1\ncores: 2\n{NIC}topology: {TOPOLOGIES[kind]}\n")
    m = load_model(path)
    platform = tmp_path / "platform.xml"
    platform.write_text(platform_xml(m, params_for(m)))
    done = subprocess.run(
        [str(routes), str(platform), str(m.nodes), "--log=root.thres:critical"],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    table = np.loadtxt(done.stdout.splitlines(), ndmin=2)
    a, b = table[:, 0].astype(np.int64), table[:, 1].astype(np.int64)
    assert len(table) == m.nodes**2
    between = a != b
    assert np.array_equal(table[between, 2], m.hops(a, b)[between])
    assert np.allclose(table[between, 3], m.latency_s(a, b)[between], rtol=1e-9)


@pytest.mark.parametrize("kind", ["dragonfly", "torus"])
def test_routes_counted_link_by_link_take_the_links_simgrid_routes_them_over(
    routes: Path, tmp_path: Path, kind: str
) -> None:
    # The predictor counts a dragonfly's and a torus' links one by one: every pair's route
    # must name the links SimGrid's own route crosses (between the two node links on a
    # dragonfly), in its order, each SimGrid link always under the same number and no
    # number under two links.
    path = model(tmp_path, f"sockets: 1\ncores: 2\n{NIC}topology: {TOPOLOGIES[kind]}\n")
    m = load_model(path)
    assert m.topology is not None
    platform = tmp_path / "platform.xml"
    platform.write_text(platform_xml(m, params_for(m)))
    done = subprocess.run(
        [str(routes), str(platform), str(m.nodes), "names", "--log=root.thres:critical"],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    number: dict[str, int] = {}
    pairs = 0
    for line in done.stdout.splitlines():
        a, b, _, _, *names = line.split()
        if a == b:
            continue
        ours = [int(k) for k in m.topology.route(int(a), int(b))[:, 0] if k >= 0]
        inner = names[1:-1] if m.topology.node_links else names
        assert len(inner) == len(ours), line
        for name, k in zip(inner, ours, strict=True):
            assert number.setdefault(name, k) == k, line
        pairs += 1
    assert pairs == m.nodes * (m.nodes - 1)
    assert len(set(number.values())) == len(number)  # one link per number
    if kind == "dragonfly":  # every router, chassis and group link appears on some route
        assert len(number) == m.topology.platform_links() - 2 * m.nodes


def test_smpi_measures_hops_times_link_latency_on_a_fat_tree(cli: CLI, tmp_path: Path) -> None:
    # 16 nodes, two levels: 8 leaves of 2 nodes under 2 spines. Four nodes on two leaves:
    # a pair on one leaf crosses 2 links, a pair across leaves 4 (up to a spine and down).
    path = model(
        tmp_path,
        f"sockets: 1\ncores: 1\n{NIC}topology: {{kind: fat_tree, down: [2, 8], up: [1, 2]}}\n",
    )
    out = cli("simulate", "run", "--cluster", str(path), "--nodes", "4", "--neutral", "--json",
              "--", "matrix", "--np", "4", "--sizes", "64KiB", "--samples", "2",
              check=True, timeout=600)  # fmt: skip
    run = json.loads(out.stdout)["run"]
    with Store.open(cli.store) as store:
        points = store.measurements(run)
        sim = store.get_run(run).request["simulate"]
    assert 'topology="FAT_TREE" topo_parameters="2;2,8;1,2;1,1"' in sim["platform_xml"]
    lat = [p for p in points if getattr(p, "op", "") == "matrix_lat"]
    assert len(lat) == 12
    hops = set()
    for p in lat:
        a, b = p.ranks  # one rank per node, node i holds rank i
        links = 2 if a // 2 == b // 2 else 4
        hops.add(links)
        one_way = links * LINK_S + 8 / GIGE
        assert one_way <= p.median_s <= one_way * 1.01, (p.pair, p.median_s)
    assert hops == {2, 4}


@pytest.mark.parametrize("kind", ["dragonfly", "torus"])
def test_smpirun_runs_on_a_dragonfly_and_a_torus(cli: CLI, tmp_path: Path, kind: str) -> None:
    path = model(tmp_path, f"sockets: 1\ncores: 2\n{NIC}topology: {TOPOLOGIES[kind]}\n")
    out = cli("simulate", "run", "--cluster", str(path), "--neutral", "--json", "--",
              "p2p", "--ops", "pingpong", "--sizes", "8", check=True, timeout=300)  # fmt: skip
    run = json.loads(out.stdout)["run"]
    with Store.open(cli.store) as store:
        points = [p for p in store.points(run) if p.op == "pingpong" and p.pair == "inter-node"]
    # Nodes 0 and 1 share a router (dragonfly) or are neighbours on a ring (torus).
    links = 2 if kind == "dragonfly" else 1
    assert points and points[0].median_s == pytest.approx(links * LINK_S + 8 / GIGE, rel=0.01)
