"""Each transfer of a step priced: its channel's share counted, its time from the cost model.

A transfer between nodes also pays the latency its route has beyond a route through one
switch (``ClusterModel.extra_latency_s``), as the cost model scales it.

``rank`` sums these times into a pattern's predicted time; ``answers`` chains them with the
waits of rendezvous answers.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from commscope.predict import channels
from commscope.predict.cost import CostModel, with_fabric
from commscope.predict.model import LEVELS, NIC, ClusterModel
from commscope.predict.placement import Placement


def transfer_times(
    model: ClusterModel,
    placement: Placement,
    src: NDArray[np.int64],
    dst: NDArray[np.int64],
    nbytes: NDArray[np.int64],
    step_of: NDArray[np.int64],
    steps: int,
    cost: CostModel,
) -> tuple[NDArray[np.float64], channels.Usage]:
    """Each transfer's time at the cf of its step (0 where its level has no cost), and the count."""
    known = set(cost.sources())
    usage = channels.count(model, placement, src, dst, step_of, steps)
    took = np.zeros(src.size)
    for code, level in enumerate(LEVELS):
        sel = usage.level == code
        if sel.any() and level in known:
            took[sel] = cost.time_s(level, nbytes[sel], usage.cf[sel])
            if code == NIC:
                took[sel] = with_fabric(cost, known, took[sel], nbytes[sel], usage.fabric[sel])
                took[sel] += route_s(model, placement, src[sel], dst[sel], nbytes[sel], cost)
    return took, usage


def route_s(
    model: ClusterModel,
    placement: Placement,
    src: NDArray[np.int64],
    dst: NDArray[np.int64],
    nbytes: NDArray[np.int64],
    cost: CostModel,
) -> NDArray[np.float64]:
    """Per inter-node transfer, the time its route's latency beyond one switch's adds."""
    extra = model.extra_latency_s(placement.node[src], placement.node[dst])
    return cost.route_s(nbytes, extra)
