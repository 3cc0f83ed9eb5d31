"""What the predictor and the simulator ask of a topology, whichever kind it is.

:class:`Topology` states it; each topology's module (``fat_tree``, ``dragonfly``, ``torus``)
holds one frozen dataclass that has it, and ``registry`` finds that class by the ``kind:`` a
model file names.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol

import numpy as np
from numpy.typing import ArrayLike, NDArray

from commscope.errors import PredictError

Fail = Callable[[str, str], PredictError]


@dataclass(frozen=True)
class Leaves:
    """Nodes grouped behind switches for channel counting: a leaf's nodes are consecutive.

    Attributes:
        name: name prefix of each switch (``leaf``, ``group``).
        size: nodes per switch.
        uplink_links: links of one switch's uplink (each at the NIC rate).
    """

    name: str
    size: int
    uplink_links: int


class Topology(Protocol):
    """A modelled network: one SimGrid cluster zone whose routes the predictor counts.

    Nodes are numbered 0 .. ``nodes`` - 1 in the topology's own order; every link has the
    model's NIC rate and latency.

    Attributes:
        kind: the ``kind:`` of its ``topology:`` section, the name it is registered under.
        yaml_keys: every key its section may hold (``kind`` too); others are refused.
        node_links: whether each node has a link of its own into the network (a NIC);
            a torus node sends straight onto its ring links.
    """

    kind: ClassVar[str]
    yaml_keys: ClassVar[tuple[str, ...]]
    node_links: ClassVar[bool]

    @classmethod
    def from_yaml(cls, data: dict[str, Any], fail: Fail) -> Topology:
        """The topology of a ``topology:`` section whose keys are all of ``yaml_keys``.

        Raises:
            PredictError: built by ``fail`` for a missing or inconsistent field.
        """
        ...

    @property
    def nodes(self) -> int:
        """Nodes the topology holds."""
        ...

    def hops(self, a: ArrayLike, b: ArrayLike) -> NDArray[np.int64]:
        """Links crossed from node ``a`` to node ``b`` (arrays), node links included."""
        ...

    def inner_links(self) -> NDArray[np.float64] | None:
        """Per link counted one by one, NIC rate / its rate; None where none is."""
        ...

    def route(self, a: ArrayLike, b: ArrayLike) -> NDArray[np.int64]:
        """Links of :meth:`inner_links` from ``a`` to ``b``: one row per hop, -1 for none."""
        ...

    def leaves(self) -> Leaves | None:
        """The switches whose uplinks nodes share; None where there are none."""
        ...

    def simgrid(self) -> tuple[str, str]:
        """SimGrid's topology name and ``topo_parameters``."""
        ...

    def platform_links(self) -> int:
        """Link objects SimGrid creates for it (what its platform's memory grows with)."""
        ...

    def describe(self) -> str:
        """One phrase for messages and model summaries."""
        ...

    def to_yaml(self) -> dict[str, Any]:
        """The ``topology:`` section, which :meth:`from_yaml` reads back."""
        ...
