"""The timeline: transfers priced while in flight, with per-rank and per-channel state only."""

from __future__ import annotations

import dataclasses
import tracemalloc

import numpy as np
import pytest

from commscope.predict import build, predict
from commscope.predict.cost import HockneyCost
from commscope.predict.model import ClusterModel, Link
from commscope.predict.patterns import ListStep, Pattern
from commscope.predict.placement import regular


def test_on_the_timeline_a_rank_reached_late_shares_no_channel_with_one_done_early() -> None:
    # Ranks 0-3 on node a, 4-7 on node b (5-7 idle). Step 0: 4 -> 2 across (slow, S).
    # Step 1: 0 -> 1 and 2 -> 3, both on node a's memory controller. Step by step they
    # share it (2 f each); on the timeline 0 -> 1 is over long before 2 -> 3 starts, so each
    # takes f alone.
    model = ClusterModel("m", ("a", "b"), 1, 4, memory=Link(1e10), nic=Link(1e8))
    cost = HockneyCost.from_model(model)
    m = 1 << 20
    steps = tuple(
        ListStep(np.array(s, dtype=np.int64), np.array(d, dtype=np.int64), np.full(len(s), m))
        for s, d in (([4], [2]), ([0, 2], [1, 3]))
    )
    pattern = Pattern("bcast", "late and early", 8, m, steps)
    placement = regular(model, 2, 4)
    slow, fast = m / 1e8, m / 1e10
    stepwise = predict(model, placement, pattern, cost)
    assert stepwise.time_s == pytest.approx(slow + 2 * fast)
    timed = predict(model, placement, dataclasses.replace(pattern, timeline=True), cost)
    assert timed.time_s == pytest.approx(slow + fast)
    assert timed.max_cf == {"memory": 1.0, "nic": 1.0}


def test_a_gather_of_twenty_thousand_ranks_is_priced_in_little_memory() -> None:
    # Every rank sends to the root at once: 19 transfers share node 0's memory controller,
    # 19,980 its NIC's receive side. The timeline keeps per-rank and per-channel state only
    # (a transfer-by-transfer table of waits would take 19,999^2 entries, 1.6 GB of them).
    model = ClusterModel(
        "m", tuple(f"n{i}" for i in range(1000)), 1, 20, memory=Link(1e10), nic=Link(1e9)
    )
    cost = HockneyCost.from_model(model)
    m = 4096
    tracemalloc.start()
    try:
        pr = predict(model, regular(model, 1000, 20), build("gather", 20000, m), cost)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert pr.time_s == pytest.approx(max(19 * m / 1e10, 19980 * m / 1e9))
    assert pr.max_cf == {"memory": 19.0, "nic": 19980.0}
    assert peak < 64 << 20, peak
