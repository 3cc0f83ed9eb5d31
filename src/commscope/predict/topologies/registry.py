"""The topologies a model file may name, by their ``kind:``, and the reader of its section.

A new topology is a module of its own with a class that has :class:`~.base.Topology`, and
one entry in ``TOPOLOGIES`` here.
"""

from __future__ import annotations

from typing import Any

from commscope.predict.topologies.base import Fail, Topology
from commscope.predict.topologies.dragonfly import Dragonfly
from commscope.predict.topologies.fat_tree import FatTree
from commscope.predict.topologies.torus import Torus

# In the order the message for a missing or unknown kind lists them.
TOPOLOGIES: tuple[type[Topology], ...] = (FatTree, Dragonfly, Torus)
BY_KIND = {topology.kind: topology for topology in TOPOLOGIES}  # a model file's kind: -> its class
# SimGrid's memory for a platform grows with its links (each cable an up and a down link):
# ~0.7 KB a link (4,096-node fat trees of 8,736 and 73,728 links loaded in 48 and 94 MB;
# bench/platform_scale.py). Four million links take ~3 GB: above that, a platform would not
# fit a usual machine's memory beside the simulated ranks.
MAX_PLATFORM_LINKS = 4_000_000


def parse(data: Any, fail: Fail) -> Topology:
    """A topology from a model file's ``topology:`` section.

    Args:
        data: the decoded section.
        fail: builds the error for a field and a message (it names the file).

    Raises:
        PredictError: a key is missing, unknown or inconsistent, or the platform would not
            fit in memory (one line naming the key and the fix).
    """
    if not isinstance(data, dict) or data.get("kind") not in BY_KIND:
        raise fail("topology.kind", f"give the kind of network: {', '.join(BY_KIND)}")
    kind = str(data["kind"])
    keys = BY_KIND[kind].yaml_keys
    for key in data:
        if key not in keys:
            raise fail(
                f"topology.{key}", f"unknown field of a {kind}; expected one of {', '.join(keys)}"
            )
    topo = BY_KIND[kind].from_yaml(data, fail)
    if topo.platform_links() > MAX_PLATFORM_LINKS:
        raise fail(
            "topology",
            f"its SimGrid platform would hold {topo.platform_links():,} links, more than the"
            f" {MAX_PLATFORM_LINKS:,} that fit in memory; give fewer nodes, levels or"
            " parallel links",
        )
    return topo
