"""Cost models: t(m, cf) interpolation and extrapolation, Hockney, and their combination."""

from __future__ import annotations

import numpy as np
import pytest

from commscope.analysis.contention import LevelTable, tables
from commscope.predict.cost import Grid, HockneyCost, TableCost, combine
from commscope.predict.model import ClusterModel, Link
from tests import synthetic_runs
from tests.synthetic_contention import as_measured, records

B = 1e9
SIZES = np.array([1024, 4096, 16384], dtype=np.int64)
CFS = np.array([1, 2, 4], dtype=np.int64)


def table(
    fn: object, sizes: np.ndarray = SIZES, cfs: np.ndarray = CFS, level: str = "nic"
) -> LevelTable:
    t = np.array([[fn(m, c) for c in cfs] for m in sizes], dtype=float)  # type: ignore[operator]
    return LevelTable(level, sizes, cfs, t)


def linear(m: float, cf: float) -> float:
    return cf * m / B


@pytest.mark.parametrize(
    ("m", "cf"),
    [
        (1024, 1),
        (2048, 3),
        (3000, 1.5),  # inside: exact for t linear in m and cf
        (16384, 8),
        (4096, 6.5),  # beyond the largest cf: linear in cf
        (1 << 20, 2),
        (1 << 20, 16),  # beyond the largest size: linear in m
        (100, 2),  # below the smallest size: exponent 1 here
    ],
)
def test_linear_tables_are_reproduced_exactly(m: float, cf: float) -> None:
    g = Grid.from_table(table(linear))
    assert g is not None
    assert g.at([m], [cf])[0] == pytest.approx(linear(m, cf), rel=1e-12)


def test_power_law_between_sizes_and_linear_in_cf() -> None:
    g = Grid.from_table(table(lambda m, c: 1e-6 * c + m / B))
    assert g is not None
    # Between two sizes the time follows the power law through both neighbours.
    t1, t4 = 1e-6 + 1024 / B, 1e-6 + 4096 / B
    assert g.at([2048], [1])[0] == pytest.approx(t1 * (t4 / t1) ** 0.5)
    # Between cf 2 and 4 at a measured size: the straight line.
    assert g.at([4096], [3])[0] == pytest.approx((2e-6 + 4096 / B + 4e-6 + 4096 / B) / 2)


def test_below_the_smallest_size_exponent_is_clamped() -> None:
    flat = Grid.from_table(table(lambda m, c: 5e-6 * c))  # latency only
    assert flat is not None and flat.at([10], [1])[0] == pytest.approx(5e-6)
    steep = Grid.from_table(table(lambda m, c: (m / 1024.0) ** 2 * 1e-6))
    assert steep is not None and steep.at([512], [1])[0] == pytest.approx(0.5e-6)  # slope 1


def test_cf_below_the_table_and_single_rows() -> None:
    g = Grid.from_table(table(linear, cfs=np.array([2, 4])))
    assert g is not None and g.at([1024], [1])[0] == pytest.approx(linear(1024, 2))
    one = Grid.from_table(table(linear, sizes=np.array([4096]), cfs=np.array([1])))
    assert one is not None
    assert one.at([8192, 1024], [3, 1]).tolist() == pytest.approx(
        [linear(8192, 3), linear(1024, 1)]
    )


def test_unmeasured_cells_are_filled_along_cf() -> None:
    t = table(linear)
    holes = t.t_s.copy()
    holes[1, 1] = np.nan  # 4096 B at cf 2
    holes[2, 2] = np.nan  # 16 KiB at cf 4: beyond the row's last measured cf
    g = Grid.from_table(LevelTable("nic", SIZES, CFS, holes))
    assert g is not None
    assert g.t_s[1, 1] == pytest.approx(linear(4096, 2))
    assert g.t_s[2, 2] == pytest.approx(linear(16384, 4))
    empty = LevelTable("nic", SIZES, CFS, np.full((3, 3), np.nan))
    assert Grid.from_table(empty) is None


def test_memory_table_counts_two_transfers_per_cf() -> None:
    recs = records("memory", as_measured(linear), SIZES.tolist(), CFS.tolist())
    cost = TableCost.from_tables(tables(recs), "run 1")
    m = np.array([4096, 4096, 4096])
    got = cost.time_s("memory", m, np.array([4.0, 2.0, 1.0]))
    assert got.tolist() == pytest.approx([linear(4096, 2), linear(4096, 1), linear(4096, 1)])
    nic = TableCost.from_tables(tables(records("nic", as_measured(linear), SIZES.tolist(), [1, 2])))
    assert nic.time_s("nic", m[:1], np.array([2.0]))[0] == pytest.approx(linear(4096, 2))
    assert "t(m, cf) table of run 1 (1 KiB..16 KiB, cf 1..4)" == cost.sources()["memory"]


def test_a_transfer_takes_the_whole_exchange_not_half_of_it() -> None:
    # The benchmark stores t = exchange time / 2 (Peryshkova and Kurnosov 2018,
    # contention-aware placement); a transfer is in flight for the whole exchange, so a
    # stored cell of t prices a transfer at 2 t.
    stored = records("nic", lambda m, cf: cf * m / B, SIZES.tolist(), CFS.tolist())
    cost = TableCost.from_tables(tables(stored), "run 1")
    got = cost.time_s("nic", np.array([4096, 16384]), np.array([1.0, 4.0]))
    assert got.tolist() == pytest.approx([2 * 4096 / B, 2 * 4 * 16384 / B])


def test_hockney_from_the_model() -> None:
    m = ClusterModel("m", ("a", "b"), 1, 2, nic=Link(1e9, 2e-6))
    cost = HockneyCost.from_model(m)
    assert set(cost.sources()) == {"nic"}
    t = cost.time_s("nic", np.array([1000, 1000]), np.array([1.0, 3.0]))
    assert t.tolist() == pytest.approx([2e-6 + 1e-6, 2e-6 + 3e-6])


def test_hockney_from_p2p_uses_the_regime_of_each_size() -> None:
    points = synthetic_runs.points("intra-socket", (0, 1)) + synthetic_runs.points(
        "inter-node", (0, 2), seed=5
    )
    cost = HockneyCost.from_p2p(points, "run 7")
    assert set(cost.sources()) == {"memory", "nic"}
    m = np.array([100, 100000])
    # The synthetic curves: inter-node 17 us + m / 1.1 GB/s, one regime.
    nic = cost.time_s("nic", m, np.ones(2))
    assert nic.tolist() == pytest.approx((17e-6 + m / 1.1e9).tolist(), rel=0.05)
    # Intra-socket has an eager/rendezvous step at 4 KiB: each side keeps its own fit.
    mem = cost.time_s("memory", m, np.ones(2))
    assert mem[0] == pytest.approx(0.3e-6 + 100 / 8e9, rel=0.1)
    assert mem[1] == pytest.approx(2.3e-6 + 100000 / 11e9, rel=0.1)
    assert cost.time_s("nic", m[1:], np.array([4.0]))[0] == pytest.approx(
        nic[1] + 3 * 100000 * (1 / 1.1e9), rel=0.05
    )


def test_combine_takes_each_level_from_the_first_model_that_has_it() -> None:
    tab = TableCost.from_tables({"nic": table(as_measured(linear))}, "run 3")
    nominal = HockneyCost.from_model(
        ClusterModel("m", ("a",), 1, 2, memory=Link(1e10), nic=Link(1.0))
    )
    cost = combine(tab, nominal)
    assert cost.sources()["nic"].startswith("t(m, cf) table of run 3")
    assert cost.sources()["memory"] == "nominal rate of m"
    assert cost.time_s("nic", np.array([4096]), np.array([2.0]))[0] == pytest.approx(
        linear(4096, 2)
    )


def test_a_channel_is_never_faster_than_its_nominal_rate() -> None:
    # A table claiming more than the channel carries: one pair at the nominal rate, two pairs
    # only 1.5x slower (noise, or a path the model does not know). Beyond the table the
    # extrapolation would give 3 m / B for 4 transfers ... but k transfers through one NIC
    # side take at least k m / B.
    b = 25e6
    recs = records(
        "nic",
        as_measured(lambda m, cf: m / b * (1.0 if cf == 1 else 1.5)),
        [1 << 20, 1 << 22],
        [1, 2],
    )
    model = ClusterModel("m", ("a", "b"), 1, 2, nic=Link(bandwidth_Bps=b))
    plain = TableCost.from_tables(tables(recs), "run 1")
    floored = TableCost.from_tables(tables(recs), "run 1", model)
    m = np.array([1 << 20, 1 << 20, 1 << 22])
    k = np.array([1.0, 4.0, 8.0])
    assert plain.time_s("nic", m, k)[1] == pytest.approx(3 * (1 << 20) / b)  # 1.5 x 4 / 2
    got = floored.time_s("nic", m, k)
    assert got == pytest.approx(np.maximum(plain.time_s("nic", m, k), k * m / b))
    assert got[1] == pytest.approx(4 * (1 << 20) / b) and got[2] == pytest.approx(8 * (1 << 22) / b)
    assert "25 MB/s" in floored.sources()["nic"] and "MB/s" not in plain.sources()["nic"]


def test_validation_names_levels_its_placements_use_but_cannot_price() -> None:
    from commscope.validate.predict import unpriced_levels

    model = ClusterModel("m", ("a", "b", "c", "d"), 1, 2, nic=Link(bandwidth_Bps=25e6))
    nic_only = TableCost.from_tables(
        tables(records("nic", linear, SIZES.tolist(), [1, 2])), "run 1", model
    )
    assert unpriced_levels(model, nic_only, 4) == ["memory"]  # 2x2 puts two ranks on a node
    assert unpriced_levels(model, nic_only, 3) == []  # only 3x1 spans nodes with 3 ranks
    both = records("nic", linear, SIZES.tolist(), [1, 2]) + records(
        "memory", linear, SIZES.tolist(), [1]
    )
    assert unpriced_levels(model, TableCost.from_tables(tables(both), "run 1", model), 4) == []


def test_validation_budget_grows_with_the_slowest_predicted_launch() -> None:
    from commscope.validate.predict import BUDGET_LAUNCHES, POINT_BUDGET_S, point_budget_s

    assert point_budget_s([0.01, 0.2]) == POINT_BUDGET_S  # short launches: the fixed budget
    assert point_budget_s([0.5, 8.0]) == BUDGET_LAUNCHES * 8.0 > POINT_BUDGET_S
    assert point_budget_s([0.5, float("inf")]) == POINT_BUDGET_S  # unpriced: not a budget
    assert point_budget_s([1e5]) == 3600.0  # at most an hour a point
