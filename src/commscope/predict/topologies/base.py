"""What every topology hands the predictor: its leaves, and the error builder its parser takes."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

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
