"""Fixtures of the virtual-cluster tests."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from commscope.measure import vcluster
from tests.cluster.test_vcluster import assert_nothing_left
from tests.conftest import need, no_vcluster_up


@pytest.fixture
def cluster(request) -> Iterator[vcluster.ClusterState]:
    """A vcluster of ``request.param`` = (nodes, rate[, services][, {up's options}]), always
    removed afterwards."""
    need(os.geteuid() == 0, "vcluster tests need root (network namespaces, bridge, /etc/hosts)")
    no_vcluster_up()
    nodes, rate, *rest = request.param
    options = rest.pop() if rest and isinstance(rest[-1], dict) else {}
    try:
        yield vcluster.up(nodes, rate, services=tuple(rest[0]) if rest else (), **options)
    finally:
        vcluster.down()
        assert_nothing_left()
