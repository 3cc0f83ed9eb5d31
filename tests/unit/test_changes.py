"""Change points in a figure's history: the step's run found, outliers and environments not.

Series are seeded: a step of known size at a known run, single runs far off, a changed
environment, no step at all; the false-alarm rate over many step-free series is held to its
level by a binomial bound that a miscalibrated test (the t-test of the best split taken at
face value) fails. Then `commscope history --changes` on a real store of synthetic runs.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest
from scipy import stats

from commscope.check import permutation
from commscope.check.changes import MIN_SEGMENT, Break, Series, find, update
from tests.synthetic_checks import store_run

STEP = np.log(1.2)  # a 20 % step
NOISE = 0.03  # run-to-run spread of the log values


def series(y: np.ndarray, better: str = "lower", breaks: tuple[Break, ...] = ()) -> Series:
    """A series of runs 101, 102, ... whose log values are ``y``."""
    n = len(y)
    runs = tuple(range(101, 101 + n))
    return Series(
        "x", better, runs, tuple(1e9 + 86400.0 * i for i in range(n)), tuple(np.exp(y)), breaks
    )


def noise(seed: int, n: int = 30) -> np.ndarray:
    return np.random.default_rng(seed).normal(0, NOISE, n)


@pytest.mark.parametrize("at", [5, 15, 24, 27])
def test_a_step_is_found_at_its_first_run(at: int) -> None:
    y = noise(at)
    y[at:] += STEP
    (found,) = find([series(y)])
    (change,) = found.changes
    assert change.run_id == 101 + at and change.index == at
    assert change.direction == "worse"  # a time 20 % higher
    assert change.ratio == pytest.approx(1.2, rel=0.05)
    assert change.before == at and change.after == 30 - at
    assert change.p <= 0.01 and change.q <= 0.01 and change.level == 1


def test_a_higher_rate_is_better_and_two_steps_are_both_found() -> None:
    y = noise(7, 40)
    y[12:] -= STEP
    y[28:] += 2 * STEP
    (found,) = find([series(y, better="higher")])
    assert [(c.run_id, c.direction) for c in found.changes] == [(113, "worse"), (129, "better")]
    assert {c.level for c in found.changes} == {1, 2}
    # Each sized against its own neighbours: 1/1.2 from the first level, 1.44 into the last.
    assert found.changes[0].ratio == pytest.approx(1 / 1.2, rel=0.05)
    assert found.changes[1].ratio == pytest.approx(1.44, rel=0.05)


def test_a_step_is_placed_at_its_run_once_min_segment_runs_follow_it() -> None:
    for after in (MIN_SEGMENT - 1, MIN_SEGMENT, MIN_SEGMENT + 2):
        y = noise(3)
        y[30 - after :] += 2 * STEP
        (found,) = find([series(y)])
        # Every change point has MIN_SEGMENT runs after it: two new runs cannot make one of
        # their own (they may show as a change of the last MIN_SEGMENT or more runs).
        assert all(c.after >= MIN_SEGMENT for c in found.changes)
        if after >= MIN_SEGMENT:
            assert [c.run_id for c in found.changes] == [101 + 30 - after]


@pytest.mark.parametrize("seed", range(5))
def test_single_runs_far_off_are_not_change_points(seed: int) -> None:
    y = noise(seed)
    y[[0, 11, 29]] += np.log(3.0)  # three bad nights, the newest among them
    y[20] -= np.log(2.0)  # and one far too good
    (found,) = find([series(y)], fdr=0.05)
    assert found.changes == ()


@pytest.mark.parametrize("seed", range(5))
def test_no_step_no_change(seed: int) -> None:
    (found,) = find([series(noise(seed))])
    assert found.changes == () and found.note is None


def test_a_changed_environment_starts_a_part_and_no_change_is_sought_across_it() -> None:
    y = noise(11)
    y[15:] += STEP  # the new MPI is 20 % slower: its doing, not a regression
    mpi = Break(15, ("MPI library: Open MPI v4.1.4 -> v5.0.3",))
    (found,) = find([series(y, breaks=(mpi,))])
    assert found.changes == ()
    assert found.series.parts() == [(0, 15), (15, 30)]
    # Within the new environment a step is still found, sized from the change on.
    y[24:] += STEP
    (found,) = find([series(y, breaks=(mpi,))])
    ((change),) = found.changes
    assert change.run_id == 101 + 24 and change.before == 9
    assert change.ratio == pytest.approx(1.2, rel=0.05)
    # The same values without the break: the environment's step is a change point.
    (found,) = find([series(y)])
    assert [c.run_id for c in found.changes] == [101 + 15, 101 + 24]


def test_false_change_points_stay_at_the_level_over_step_free_series() -> None:
    # Heavy-tailed noise (Student t, 3 degrees of freedom), 30 runs, no step: each series
    # searched alone must show a change in about 5 % of series at q = 5 %. A two-sided
    # binomial bound at 0.1 %: 200 series give 10 expected; the t-test of the best split at
    # face value finds one in about 40 % of them and fails it, so would a test blind to
    # everything (0 found).
    rng = np.random.default_rng(2024)
    level, count = 0.05, 200
    found = naive = 0
    for _ in range(count):
        y = NOISE * rng.standard_t(3, 30)
        found += bool(find([series(y)], fdr=level)[0].changes)
        best = min(stats.ttest_ind(y[:k], y[k:]).pvalue for k in range(3, 28))
        naive += best <= level
    low, high = stats.binom.ppf([0.0005, 0.9995], count, level)
    assert low <= found <= high, (found, low, high)
    assert naive > high  # the bound can fail: the uncalibrated test does


def test_false_change_points_are_held_across_figures_not_per_figure() -> None:
    y = noise(5)
    y[22:] += 0.07  # a small step: clear alone, not among many figures that did not move
    step = series(y)
    (alone,) = find([step])
    (change,) = alone.changes
    assert change.q == change.p  # one figure: BH changes nothing
    quiet = [series(noise(1000 + i)) for i in range(300)]
    together = find([step, *quiet])
    assert together[0].changes == ()
    assert sum(bool(s.changes) for s in together) <= 3  # at 1 %: an unmoved figure rarely


def test_stopping_early_keeps_the_decisions_of_drawing_every_candidate_to_its_end() -> None:
    # 60 parts with steps of all sizes, 140 without, lengths 12 to 40: each candidate stops
    # drawing once Benjamini-Hochberg's decision on it is settled, and the decisions are
    # exactly those of drawing all of them to r_max; a stopped one reports an upper bound.
    rng = np.random.default_rng(8)
    parts = []
    for i in range(200):
        n = int(rng.integers(12, 41))
        y = rng.normal(0, NOISE, n)
        if i < 60:
            y[int(rng.integers(3, n - 2)) :] += rng.uniform(0.01, 0.2)
        parts.append(y)
    fast = permutation.best_splits(parts, MIN_SEGMENT, 0.05)
    full = permutation.best_splits(parts, MIN_SEGMENT, 0.05, settle=False)
    assert [c.kept for c in fast] == [c.kept for c in full]
    assert 20 < sum(c.kept for c in full) < 60  # some steps too small to tell: a real test
    assert [c.split for c in fast] == [c.split for c in full]
    assert all(f.p >= e.p for f, e in zip(fast, full, strict=True))
    assert sum(f.p > e.p for f, e in zip(fast, full, strict=True)) > 20  # many stopped early
    kept = [c.q for c in fast if c.kept]
    assert max(kept) <= 0.05 and all(c.q > 0.05 for c in fast if not c.kept)


def test_many_rows_are_scored_by_one_product_as_one_row_is_by_its_sums() -> None:
    # The matrix product that scores many candidates at once gives each ordering's best
    # score as the gathered sums of one candidate alone do, to rounding; tied values
    # (winsorized to one ceiling) tie the same way.
    rng = np.random.default_rng(3)
    for n in (6, 13, 30):
        z = permutation.winsorized(rng.standard_normal((permutation.PRODUCT_ROWS + 3, n)))
        z[:, : n // 3] = z[:, :1]  # ties
        z -= z.mean(axis=1, keepdims=True)
        block = rng.permuted(np.broadcast_to(np.arange(n), (500, n)), axis=1)
        together = permutation.best_scores(z, block, MIN_SEGMENT)
        alone = np.vstack([permutation.best_scores(row[None], block, MIN_SEGMENT) for row in z])
        assert together.shape == (len(z), 500)
        np.testing.assert_allclose(together, alone, rtol=1e-12, atol=1e-15)


def test_the_answer_is_the_same_on_every_call() -> None:
    y = noise(9)
    y[18:] += 0.05
    first, second = find([series(y)])[0], find([series(y)])[0]
    assert first == second


def test_the_nightly_update_looks_at_the_newest_part_only() -> None:
    y = noise(21, 60)
    y[20:] += STEP  # found long ago
    y[55:] += STEP  # new: 5 runs after it
    s = series(y)
    full = find([s])[0]
    assert [c.run_id for c in full.changes] == [121, 156]
    (new,) = update([s], {"x": 121})
    ((change),) = new.changes
    assert change.run_id == 156 and change.ratio == pytest.approx(1.2, rel=0.05)
    assert change.before == 25  # the window: the newest 30 runs, from run 131
    # Nothing new after the last known change point: nothing found.
    (none,) = update([s], {"x": 156})
    assert none.changes == ()


def test_bad_arguments_are_refused() -> None:
    with pytest.raises(ValueError, match="between 0 and 1"):
        find([], fdr=1.5)
    with pytest.raises(ValueError, match="2 or more"):
        find([], min_segment=1)
    (short,) = find([series(noise(1, 5))])
    assert short.changes == () and short.note is not None and "too few runs" in short.note


# Through the command line, on a real store.


def test_history_changes_finds_the_slowed_link_at_its_run(cli: Any) -> None:
    # 8 runs, then the inter-node link 25 % slower for 5 runs, then 2 runs under another MPI.
    for seed in range(1, 9):
        store_run(cli.store, seed)
    for seed in range(9, 14):
        store_run(cli.store, seed, inter_node=1.25)
    for seed in range(14, 16):
        store_run(cli.store, seed, inter_node=1.25, mpi="mpich-4.0")
    out = cli("history", "--changes", "--json")
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    (group,) = report["groups"]
    assert group["runs"] == list(range(1, 16)) and group["hosts"] == ["n0", "n1"]
    assert group["environment_changes"] == [
        {"run": 14, "created_unix": group["environment_changes"][0]["created_unix"],
         "changes": ["MPI: openmpi-4.1.4 -> mpich-4.0"]}
    ]  # fmt: skip
    changes = group["changes"]
    inter = [c for c in changes if 'pair="inter-node"' in c["key"]]
    assert {c["run"] for c in inter} == {9} and all(c["direction"] == "worse" for c in inter)
    # Every inter-node p2p figure is found (a latency 25 % up, a bandwidth 20 % down) ...
    searched = json.loads(cli("history", 'p2p_latency_seconds{pair="inter-node"}', "--json").stdout)
    keys = {p["key"] for p in searched["points"]}
    assert keys <= {c["key"] for c in inter}
    assert all(c["change"] == pytest.approx(0.25, abs=0.03) for c in inter if c["key"] in keys)
    # ... no change point crosses the new MPI, and false ones stay a small share (FDR 1 %).
    assert all(c["run"] < 14 for c in changes)
    assert len(changes) - len(inter) <= 0.05 * len(changes)
    assert report["summary"].startswith(f"{len(changes)} change points in ")

    table = cli("history", "--changes", 'p2p_latency_seconds{pair="inter-node",bytes="8"}')
    assert table.returncode == 0, table.stderr
    assert (
        "environment changed at run 14" in table.stdout
        and "MPI: openmpi-4.1.4 -> mpich-4.0" in table.stdout
    )
    line = next(x for x in table.stdout.splitlines() if "bytes=" in x)
    assert line.split()[1] == "9" and "worse" in line and "+25" in line


def test_history_changes_refuses_bad_input_in_one_line(cli: Any) -> None:
    store_run(cli.store, 1)
    for args, words in (
        (("--changes", "--fdr", "70%"), ("--fdr 70%", "1%")),
        (("--changes", "--fdr", "x"), ("--fdr x",)),
        (("--changes", "no_such_figure"), ("no figure is named 'no_such_figure'",)),
        (("--changes", "p2p_latency_seconds{pair}"), ("is not label=",)),
        ((), ("--changes",)),
    ):
        out = cli("history", *args)
        lines = out.stderr.strip().splitlines()
        assert out.returncode == 2 and len(lines) == 1 and "Traceback" not in out.stderr, out.stderr
        assert all(w in lines[0] for w in words), lines[0]
    out = cli("history", "--changes")  # one run: nothing to split, said so
    assert out.returncode == 0 and "0 change points in 0 of 0 figures searched" in out.stdout
