"""What the topologies share: node pairs as arrays, and counts read from a model file."""

from __future__ import annotations

from math import prod
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from commscope import limits, strict
from commscope.predict.topologies.base import Fail

MAX_COUNT = limits.MAX_MODEL_NODES  # any one count: ports, links, dimensions, groups


def pairs(a: ArrayLike, b: ArrayLike) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """Source and target nodes as integer arrays."""
    return np.asarray(a, dtype=np.int64), np.asarray(b, dtype=np.int64)


def count(value: Any, field: str, fail: Fail, most: int = MAX_COUNT) -> int:
    """A whole number from 1 to ``most``, else the error ``fail`` builds for ``field``."""
    try:
        return strict.check_whole(value, 1, most)
    except strict.NumberError as err:
        raise fail(field, str(err)) from None


def fits(counts: tuple[int, ...], field: str, fail: Fail) -> None:
    """Refuse counts whose product, the topology's nodes, is more than a model holds."""
    if prod(counts) > limits.MAX_MODEL_NODES:
        raise fail(
            field,
            f"{' x '.join(map(str, counts))} = {prod(counts)} nodes, above the"
            f" {limits.MAX_MODEL_NODES} a model holds; lower the counts",
        )
