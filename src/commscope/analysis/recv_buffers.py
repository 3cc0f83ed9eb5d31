"""Receive buffers of the bw and bibw windows: one reused, or one per message.

bw and bibw post a window of receives (64 by default). With ``one`` every receive of the window
lands in the same buffer, as osu_bw and IMB's Uniband/Biband do: the receiver touches one
message's worth of memory. With ``each`` every message in flight has its own buffer, as
``osu_bw -b multiple`` does: window x size bytes, which outgrows the last-level cache at large
sizes (64 x 1 MiB = 64 MiB). The engine writes the ``each`` series as ``bw_each`` and
``bibw_each``, so the two policies never share a key in a run, an analysis or a comparison.

Runs from before the option recorded no policy; their ``bw`` and ``bibw`` used one buffer
per message, and :func:`run_policies` says so.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from typing import Any

from commscope.data.records import Point
from commscope.units import percent_text, rate_text, size_text

POLICIES = ("one", "each")
DEFAULT = "one"
WINDOWED = ("bw", "bibw")
MATERIAL = 0.10  # a difference of medians at least this large...
ALPHA = 0.01  # ...and a Mann-Whitney p-value below this is material
LEGACY = ("each",)  # what bw and bibw did before the option existed

_DESCRIPTIONS = {
    "one": "one receive buffer reused by the whole window (as osu_bw and IMB)",
    "each": "one receive buffer per message in flight (as osu_bw -b multiple)",
}


def series(op: str, policy: str) -> str:
    """The op name a windowed operation is stored under: ``bw`` or ``bw_each``."""
    return op if policy == "one" else f"{op}_each"


def base_op(op: str) -> str:
    """``bw_each`` -> ``bw``; other names unchanged."""
    return op.removesuffix("_each")


def policy_of(op: str) -> str | None:
    """The receive-buffer policy an op name stands for; None for non-windowed ops."""
    if op.endswith("_each") and base_op(op) in WINDOWED:
        return "each"
    return "one" if op in WINDOWED else None


def parse(text: str) -> tuple[str, ...]:
    """``"one,each"`` -> ("one", "each").

    Raises:
        ValueError: an unknown policy, a repeated one, or an empty list.
    """
    items = tuple(t.strip() for t in text.split(","))
    bad = [t for t in items if t not in POLICIES]
    if bad or not items or len(set(items)) != len(items):
        raise ValueError(f"{text!r}: give one, each, or both as one,each")
    return items


def run_policies(header: Mapping[str, Any] | None, points: Sequence[Point] = ()) -> tuple[str, ...]:
    """The policies a run measured bw/bibw with, from its engine header's options.

    A run whose header lacks the option but which has windowed points is from before it
    existed: its bw and bibw used one buffer per message. Empty when no windowed point is
    given or the run has no engine header (imported output: the other tool's own policy).
    """
    if not header or not any(policy_of(p.op) for p in points):
        return ()
    recorded = (header.get("options") or {}).get("recv_buffers")
    return parse(str(recorded)) if recorded else LEGACY


def recorded(header: Mapping[str, Any] | None) -> bool:
    """Whether the run's header names its receive-buffer policy."""
    return bool(((header or {}).get("options") or {}).get("recv_buffers"))


def describe(policies: Sequence[str], recorded: bool = True) -> str:
    """Which receive buffers bw and bibw used, as a phrase ("" when none ran)."""
    if not policies:
        return ""
    if not recorded:
        return (
            f"{_DESCRIPTIONS['each']}; recorded before --recv-buffers existed, when bw and"
            " bibw always did so"
        )
    if len(policies) > 1:
        return (
            f"measured both ways: {_DESCRIPTIONS['one']} as bw and bibw, and"
            f" {_DESCRIPTIONS['each']} as bw_each and bibw_each"
        )
    if policies[0] == "each":
        return f"{_DESCRIPTIONS['each']}, stored as bw_each and bibw_each"
    return _DESCRIPTIONS["one"]


@dataclass(frozen=True)
class Contrast:
    """One pair's bw (or bibw) with one receive buffer against one per message.

    The figures are at the size where the medians differ most among the sizes where the
    difference is significant (or where they differ most, when none is).
    """

    pair: str
    op: str  # "bw" or "bibw"
    bytes: int
    one_Bps: float  # bandwidth of one message at the median, one buffer reused
    each_Bps: float  # the same with one buffer per message
    window: int  # messages in flight of the per-message series at that size
    relative: float  # each / one - 1: negative when per-message buffers are slower
    p_value: float | None
    material: bool  # |relative| >= MATERIAL and p < ALPHA
    sizes: int  # sizes measured under both policies

    @property
    def footprint_bytes(self) -> int:
        """Receive memory the per-message series cycles through: window x size."""
        return self.window * self.bytes

    def reason(self) -> str:
        """One line: the two rates and the cache footprint behind the difference."""
        if not self.material:
            return (
                f"{self.pair} {self.op}: one receive buffer per message and one reused read"
                f" the same within {percent_text(MATERIAL)} or noise at all {self.sizes}"
                f" sizes (largest difference {percent_text(abs(self.relative))} at"
                f" {size_text(self.bytes)})"
            )
        return (
            f"{self.pair} {self.op} at {size_text(self.bytes)}: {rate_text(self.each_Bps)}"
            f" with one receive buffer per message against {rate_text(self.one_Bps)} with"
            f" one reused ({self.relative * 100:+.0f} %); cache footprint:"
            f" {self.window} messages x {size_text(self.bytes)} ="
            f" {size_text(self.footprint_bytes)} of receive buffers against"
            f" {size_text(self.bytes)}"
        )

    def to_json(self) -> dict[str, Any]:
        """Plain dict with full key names, the reason included."""
        return {**asdict(self), "footprint_bytes": self.footprint_bytes, "reason": self.reason()}


def contrasts(points: Sequence[Point]) -> list[Contrast]:
    """Every (pair, bw or bibw) measured under both policies, compared size by size.

    Per size the median time of one message of each series is compared (so their windows may
    differ: ``each`` caps its receive slots, ``one`` does not) with a Mann-Whitney test on the
    raw samples. The size reported is the one with the largest material difference, else the
    largest difference.
    """
    # numpy and SciPy only here: the CLI checks --recv-buffers with this module at start.
    import numpy as np

    from commscope.analysis.compare import mann_whitney_p
    from commscope.analysis.curve import message_samples

    by: dict[tuple[str, str, int], Point] = {(p.op, p.pair, p.bytes): p for p in points}
    out = []
    pairs = sorted({p.pair for p in points})
    for op in WINDOWED:
        for pair in pairs:
            found = []
            for (name, where, size), one in by.items():
                each = by.get((series(op, "each"), pair, size))
                if name != op or where != pair or size == 0 or each is None:
                    continue
                a, b = message_samples(one), message_samples(each)
                if a.size == 0 or b.size == 0:
                    continue
                t_one, t_each = float(np.median(a)), float(np.median(b))
                rel = t_one / t_each - 1.0  # bandwidth ratio each / one, minus 1
                p = mann_whitney_p(list(a), list(b))
                material = abs(rel) >= MATERIAL and p is not None and p < ALPHA
                found.append(
                    Contrast(
                        pair,
                        op,
                        size,
                        size / t_one,
                        size / t_each,
                        each.window or 1,
                        rel,
                        p,
                        material,
                        0,
                    )
                )
            if not found:
                continue
            best = max(found, key=lambda c: (c.material, abs(c.relative)))
            out.append(replace(best, sizes=len(found)))
    return out


def bw_policy(header: Mapping[str, Any] | None, points: Sequence[Point]) -> str | None:
    """What the plain ``bw`` and ``bibw`` series of a run stand for: "one", "each" or None.

    Recorded runs store one buffer reused as bw and bibw; runs from before the option stored
    one buffer per message under those names. None: no windowed series, or no engine header.
    """
    if not any(p.op in WINDOWED for p in points) or not header:
        return None
    return "one" if recorded(header) else "each"


def mixed_note(runs: Sequence[tuple[str, Mapping[str, Any] | None, Sequence[Point]]]) -> str:
    """A warning when compared runs' bw/bibw rows stand for different policies (else "").

    ``runs`` holds (label, header, points) per run.
    """
    meant = [(label, bw_policy(header, points)) for label, header, points in runs]
    known = [(label, policy) for label, policy in meant if policy is not None]
    if len({policy for _, policy in known}) < 2:
        return ""
    parts = [f"{label}: {_DESCRIPTIONS[policy]}" for label, policy in known]
    return (
        "bw and bibw rows compare different receive buffers ("
        + "; ".join(parts)
        + "); a difference there may be the receiver's cache footprint, not the network"
    )


def drawn_points(points: list[Point], contrasts: list[Contrast]) -> list[Point]:
    """The points the figures and findings use.

    A bw or bibw measured with both receive-buffer policies keeps its per-message series only
    where the two differ materially; elsewhere the reused buffer's curve stands for both, and
    the report says so. The per-size table keeps every point.
    """
    same = {(c.pair, series(c.op, "each")) for c in contrasts if not c.material}
    return [p for p in points if (p.pair, p.op) not in same]
