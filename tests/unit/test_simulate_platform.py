"""The platform writer on a two-level network: leaf switches joined by a spine."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from commscope.predict.model import ClusterModel, Link, Switch
from commscope.simulate.params import params_for
from commscope.simulate.platform import platform_xml, route_links


def two_level() -> ClusterModel:
    # 6 nodes under 3 leaves of 2; each leaf's uplink to the spine has 2 NICs' rate.
    return ClusterModel(
        "fabric",
        tuple(f"n{i}" for i in range(6)),
        1,
        4,
        nic=Link(1e9, 1e-6),
        switches=tuple(Switch(f"leaf{k}", (2 * k, 2 * k + 1), Link(2e9)) for k in range(3)),
    )


def test_routes_cross_the_spine_only_between_leaves() -> None:
    m = two_level()
    assert route_links(m, 0, 0) == ["n0-memory"]
    assert route_links(m, 2, 3) == ["n2-nic-up", "leaf1-fabric", "n3-nic-down"]
    assert route_links(m, 1, 4) == [
        "n1-nic-up",
        "leaf0-fabric",
        "leaf0-uplink-up",
        "core-fabric",
        "leaf2-uplink-down",
        "leaf2-fabric",
        "n4-nic-down",
    ]


def test_platform_declares_every_routed_link_with_its_rate() -> None:
    m = two_level()
    root = ET.fromstring(platform_xml(m, params_for(m)).split("\n", 2)[2])
    links = {e.get("id"): e for e in root.iter("link")}
    routes = {(r.get("src"), r.get("dst")): r for r in root.iter("route")}
    assert len(routes) == 36
    for (src, dst), route in routes.items():
        names = [c.get("id") for c in route.iter("link_ctn")]
        i, j = int(str(src)[1:]), int(str(dst)[1:])
        assert names == route_links(m, i, j)
        assert all(n in links for n in names)
    for k in range(3):
        for way in ("up", "down"):
            up = links[f"leaf{k}-uplink-{way}"]
            assert up.get("bandwidth") == "2e+09Bps" and up.get("sharing_policy") == "SHARED"
    assert links["n0-nic-up"].get("bandwidth") == "1e+09Bps"
