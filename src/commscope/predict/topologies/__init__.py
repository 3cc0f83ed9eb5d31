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

``base.Topology`` states what every topology has; ``registry`` lists them by the ``kind:`` of
a model file's ``topology:`` section and reads that section (:func:`parse`).

Transfers inside a node take the zone's loopback, which SimGrid makes a FATPIPE: on these
models the ranks of one node do not contend for its memory.
"""

from __future__ import annotations

from commscope.predict.topologies.base import Fail, Leaves, Topology
from commscope.predict.topologies.dragonfly import Dragonfly
from commscope.predict.topologies.fat_tree import FatTree
from commscope.predict.topologies.registry import BY_KIND, MAX_PLATFORM_LINKS, TOPOLOGIES, parse
from commscope.predict.topologies.torus import Torus

__all__ = [
    "BY_KIND",
    "MAX_PLATFORM_LINKS",
    "TOPOLOGIES",
    "Dragonfly",
    "Fail",
    "FatTree",
    "Leaves",
    "Topology",
    "Torus",
    "parse",
]
