"""The predictor's cost model for the platform SMPI simulates: same links, same factors.

SMPI times a message of m bytes on a route of latency L and bottleneck bandwidth B as
``lat_factor(m) L + m / (bw_factor(m) B)``; k messages sharing a link each get B / k of it
(max-min sharing, each message's progress scaled by its bandwidth factor). That is Hockney's
``alpha + cf m / beta`` per factor segment, with alpha = lat_factor L and beta = bw_factor B,
so the predictor priced with it and SMPI differ only where their counting does (patterns,
asynchrony between steps, max-min shares of unequal flows), not in their figures.

The routes follow :mod:`commscope.simulate.platform`: between nodes two NIC links (up, down)
and the switch latency, so L = 2 NIC latency + switch latency; a longer route (across
uplinks, or more links of a topology) adds its extra latency, scaled by lat_factor as SMPI
scales the whole route's (``HockneyCost.latency_factors``, priced per transfer by
``predict.pricing``); inside a node the memory link, which also carries what crosses
sockets.
"""

from __future__ import annotations

import numpy as np

from commscope.predict.cost import Hockney, HockneyCost
from commscope.simulate.params import Factors, SimParams

# SimGrid 3.32's SMPI network model defaults (network_cm02.cpp), calibrated on TACC's
# Stampede: in force when a model has no factors of its own.
STAMPEDE_BW_FACTOR: Factors = (
    (0, 0.812084),
    (257, 0.338112),
    (732, 0.341987),
    (1426, 0.608902),
    (3484, 0.77493),
    (5776, 1.08739),
    (9376, 0.58729),
    (15424, 0.697866),
    (65472, 0.940694),
)
STAMPEDE_LAT_FACTOR: Factors = (
    (0, 2.01467),
    (257, 1.95341),
    (732, 1.9503),
    (1426, 1.61075),
    (3484, 1.88101),
    (5776, 2.18796),
    (9376, 2.59299),
    (15424, 3.48845),
    (65472, 11.6436),
)
NEUTRAL: Factors = ((0, 1.0),)


def factor_at(factors: Factors, nbytes: int) -> float:
    """SimGrid's factor for a message of ``nbytes``: the segment whose start is below it.

    A segment starting at s applies to sizes above s (SimGrid's FactorSet takes the previous
    segment for a size equal to a start); below every start the factor is 1.
    """
    value = 1.0
    for start, factor in factors:
        if nbytes <= start:
            break
        value = factor
    return value


def _regimes(
    lat: Factors, bw: Factors, latency_s: float, bandwidth_Bps: float, source: str
) -> Hockney:
    # Hockney regimes start where either factor changes; s + 1 is the first size a segment
    # starting at s covers (sizes are whole bytes).
    firsts = sorted({0} | {s + 1 for s, _ in lat} | {s + 1 for s, _ in bw})
    return Hockney(
        np.array(firsts, dtype=np.float64),
        np.array([factor_at(lat, m) * latency_s for m in firsts]),
        np.array([1.0 / (factor_at(bw, m) * bandwidth_Bps) for m in firsts]),
        source,
    )


def smpi_cost(params: SimParams, neutral: bool = False) -> HockneyCost:
    """Hockney costs per level that reproduce SMPI's times on the platform of ``params``.

    Args:
        params: the link figures and factors the platform and SMPI use.
        neutral: SMPI runs with factors 1 (``--neutral``).
    """
    if neutral:
        lat, bw, said = NEUTRAL, NEUTRAL, "neutral factors"
    else:
        # A factor the parameters leave out keeps SimGrid's default (smpi.config omits it).
        lat = params.lat_factor or STAMPEDE_LAT_FACTOR
        bw = params.bw_factor or STAMPEDE_BW_FACTOR
        said = (
            f"factors of {params.calibrated_from or 'the model'}"
            if params.calibrated
            else "SimGrid's Stampede factors"
        )
    route_lat = 2 * params.nic_lat_s + params.switch_lat_s
    memory = _regimes(
        lat, bw, params.memory_lat_s, params.memory_bw_Bps, f"SMPI memory link, {said}"
    )
    return HockneyCost(
        {
            "memory": memory,
            "socket": memory,
            "nic": _regimes(lat, bw, route_lat, params.nic_bw_Bps, f"SMPI NIC route, {said}"),
        },
        latency_factors=tuple(lat),
    )
