"""Network topologies of a cluster model: fat tree, dragonfly and torus, as SimGrid builds them.

Each is one SimGrid 3.32 cluster zone (``<cluster topology="FAT_TREE" topo_parameters=...>``,
``DRAGONFLY``, ``TORUS``): SimGrid computes every route from the parameters, so a platform of
N nodes is written in time and memory linear in N. In such a zone every link has one rate and
one latency (the model's NIC); a level is made wider with more links, not faster ones: a fat
tree's taper is its down ports over its up ports.

The predictor needs, for a pair of nodes, how many links a transfer crosses (each one NIC
latency) and which nodes share a switch's uplink. Both are given in closed form, in the
order SimGrid routes (its own code, not a shortest path search), for arrays of node pairs;
each topology's module says how: ``fat_tree``, ``dragonfly``, ``torus``.

Transfers inside a node take the zone's loopback, which SimGrid makes a FATPIPE: on these
models the ranks of one node do not contend for its memory.
"""

from __future__ import annotations

from typing import Any

from commscope.predict.topologies import dragonfly, fat_tree, torus
from commscope.predict.topologies.base import Fail, Leaves
from commscope.predict.topologies.dragonfly import Dragonfly
from commscope.predict.topologies.fat_tree import FatTree
from commscope.predict.topologies.torus import Torus

__all__ = ["KINDS", "Dragonfly", "Fail", "FatTree", "Leaves", "Topology", "Torus", "parse"]

KINDS = ("fat_tree", "dragonfly", "torus")
# SimGrid's memory for a platform grows with its links (each cable an up and a down link):
# ~0.7 KB a link (4,096-node fat trees of 8,736 and 73,728 links loaded in 48 and 94 MB;
# bench/platform_scale.py). Four million links take ~3 GB: above that, a platform would not
# fit a usual machine's memory beside the simulated ranks.
MAX_PLATFORM_LINKS = 4_000_000

Topology = FatTree | Dragonfly | Torus

_KEYS = {"fat_tree": fat_tree.KEYS, "dragonfly": dragonfly.KEYS, "torus": torus.KEYS}


def parse(data: Any, fail: Fail) -> Topology:
    """A topology from a model file's ``topology:`` section.

    Args:
        data: the decoded section.
        fail: builds the error for a field and a message (it names the file).

    Raises:
        PredictError: a key is missing, unknown or inconsistent, or the platform would not
            fit in memory (one line naming the key and the fix).
    """
    if not isinstance(data, dict) or data.get("kind") not in KINDS:
        raise fail("topology.kind", f"give the kind of network: {', '.join(KINDS)}")
    kind = str(data["kind"])
    for key in data:
        if key not in _KEYS[kind]:
            raise fail(
                f"topology.{key}", f"unknown field of a {kind}; expected one of"
                f" {', '.join(_KEYS[kind])}"
            )  # fmt: skip
    topo: Topology = (
        fat_tree.parse(data, fail)
        if kind == "fat_tree"
        else dragonfly.parse(data, fail)
        if kind == "dragonfly"
        else torus.parse(data, fail)
    )
    if topo.platform_links() > MAX_PLATFORM_LINKS:
        raise fail(
            "topology",
            f"its SimGrid platform would hold {topo.platform_links():,} links, more than the"
            f" {MAX_PLATFORM_LINKS:,} that fit in memory; give fewer nodes, levels or"
            " parallel links",
        )
    return topo
