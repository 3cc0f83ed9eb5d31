"""Plain-language findings drawn from the point-to-point figures.

Each finding is one sentence whose numbers all come from the measured data via
``p2p.pair_figures``; the wording says "likely" where it names a cause the data only suggests.
A step in time is named as a protocol switch only when it matches an eager limit recorded
with the run (``data.mpi_config``); otherwise it is "a step at" its sizes, with no claim.
"""

from __future__ import annotations

from commscope.analysis.p2p import CurveFigures, PairFigures, beyond_saturation
from commscope.analysis.regimes import Threshold
from commscope.data.mpi_config import EagerLimit, ProtocolLimits
from commscope.units import percent_text, rate_text, size_text, time_text

OP_NAMES = {
    "pingpong": "ping-pong",
    "bw": "unidirectional bandwidth (bw)",
    "bibw": "bidirectional bandwidth (bibw)",
    "bw_each": "unidirectional bandwidth with a receive buffer per message (bw_each)",
    "bibw_each": "bidirectional bandwidth with a receive buffer per message (bibw_each)",
}


def findings(pairs: list[PairFigures], limits: ProtocolLimits | None = None) -> list[str]:
    """Sentences about latency, thresholds, saturation, bandwidth, cache dips and pairs.

    Args:
        pairs: ``p2p.pair_figures`` of one run, nearest pair first.
        limits: the eager limits recorded with the run (None: unknown, as for TCP runs).

    Returns:
        The findings, most basic first; empty when nothing was measured.
    """
    out: list[str] = []
    for pair in pairs:
        out += _latency(pair)
        main = pair.curve("pingpong") or (pair.curves[0] if pair.curves else None)
        if main is not None:
            out += _thresholds(main, limits)
            out += _saturation(main)
        for curve in pair.curves:
            out += _bandwidth(curve)
            out += _cache_dip(curve)
        out += _duplex(pair)
    out += _between_pairs(pairs)
    return out


def _where(curve: CurveFigures) -> str:
    return f"{curve.pair} {OP_NAMES.get(curve.op, curve.op)}"


def _latency(pair: PairFigures) -> list[str]:
    if pair.latency_s is None:
        return []
    at = "zero-byte" if pair.latency_bytes == 0 else f"{size_text(pair.latency_bytes or 0)}"
    return [f"{pair.pair}: {at} latency is {time_text(pair.latency_s)} (one way, ping-pong)."]


def _gap(th: Threshold) -> str:
    near = f" (near {size_text(th.nominal_bytes)})" if th.nominal_bytes else ""
    below, above = size_text(th.below_bytes, exact=True), size_text(th.above_bytes, exact=True)
    return f"between {below} and {above}{near}"


def _step(th: Threshold) -> str:
    """A step named by its sizes alone: ``a step at 8 KiB (between 6147 B and 8189 B)``."""
    at = size_text(th.nominal_bytes) if th.nominal_bytes else size_text(th.above_bytes, exact=True)
    below, above = size_text(th.below_bytes, exact=True), size_text(th.above_bytes, exact=True)
    return f"a step at {at} (between {below} and {above})"


def threshold_findings(pairs: list[PairFigures], limits: ProtocolLimits | None) -> list[str]:
    """The threshold sentences alone, as the terminal shows them."""
    out: list[str] = []
    for pair in pairs:
        main = pair.curve("pingpong") or (pair.curves[0] if pair.curves else None)
        if main is not None:
            out += _thresholds(main, limits)
    return out


def _named(curve: CurveFigures, limits: ProtocolLimits | None) -> dict[Threshold, EagerLimit]:
    """Each recorded limit of the curve's path against the biggest step that matches it."""
    named: dict[Threshold, EagerLimit] = {}
    for limit in limits.for_pair(curve.pair) if limits else []:
        steps = [th for th in curve.thresholds if limit.matches(th.below_bytes, th.above_bytes)]
        best = max(steps, key=lambda th: abs(th.jump), default=None)
        if best is not None and best not in named:
            named[best] = limit
    return named


def _thresholds(curve: CurveFigures, limits: ProtocolLimits | None = None) -> list[str]:
    named = _named(curve, limits)
    out = []
    for th in curve.thresholds:
        change = (
            f"time jumps by {percent_text(th.jump)}"
            if th.jump > 0
            else f"time falls by {percent_text(-th.jump)}"
        )
        if th in named:
            out.append(f"{_where(curve)}: {change} {_gap(th)}: {named[th].name()}.")
        elif th.jump > 0 and beyond_saturation(th, curve.saturation_bytes):
            out.append(
                f"{_where(curve)}: {_step(th)}, past the saturation point: {change};"
                " likely a cache or memory effect."
            )
        else:
            out.append(f"{_where(curve)}: {_step(th)}: {change}.")
    return out


def _saturation(curve: CurveFigures) -> list[str]:
    if curve.saturation_bytes is None:
        if curve.n_sizes < 4 or curve.max_bytes <= 0:
            return []
        return [
            f"{_where(curve)}: time does not yet grow linearly with size up to"
            f" {size_text(curve.max_bytes)}: no saturation point, larger messages may still"
            " gain bandwidth."
        ]
    text = (
        f"{_where(curve)}: saturation point at {size_text(curve.saturation_bytes)}: from there"
        " on time grows linearly with size, so larger messages gain little bandwidth"
    )
    if curve.asymptotic_bandwidth_Bps:
        text += f" (asymptotic {rate_text(curve.asymptotic_bandwidth_Bps)})"
    return [text + "."]


def _bandwidth(curve: CurveFigures) -> list[str]:
    if not curve.asymptotic_bandwidth_Bps or not curve.peak_bandwidth_Bps:
        return []
    text = (
        f"{_where(curve)}: asymptotic bandwidth {rate_text(curve.asymptotic_bandwidth_Bps)}"
        f" (median from {size_text(curve.asymptotic_from_bytes or 0)} up), peak"
        f" {rate_text(curve.peak_bandwidth_Bps)} at {size_text(curve.peak_bytes or 0)}"
    )
    if curve.half_peak_bytes is not None and curve.n_sizes >= 4:
        text += f"; half the peak is reached at {size_text(round(curve.half_peak_bytes))} (N1/2)"
    return [text + "."]


_DIP_CAUSES = {
    "inter-node": "likely a buffer or flow-control limit on the network path",
    "unknown": "a cache effect within a node, or a buffer limit on a network path",
}
_CACHE_CAUSE = "likely a cache effect (the messages no longer fit in the CPU caches)"


def _cache_dip(curve: CurveFigures) -> list[str]:
    dip = curve.cache_dip
    if dip is None:
        return []
    return [
        f"{_where(curve)}: bandwidth drops {percent_text(dip.drop)} from"
        f" {rate_text(dip.peak_Bps)} at {size_text(dip.peak_bytes)} to {rate_text(dip.tail_Bps)}"
        f" above {size_text(dip.onset_bytes)}: {_DIP_CAUSES.get(curve.pair, _CACHE_CAUSE)}."
    ]


def _duplex(pair: PairFigures) -> list[str]:
    uni, bi = pair.curve("bw"), pair.curve("bibw")
    if not (uni and bi and uni.asymptotic_bandwidth_Bps and bi.asymptotic_bandwidth_Bps):
        return []
    ratio = bi.asymptotic_bandwidth_Bps / uni.asymptotic_bandwidth_Bps
    return [
        f"{pair.pair}: bidirectional bandwidth is {ratio:.2f}x the unidirectional one"
        f" ({rate_text(bi.asymptotic_bandwidth_Bps)} vs {rate_text(uni.asymptotic_bandwidth_Bps)},"
        " asymptotic)."
    ]


def _rate_curve(pair: PairFigures) -> CurveFigures | None:
    """The curve to compare bandwidth by: bw when measured, else ping-pong."""
    for op in ("bw", "pingpong", "bibw"):
        c = pair.curve(op)
        if c is not None and c.asymptotic_bandwidth_Bps:
            return c
    return None


def _between_pairs(pairs: list[PairFigures]) -> list[str]:
    if len(pairs) < 2:
        return []
    near = pairs[0]
    out = []
    for far in pairs[1:]:
        if near.latency_s and far.latency_s:
            out.append(
                f"{far.pair} latency is {far.latency_s / near.latency_s:.1f}x {near.pair}"
                f" ({time_text(far.latency_s)} vs {time_text(near.latency_s)})."
            )
        a, b = _rate_curve(near), _rate_curve(far)
        if a and b and a.op == b.op and a.asymptotic_bandwidth_Bps and b.asymptotic_bandwidth_Bps:
            ratio = b.asymptotic_bandwidth_Bps / a.asymptotic_bandwidth_Bps
            out.append(
                f"{far.pair} bandwidth is {percent_text(ratio)} of {near.pair}"
                f" ({rate_text(b.asymptotic_bandwidth_Bps)} vs"
                f" {rate_text(a.asymptotic_bandwidth_Bps)}, asymptotic {a.op})."
            )
    return out
