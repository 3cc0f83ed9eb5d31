"""``--tolerance bw=5%,latency=20%``: the worsening each class of figure may show unremarked."""

from __future__ import annotations

from collections.abc import Iterable

from commscope.errors import UsageError
from commscope.strict import NumberError, real

FIX = "give CLASS=PERCENT pairs such as bw=5%,latency=20% (classes: {})"


def parse(text: str, names: Iterable[str]) -> dict[str, float]:
    """Read ``text`` into {class or figure name: share}; ``names`` are the accepted keys.

    Accepted keys: the tolerance classes, figure names and "all". A value is a percentage
    ("5%") or a share ("0.05"), above 0 and below 1000 %.

    Raises:
        UsageError: a pair is malformed, names no known key, or its value is out of range.
    """
    known = sorted(set(names) | {"all"})
    fix = FIX.format(", ".join(k for k in known if "_" not in k))
    out: dict[str, float] = {}
    for part in text.split(","):
        key, sep, value = (x.strip() for x in part.partition("="))
        if not sep or not key or not value:
            raise UsageError(f"--tolerance {text!r}: {part.strip()!r} is not CLASS=PERCENT; {fix}")
        if key not in known:
            raise UsageError(f"--tolerance {text!r}: unknown class {key!r}; {fix}")
        percent = value.endswith("%")
        try:
            number = real(value.removesuffix("%"), 0.0, 1000.0 if percent else 10.0, above=True)
        except NumberError as err:
            raise UsageError(f"--tolerance {key}={value}: {err}") from None
        out[key] = number / 100 if percent else number
    return out


def parse_share(text: str, option: str) -> float:
    """A share such as ``--max-detection-limit 50%`` or ``0.5``: above 0, at most 1000 %.

    Raises:
        UsageError: not a percentage or share in range.
    """
    value = text.strip()
    percent = value.endswith("%")
    try:
        number = real(value.removesuffix("%"), 0.0, 1000.0 if percent else 10.0, above=True)
    except NumberError as err:
        raise UsageError(f"{option} {text}: {err}; give a percentage such as 50%") from None
    return number / 100 if percent else number
