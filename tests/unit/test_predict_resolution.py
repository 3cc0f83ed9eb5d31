"""What the tables' own noise leaves unordered, and how validate judges each pair of placements."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from commscope.data.record_parse import record_from_dict
from commscope.predict import build, predict
from commscope.predict.cost import TableCost
from commscope.predict.model import ClusterModel
from commscope.predict.resolution import SUPPORT, Spread, redrawn, resampled_costs, spread
from commscope.validate.pairs import judge_pair
from commscope.validate.placement_time import PlacementTime
from commscope.validate.predict import checked_placements
from tests.synthetic_contention import as_measured, records, store_run

B = 6.25e6  # 50 mbit
SIZES = [1 << 18, 1 << 20, 1 << 22]
MODEL = ClusterModel("m", tuple(f"n{i}" for i in range(4)), 1, 2)


def noisy(cells, rel: float, reps: int = 15, seed: int = 1):
    """The cells measured ``reps`` times, each time off by a normal error of ``rel``."""
    rng = np.random.default_rng(seed)
    out = []
    for c in cells:
        t = c.samples_s[0][0]
        width = len(c.samples_s[0])
        # One error per repetition, the same on every process: the slowest is no slower.
        rows = [[t * (1 + rel * rng.standard_normal())] * width for _ in range(reps)]
        out.append(record_from_dict({**c.raw, "samples_s": rows}, "noisy synthetic contention"))
    return out


def cells(rel: float):
    """Memory 100x faster than the NIC; each NIC side shared by cf transfers."""
    memory = records("memory", as_measured(lambda m, cf: 0.01 * cf * m / B), SIZES, [1, 2])
    nic = records("nic", as_measured(lambda m, cf: cf * m / B), SIZES, [1, 2])
    return noisy(memory + nic, rel) if rel else memory + nic


def costs_of(found, resamples: int = 200):
    return resampled_costs(found, lambda t: TableCost.from_tables(t, "synthetic"), resamples)


def spread_of(op: str, algorithm: str, found) -> tuple[list[str], Spread]:
    pattern = build(op, 4, 1 << 20, algorithm)
    placements = checked_placements(MODEL, 4)
    return [pl.label for pl in placements], spread(
        lambda cost: [predict(MODEL, pl, pattern, cost).time_s for pl in placements],
        costs_of(found),
    )


def test_redrawing_keeps_each_cells_count_and_draws_only_what_was_measured():
    found = cells(0.05)
    again = redrawn(found, np.random.default_rng(7))
    for before, after in zip(found, again, strict=True):
        assert len(after.samples_s) == len(before.samples_s)
        assert set(after.samples_s) <= set(before.samples_s)
        assert (after.level, after.cf, after.bytes) == (before.level, before.cf, before.bytes)
    # The same seed draws the same tables: a verdict does not change between two readings.
    assert redrawn(found, np.random.default_rng(7)) == again
    assert redrawn(found, np.random.default_rng(8)) != again


def test_a_gap_smaller_than_the_noise_of_the_cells_that_price_it_is_left_unordered():
    # Recursive doubling: 2x2 is one intra-node step plus an exchange with two transfers on
    # each NIC side; 4x1 is two lone exchanges. Predicted 0.5 % apart (the memory step).
    labels, exact = spread_of("allreduce", "recursive-doubling", cells(0.0))
    assert labels == ["2x2", "4x1"]
    assert 0 < exact.times_s[0, 0] / exact.times_s[0, 1] - 1 < 0.01
    assert exact.resolved(0, 1) and exact.gap_rel_error(0, 1) < 1e-12  # exact tables: an order
    _, loud = spread_of("allreduce", "recursive-doubling", cells(0.05))
    assert not loud.resolved(0, 1)
    assert 1 - SUPPORT < loud.faster_share(1, 0) < SUPPORT
    assert loud.gap_rel_error(0, 1) > 0.005


def test_a_gap_far_beyond_the_noise_stays_ordered():
    # Block All-to-all: on 2x2 each NIC side carries four transfers a step, on 4x1 three.
    _, found = spread_of("alltoall", "block", cells(0.05))
    assert found.resolved(0, 1) and found.faster_share(1, 0) >= SUPPORT
    assert 0 < found.gap_rel_error(0, 1) < 0.05  # the noise is there, the gap far beyond it


def check(label: str, predicted: float, measured: float, se: float) -> PlacementTime:
    err = (predicted - measured) / measured
    return PlacementTime(label, 2, 2, 1 << 20, predicted, measured, err, 7, measured_se_s=se)


def around(gap_error: float, n: int = 1000) -> Spread:
    """Two placements predicted equal, the first's time known to within ``gap_error``."""
    first = 1 + gap_error * np.random.default_rng(3).standard_normal(n)
    return Spread(np.column_stack([first, np.ones(n)]))


def ordered(share: float, n: int = 1000) -> Spread:
    """The first placement 2 % faster than the second in ``share`` of the resamples."""
    first_faster = np.arange(n) < round(share * n)
    return Spread(np.column_stack([np.where(first_faster, 0.99, 1.01), np.ones(n)]))


def test_an_ordered_pair_is_missed_when_measured_the_other_way_beyond_both_noises():
    sure = ordered(0.99)
    assert sure.resolved(0, 1)
    hit = judge_pair(check("4x1", 0.99, 1.00, 0.01), check("2x2", 1.0, 1.02, 0.01), sure, 0, 1)
    assert hit.resolved and hit.hit
    assert "4x1 < 2x2 predicted (99% of resampled tables), measured 2.0% apart: hit" in hit.text()
    missed = judge_pair(check("4x1", 0.99, 1.02, 0.001), check("2x2", 1.0, 1.00, 0.001), sure, 0, 1)
    assert not missed.hit and "the other way: MISSED" in missed.text()


def test_a_measured_order_within_its_own_noise_refutes_no_predicted_order():
    sure = ordered(0.99)  # 4x1 predicted 1 % faster
    # Measured 0.5 % the other way, each point's standard error 1 %: the gaps agree.
    noisy = judge_pair(check("4x1", 0.99, 1.005, 0.01), check("2x2", 1.0, 1.0, 0.01), sure, 0, 1)
    assert noisy.resolved and noisy.hit
    assert noisy.measured_gap == pytest.approx(0.005, rel=0.01)
    assert (
        "4x1 < 2x2 predicted (99% of resampled tables), measured 0.5% apart, the other way,"
        " within two standard errors of the predicted 1.0% (+- 1.4% measured" in noisy.text()
    )
    # The same gap measured ten times more tightly refutes it.
    tight = judge_pair(check("4x1", 0.99, 1.005, 0.001), check("2x2", 1.0, 1.0, 0.001), sure, 0, 1)
    assert not tight.hit and tight.text().endswith("the other way: MISSED")
    # One valid launch: no standard error, so only the predicted order can make it a hit.
    lone = judge_pair(check("4x1", 0.99, 1.005, math.nan), check("2x2", 1.0, 1.0, 0.01), sure, 0, 1)
    assert not lone.hit


def test_an_unordered_pair_is_a_hit_when_the_gaps_agree_within_both_noises():
    loose = around(0.01)  # the predicted gap is known to about 1 %
    assert not loose.resolved(0, 1)
    near = judge_pair(check("2x2", 1.0, 1.015, 0.003), check("4x1", 1.0, 1.0, 0.003), loose, 0, 1)
    assert not near.resolved and near.hit
    assert near.predicted_gap_error == pytest.approx(0.01, rel=0.1)
    assert near.measured_gap_error == pytest.approx(math.hypot(0.003 / 1.015, 0.003), rel=1e-9)
    assert "2x2 and 4x1 within the tables' noise: predicted +0.0% +- 1.0%" in near.text()
    far = judge_pair(check("2x2", 1.0, 1.08, 0.003), check("4x1", 1.0, 1.0, 0.003), loose, 0, 1)
    assert not far.hit and far.text().endswith("MISSED")


def test_without_resampled_tables_every_predicted_gap_is_an_order_and_equality_a_tie():
    tie = judge_pair(check("2x2", 1.0, 1.004, 0.002), check("4x1", 1.0, 1.0, 0.002), None, 0, 1)
    assert not tie.resolved and tie.predicted_gap_error == 0 and tie.hit  # 0.4 % < 2 x 0.28 %
    apart = judge_pair(check("2x2", 1.001, 1.0, 0.001), check("4x1", 1.0, 1.01, 0.001), None, 0, 1)
    assert apart.resolved and not apart.hit  # measured the other way, beyond its noise
    loose = judge_pair(check("2x2", 1.001, 1.0, 0.1), check("4x1", 1.0, 1.01, 0.1), None, 0, 1)
    assert loose.resolved and loose.hit  # the other way, but 1 % is within 10 % noise
    unknown = judge_pair(check("2x2", 1.0, 1.0, math.nan), check("4x1", 1.0, 1.0, 0.01), None, 0, 1)
    assert not unknown.hit  # a tie cannot be confirmed without the measured noise
    assert "no standard error, so no tie confirmed" in unknown.text()


def predicted_json(cli, found) -> dict:
    run_id = store_run(cli.store, found)
    cluster = cli.store.parent / "cluster.yaml"
    cluster.write_text("name: four\nnodes: 4\nsockets: 1\ncores: 2\n")
    argv = ["predict", "allreduce", "--algorithm", "recursive-doubling", "--np", "4"]
    argv += ["--sizes", "1MiB", "--tables", str(run_id), "--cluster", str(cluster)]
    text = cli(*argv, check=True).stdout
    return {"text": " ".join(text.split()), **json.loads(cli(*argv, "--json", check=True).stdout)}


def test_predict_says_when_the_tables_cannot_tell_the_fastest_from_the_next(cli):
    out = predicted_json(cli, cells(0.05))
    shares = out["fastest_under_resampled_tables"]
    assert set(shares) == {"2x2", "2x2 cyclic", "4x1"}
    assert shares["2x2"] == shares["2x2 cyclic"]  # priced alike: a tie counts for each
    first = out["predictions"][0]["placement"]["label"]
    assert 1 - SUPPORT < shares[first] < SUPPORT
    assert f"the tables' noise cannot tell {first} from" in out["text"]
    assert "choose among them by other needs" in out["text"]


def test_predict_names_no_rival_where_the_tables_settle_the_first_place(cli):
    out = predicted_json(cli, cells(0.0))
    shares = out["fastest_under_resampled_tables"]
    assert shares["4x1"] == 1.0 and shares["2x2"] == 0.0  # exact tables: the memory step counts
    assert "fastest under 100 resampled tables: 4x1 100%" in out["text"]
    assert "cannot tell" not in out["text"]
