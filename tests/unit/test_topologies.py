"""Fat tree, dragonfly and torus in the cluster model: hops in closed form, the platform as one
SimGrid cluster zone (linear in the nodes), and bad parameters refused in one line."""

from __future__ import annotations

import time
import tracemalloc
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from commscope.errors import InputError, PredictError
from commscope.predict.model_yaml import model_from_dict
from commscope.predict.topologies import BY_KIND, Dragonfly, FatTree, Topology, Torus, parse
from commscope.simulate.params import params_for
from commscope.simulate.platform import platform_xml, route_links
from tests.fuzz.harness import assert_one_line_refusal, call

NIC = {"nic": {"bandwidth": "1GB/s", "latency": "1us"}}


def model(topology: dict[str, Any], **extra: Any):
    return model_from_dict(
        {"sockets": 1, "cores": 2, "channels": NIC, "topology": topology, **extra}, "m.yaml"
    )


def test_fat_tree_hops_climb_to_the_level_where_two_nodes_meet() -> None:
    tree = FatTree(down=(4, 2, 2), up=(1, 2, 2), links=(1, 1, 1))
    assert tree.nodes == 16 and [tree.switches(i) for i in (1, 2, 3)] == [4, 4, 4]
    assert tree.hops(0, 0) == 0
    assert tree.hops(0, 3) == 2  # one leaf
    assert tree.hops(0, 4) == 4  # two leaves under one level-2 switch
    assert tree.hops(0, 8) == 6 and tree.hops(15, 0) == 6
    assert tree.simgrid() == ("FAT_TREE", "3;4,2,2;1,2,2;1,1,1")


def test_dragonfly_hops_follow_simgrids_minimal_routes() -> None:
    fly = Dragonfly(groups=3, chassis=2, routers=3, nodes_per_router=2)
    assert fly.nodes == 36
    assert fly.hops(0, 1) == 2  # one router
    assert fly.hops(0, 2) == 3  # router link in chassis 0
    assert fly.hops(0, 6) == 3  # chassis link to the same router number
    assert fly.hops(0, 8) == 4  # router link, then chassis link
    # Group 0 to group 1: from router 0 to router 1 (it holds the link to group 1), across,
    # landing on router 0 of group 1 (its link to group 0); one router link more to router 1.
    assert fly.hops(0, 12) == 4
    assert fly.hops(0, 14) == 5
    assert fly.simgrid() == ("DRAGONFLY", "3,1;2,1;3,1;2")


@pytest.mark.parametrize(
    "topology",
    [
        Dragonfly(groups=3, chassis=2, routers=3, nodes_per_router=2),
        Dragonfly(groups=4, chassis=3, routers=5, nodes_per_router=1, group_links=2),
        Torus((4, 3)),
        Torus((3, 4, 2)),
        Torus((5,)),
    ],
    ids=repr,
)
def test_hops_count_the_links_of_each_route(topology: Dragonfly | Torus) -> None:
    # The closed-form hops and the link-by-link route agree for every pair of nodes.
    a, b = (v.ravel() for v in np.meshgrid(np.arange(topology.nodes), np.arange(topology.nodes)))
    route = topology.route(a, b)
    own = 2 if topology.node_links else 0
    assert np.array_equal(topology.hops(a, b), np.where(a == b, 0, own + (route >= 0).sum(0)))
    assert route.max() < topology.inner_links().size  # type: ignore[union-attr]


def test_torus_hops_are_ring_distances() -> None:
    torus = Torus((4, 3))
    assert torus.hops(0, 3) == 1  # wraps round
    assert torus.hops(0, 2) == 2
    assert torus.hops(0, 4 * 2 + 2) == 3
    assert torus.simgrid() == ("TORUS", "4,3")


@pytest.mark.parametrize(
    "topology",
    [
        FatTree(down=(4, 2), up=(1, 2), links=(1, 3), ports=16),
        Dragonfly(groups=3, chassis=2, routers=3, nodes_per_router=2, router_links=2),
        Torus((4, 3)),
    ],
    ids=repr,
)
def test_each_topology_is_registered_by_its_kind_and_reads_back_what_it_writes(
    topology: Topology,
) -> None:
    assert BY_KIND[topology.kind] is type(topology)
    assert set(topology.to_yaml()) <= set(topology.yaml_keys)
    assert parse(topology.to_yaml(), lambda field, why: PredictError(f"{field}: {why}")) == topology


def test_the_model_takes_its_switches_and_latency_from_the_topology() -> None:
    m = model({"kind": "fat_tree", "down": [4, 4], "up": [1, 2], "links": [1, 3]})
    assert m.node_names[-1] == "node15" and len(m.switches) == 4
    assert m.switches[1].nodes == (4, 5, 6, 7)
    assert m.switches[0].uplink.bandwidth_Bps == pytest.approx(6e9)  # 2 up x 3 links
    assert m.uplink_ratios()[0] == pytest.approx(1 / 6)
    assert m.latency_s(0, 5) == pytest.approx(4e-6)
    assert list(m.hops(np.array([0, 0, 0]), np.array([0, 1, 4]))) == [0, 2, 4]
    assert "taper 0.667:1" in m.describe()
    assert not model({"kind": "torus", "dims": [2, 2]}).switches


def test_flat_and_listed_models_count_their_hops_too() -> None:
    flat = model_from_dict({"nodes": 3, "sockets": 1, "cores": 1, "channels": NIC}, "f")
    assert list(flat.hops([0, 0], [0, 2])) == [0, 2]
    two = model_from_dict(
        {
            "nodes": 4,
            "sockets": 1,
            "cores": 1,
            "channels": NIC,
            "switches": [
                {"nodes": "0-1", "uplink": {"bandwidth": "1GB/s", "latency": "3us"}},
                {"nodes": "2-3", "uplink": {"bandwidth": "1GB/s", "latency": "3us"}},
            ],
        },
        "t",
    )
    assert list(two.hops([0, 0], [1, 2])) == [2, 4]
    assert two.latency_s(0, 2) == pytest.approx(8e-6)


@pytest.mark.parametrize(
    ("topology", "kind", "parameters"),
    [
        ({"kind": "fat_tree", "down": [4, 4], "up": [1, 2]}, "FAT_TREE", "2;4,4;1,2;1,1"),
        (
            {"kind": "dragonfly", "groups": 2, "chassis": 2, "routers": 2, "nodes_per_router": 2},
            "DRAGONFLY",
            "2,1;2,1;2,1;2",
        ),
        ({"kind": "torus", "dims": [4, 4]}, "TORUS", "4,4"),
    ],
)
def test_the_platform_is_one_cluster_zone(topology, kind, parameters) -> None:
    m = model(topology)
    xml = platform_xml(m, params_for(m, {"switch_latency": "0.5us"}))
    assert f'topology="{kind}" topo_parameters="{parameters}"' in xml
    assert 'radical="0-15"' in xml and 'bw="1e+09Bps" lat="1.5e-06s"' in xml
    assert "<route" not in xml
    with pytest.raises(InputError, match="per-link loads"):
        route_links(m, 0, 1)


def test_a_10000_node_model_is_written_in_linear_time_and_memory() -> None:
    for doc in (
        {"topology": {"kind": "fat_tree", "down": [25, 20, 20], "up": [1, 10, 10]}},
        {"nodes": 10_000},
    ):
        m = model_from_dict({"sockets": 2, "cores": 8, "channels": NIC, **doc}, "big")
        start = time.monotonic()
        tracemalloc.start()
        xml = platform_xml(m, params_for(m))
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        assert time.monotonic() - start < 5 and peak < 100e6
        assert xml.count("<route") <= 10_000


@pytest.mark.parametrize(
    ("doc", "field", "fix"),
    [
        ({"kind": "fat_tree", "down": [4, 4], "up": [1, 2, 2]}, "topology.up", "one per level"),
        ({"kind": "fat_tree", "down": [4, 0], "up": [1, 2]}, "topology.down[1]", "from 1"),
        ({"kind": "fat_tree", "down": [4], "up": [1], "levels": 2}, "topology.down", "per level"),
        (
            {"kind": "fat_tree", "down": [16, 4], "up": [1, 8], "links": [1, 2], "ports": 24},
            "topology.ports",
            "16 down x 1 link(s) + 8 up x 2 link(s)",
        ),
        (
            {"kind": "dragonfly", "groups": 4, "chassis": 1, "routers": 2, "nodes_per_router": 1},
            "topology.groups",
            "raise topology.routers",
        ),
        ({"kind": "dragonfly", "groups": 2}, "topology.chassis", "missing"),
        ({"kind": "torus", "dims": [256, 256, 2]}, "topology.dims", "lower the counts"),
        ({"kind": "mesh"}, "topology.kind", "fat_tree, dragonfly, torus"),
        ({"kind": "torus", "dims": [4], "down": [2]}, "topology.down", "unknown field"),
        (
            {"kind": "fat_tree", "down": [64, 64, 16], "up": [1, 64, 64], "links": [1, 16, 16]},
            "topology",
            "fit in memory",
        ),
    ],
)
def test_inconsistent_topologies_are_refused_naming_the_key(doc, field, fix) -> None:
    with pytest.raises(PredictError) as err:
        model(doc)
    text = str(err.value)
    assert text.startswith(f"m.yaml: {field}: ") and fix in text and "\n" not in text


def test_node_counts_and_rates_must_match_the_topology() -> None:
    tree = {"kind": "fat_tree", "down": [4, 4], "up": [1, 2]}
    with pytest.raises(PredictError, match=r"m.yaml: nodes: 12, but .* set nodes: 16"):
        model(tree, nodes=12)
    with pytest.raises(PredictError, match="nodes: with a topology give a count"):
        model(tree, nodes=["a", "b"])
    assert model(tree, nodes=16).nodes == 16
    with pytest.raises(PredictError, match=r"channels.nic.bandwidth: 0 is not a bandwidth"):
        model_from_dict(
            {"sockets": 1, "cores": 1, "channels": {"nic": {"bandwidth": 0}}, "topology": tree},
            "m.yaml",
        )
    with pytest.raises(PredictError, match="channels.nic.bandwidth: missing"):
        model_from_dict({"sockets": 1, "cores": 1, "topology": tree}, "m.yaml")
    with pytest.raises(PredictError, match="switches: give either switches or a topology"):
        model(tree, switches=[{"nodes": "0-15", "uplink": {"bandwidth": 1e9}}])


def test_simulate_refuses_a_bad_topology_in_one_line_and_stores_nothing(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(
        "sockets: 1\ncores: 1\nchannels: {nic: {bandwidth: 1GB/s}}\n"
        "topology: {kind: fat_tree, down: [4, 4], up: [1, 2], links: [1]}\n"
    )
    store = tmp_path / "s.sqlite"
    outcome = call(None, store, "simulate", "run", "--cluster", str(path), "--", "p2p")
    assert_one_line_refusal(outcome)
    assert "topology.links: 1 values for 2 level(s)" in outcome.err
    assert not store.exists()


def test_a_taper_sweep_cuts_the_leaves_uplinks_and_refuses_what_does_not_divide() -> None:
    from commscope.errors import UsageError
    from commscope.simulate.sweeps import expand_sweeps

    full = model({"kind": "fat_tree", "down": [8, 4], "up": [1, 8], "links": [1, 1]})
    params = params_for(full)
    runs = expand_sweeps(["taper=1,2,4:1", "switch-latency=1us"], full, params)
    assert [r.label for r in runs] == ["taper=1", "taper=2", "taper=4:1", "switch_latency=1us"]
    tapers = [r.model.topology.taper() for r in runs[:3]]
    assert tapers == [[1.0], [2.0], [4.0]]
    # A leaf keeps its 8 nodes; its uplink is 8, 4 and 2 NIC links; the spine shrinks with it.
    assert [r.model.switches[0].uplink.bandwidth_Bps for r in runs[:3]] == [8e9, 4e9, 2e9]
    assert [r.model.topology.switches(2) for r in runs[:3]] == [8, 4, 2]
    assert [r.record["si_value"] for r in runs] == [1.0, 2.0, 4.0, 1e-6]
    assert runs[3].model is full and runs[3].params.switch_lat_s == 1e-6
    assert 'topo_parameters="2;8,4;1,2;1,1"' in platform_xml(runs[2].model, params)
    for bad, says in (
        ("taper=3", "whole number of uplinks"),
        ("taper=16", "whole number of uplinks"),
        ("taper=0", "positive ratio"),
        ("taper=two", "not a taper"),
    ):
        with pytest.raises(UsageError) as err:
            expand_sweeps([bad], full, params)
        assert says in str(err.value) and f"--sweep {bad}" in str(err.value)
    torus = model({"kind": "torus", "dims": [4, 4]})
    with pytest.raises(UsageError, match="fat_tree"):
        expand_sweeps(["taper=2"], torus, params_for(torus))
