"""Per-size medians behind the calibration: disturbed points and levels from separate runs."""

from __future__ import annotations

import numpy as np
import pytest

from commscope.simulate import calibrate
from commscope.simulate.factor_fit import GROUP_SPAN, steady_curve
from tests.unit.test_calibrate_fit import BASE, NOMINAL, SIZES, hockney, model_errors, points


def test_a_disturbed_point_takes_its_groups_median() -> None:
    sizes = np.asarray([1533, 1536, 1539, 3069, 3072, 3075], dtype=np.int64)
    times = np.asarray([1.0, 5.0, 1.2, 2.0, 2.1, 9.0])
    got_sizes, got = steady_curve(sizes, times)
    assert got_sizes.tolist() == sizes.tolist()
    assert got.tolist() == [1.2, 1.2, 1.2, 2.1, 2.1, 2.1]


def test_a_triple_around_a_power_of_two_is_one_group() -> None:
    # Most base sizes are powers of two, where the model's segments start: the triple still
    # votes as one, so a disturbed base size does not pull the next segment.
    sizes = np.asarray([65533, 65536, 65539], dtype=np.int64)
    _, got = steady_curve(sizes, np.asarray([1.0, 5.0, 1.1]))
    assert got.tolist() == [1.1, 1.1, 1.1]


def test_times_of_one_size_from_several_runs_vote_together() -> None:
    sizes = np.asarray([6144, 6144, 6144, 6147], dtype=np.int64)
    got_sizes, got = steady_curve(sizes, np.asarray([8.0, 1.0, 1.1, 1.2]))
    assert got_sizes.tolist() == [6144, 6147]  # one time per distinct size
    assert got.tolist() == [1.15, 1.15]


def test_a_group_spans_at_most_a_triple() -> None:
    sizes = np.arange(0, 20, dtype=np.int64)  # the schedule's smallest sizes, 1 B apart
    got_sizes, got = steady_curve(sizes, sizes.astype(float))
    for m, t in zip(got_sizes, got, strict=True):
        assert abs(t - m) <= GROUP_SPAN  # a median of sizes at most GROUP_SPAN away


def test_one_disturbed_point_per_triple_does_not_move_the_fit() -> None:
    # Every base size's middle point five times too slow (its 0.25 s on a busy core): the
    # other two of each triple carry the curve, and the model follows them.
    bases = {b for b in SIZES if b - 3 in SIZES and b + 3 in SIZES}

    def disturbed(pair: str, m: int) -> float:
        return hockney(pair, m) * (5.0 if m in bases else 1.0)

    cal = calibrate.calibrate(points(disturbed), BASE, NOMINAL, "synthetic")
    for inter in (True, False):
        errors = model_errors(cal, hockney, inter)
        undisturbed = np.asarray([m not in bases for m in SIZES])
        assert np.median(np.abs(errors[undisturbed])) < 0.01, inter
    assert cal.params.memory_lat_s == pytest.approx(2e-6, rel=0.05)


def test_each_level_may_come_from_its_own_run() -> None:
    together = calibrate.calibrate(points(hockney), BASE, NOMINAL, "synthetic")
    apart = calibrate.calibrate(
        points(hockney, ("inter-node",)) + points(hockney, ("intra-socket",)),
        BASE,
        NOMINAL,
        "synthetic",
    )
    assert apart.intra
    assert apart.params == together.params


def test_a_shared_sender_overhead_lets_two_differently_shaped_levels_fit() -> None:
    # Between nodes a burst carries 4-16 KiB fast; within a node the same sizes pay 2 us more
    # than a line would give (a copy protocol): no global factors serve both, an overhead
    # both levels pay does (it is what each level's latency does not explain).
    def shaped(pair: str, m: int) -> float:
        step = 2e-6 if 4096 <= m < 65536 else 0.0
        if pair == "inter-node":
            return 30e-6 + step + m / NOMINAL
        return 0.4e-6 + step + m / 10e9

    cal = calibrate.calibrate(points(shaped), BASE, NOMINAL, "synthetic")
    for inter in (True, False):
        errors = np.abs(model_errors(cal, shaped, inter))
        assert np.median(errors) < 0.02 and np.percentile(errors, 90) < 0.05, inter
    by_start = {s.start: s for s in cal.inter}
    assert by_start[8192].overhead_s == pytest.approx(2e-6, rel=0.1)
    for seg in cal.inter:
        assert seg.overhead_s >= 0.0
        if seg.start >= BASE.eager_bytes:  # SMPI charges it to eager messages only
            assert seg.overhead_s == 0.0
    assert dict(cal.params.send_overhead)[8192] == by_start[8192].overhead_s


def test_the_overhead_reaches_smpi_and_the_model_file() -> None:
    from commscope.predict.model import ClusterModel
    from commscope.simulate import smpi
    from commscope.simulate.params import params_for

    cal = calibrate.calibrate(points(hockney), BASE, NOMINAL, "synthetic")
    cfg = [c for c in smpi.config(cal.params) if c.startswith("smpi/os:")]
    assert len(cfg) == 1
    pieces = [p.split(":") for p in cfg[0].removeprefix("smpi/os:").split(";")]
    assert [int(s) for s, _, _ in pieces] == [s for s, _ in cal.params.send_overhead]
    assert all(float(o) >= 0 and float(per_byte) == 0 for _, o, per_byte in pieces)
    model = ClusterModel(name="m", node_names=("a", "b"), sockets=1, cores=2)
    again = params_for(model, cal.params.to_yaml(), "m.yaml")
    assert [s for s, _ in again.send_overhead] == [s for s, _ in cal.params.send_overhead]
    assert [o for _, o in again.send_overhead] == pytest.approx(
        [o for _, o in cal.params.send_overhead], rel=1e-5, abs=1e-15
    )


def test_a_negative_overhead_in_a_model_file_is_refused() -> None:
    from commscope.errors import InputError
    from commscope.predict.model import ClusterModel
    from commscope.simulate.params import params_for

    model = ClusterModel(name="m", node_names=("a", "b"), sockets=1, cores=2)
    with pytest.raises(InputError, match="send_overhead"):
        params_for(model, {"send_overhead": [[0, -1e-6]]}, "m.yaml")
