"""JSON output as strict JSON: no ``NaN``, ``Infinity`` or ``-Infinity``.

Python's :func:`json.dumps` writes them by default, and they are not JSON: ``jq``, browsers and
most other readers refuse the whole document. Every ``--json`` output goes through
:func:`text`, where a number that is not finite (a rate with a zero time, a fit with nothing to
fit, a median of no valid launch) becomes ``null``, as a figure that is not known.
"""

from __future__ import annotations

import json
import math
from typing import Any


def finite(data: Any) -> Any:
    """``data`` with every float that is not finite replaced by None, inside dicts and lists."""
    if isinstance(data, float):
        return data if math.isfinite(data) else None
    if isinstance(data, dict):
        return {key: finite(value) for key, value in data.items()}
    if isinstance(data, (list, tuple)):
        return [finite(value) for value in data]
    return data


def text(data: Any, indent: int | None = 2) -> str:
    """``data`` as strict JSON; numbers that are not finite are written as null."""
    return json.dumps(finite(data), indent=indent, allow_nan=False)


def record_line(data: Any) -> str:
    """A stored record as one line of strict JSON, unchanged.

    A raw record is what was measured: a sample written as null would pass for a record
    that was never taken, so one that is not finite is refused rather than changed.

    Raises:
        ValueError: ``data`` holds NaN or an infinity.
    """
    return json.dumps(data, allow_nan=False) + "\n"
