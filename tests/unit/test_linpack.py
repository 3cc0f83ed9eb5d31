"""The Linpack kernel, its residual check, the sweep plan and what a failing run leaves behind."""

from __future__ import annotations

import numpy as np
import pytest

from commscope.data.records import Linpack
from commscope.data.store import Store
from commscope.errors import ComputeError, UsageError
from commscope.measure.compute import linpack, node, pinning, sizes


def solved(n: int = 200) -> tuple[linpack.Problem, linpack.Solve]:
    problem = linpack.make_problem(n, seed=1)
    work = np.empty((n, n), order="F")
    return problem, linpack.solve(problem, work)


def test_solution_passes_hpl_residual_test():
    problem, s = solved()
    r = linpack.scaled_residual(problem.a, s.x, problem.b, problem.a_norm)
    assert 0 <= r < linpack.THRESHOLD
    linpack.check_residual(r, problem.n, 1)
    assert np.allclose(problem.a @ s.x, problem.b)
    assert s.seconds > 0 and s.cpu_seconds >= 0


def test_corrupted_solution_fails_loudly():
    problem, s = solved()
    x = s.x.copy()
    x[7] += 1e-6 * (1 + abs(x[7]))  # far beyond rounding error
    r = linpack.scaled_residual(problem.a, x, problem.b)
    assert r > linpack.THRESHOLD
    with pytest.raises(ComputeError, match="N=200 on 2 cores: scaled residual .* not below 16"):
        linpack.check_residual(r, problem.n, 2)
    with pytest.raises(ComputeError):
        linpack.check_residual(float("nan"), problem.n, 1)


def test_a_is_kept_and_the_copy_is_overwritten_in_place():
    problem = linpack.make_problem(64, seed=3)
    before = problem.a.copy()
    work = np.empty((64, 64), order="F")
    linpack.solve(problem, work)
    assert np.array_equal(problem.a, before)  # the residual needs the original
    assert not np.array_equal(work, before)  # LAPACK factored the copy, no hidden copy
    assert problem.a.flags.f_contiguous
    assert -0.5 <= problem.a.min() and problem.a.max() < 0.5
    assert linpack.inf_norm(problem.a) == pytest.approx(np.abs(before).sum(axis=1).max())


def test_same_seed_same_matrix():
    assert np.array_equal(linpack.make_problem(50, 9).a, linpack.make_problem(50, 9).a)
    assert not np.array_equal(linpack.make_problem(50, 9).a, linpack.make_problem(50, 8).a)


def test_flop_count_and_rate():
    assert linpack.hpl_flops(1000) == pytest.approx(2 / 3 * 1e9 + 2e6)
    assert linpack.gflops(1000, 0.5) == pytest.approx((2 / 3 * 1e9 + 2e6) / 0.5 / 1e9)


def test_geometric_sizes_and_memory_cap():
    assert sizes.geometric_sizes(1000) == [100, 140, 200, 280, 400, 570, 800, 1000]
    assert sizes.geometric_sizes(1250) == [100, 140, 200, 280, 400, 570, 800, 1100, 1250]
    assert sizes.geometric_sizes(50) == []
    assert sizes.memory_cap(16 * 1000 * 1000) == 1000
    assert sizes.memory_budget("50%", 1000) == 500
    assert sizes.memory_budget("1MiB", 1000) == 1 << 20
    with pytest.raises(UsageError, match="--max-memory"):
        sizes.memory_budget("150%", 1000)


def test_cost_prediction_scales_solves_cubically():
    # 1 s solves at N=1000: N=2000 takes 8 s a solve, 3 solves, no warm-up, rest x4.
    assert node.predict_cost(1000, 1.0, 0.5, 2000, 3) == pytest.approx(3 * 8.0 + 2.0)
    # Short solves repeat until 0.2 s have been spent (at most 100), after an untimed warm-up.
    assert node.predict_cost(100, 0.016, 0.0, 100, 3) == pytest.approx((13 + 1) * 0.016)
    assert node.predict_cost(100, 0.0001, 0.0, 100, 3) == pytest.approx((100 + 1) * 0.0001)


def test_explicit_sizes_over_the_memory_budget_are_refused():
    with pytest.raises(UsageError, match="N=100000 needs 160.00 GB"):
        node.build_request(cores="1", sizes=[100, 100000], max_memory="1GiB")


def request(sizes: list[int]) -> dict:
    return node.build_request(cores="1", sizes=sizes, time_budget_s=0, repeats=1)


def test_wrong_solution_is_an_error_not_a_point(tmp_path, monkeypatch):
    req = request([100, 140, 200])
    real = linpack.scaled_residual

    def broken_at_140(a, x, b, a_norm=None):
        return 1e3 if b.shape[0] == 140 else real(a, x, b, a_norm)

    monkeypatch.setattr(linpack, "scaled_residual", broken_at_140)
    with Store.open(tmp_path / "s.sqlite") as store:
        run_id = store.create_run("node", None, None, None, None, req)
        with pytest.raises(ComputeError, match="scaled residual 1e\\+03 is not below 16"):
            node.run(store, run_id, req)
        info = store.get_run(run_id)
        assert info.status == "incomplete"
        assert "lost: N=140 on 1 core and the larger N planned after it (up to 200)" in (
            info.message or ""
        )
        assert [p.n for p in store.linpacks(run_id)] == [100]
        assert store.segments(run_id)[0].status == "incomplete"


def test_interrupted_run_keeps_its_points_and_resumes(tmp_path, monkeypatch):
    req = request([100, 140, 200])
    real = node.measure_point

    def interrupt_at_200(n, *args, **kwargs):
        if n == 200:
            raise KeyboardInterrupt
        return real(n, *args, **kwargs)

    monkeypatch.setattr(node, "measure_point", interrupt_at_200)
    with Store.open(tmp_path / "s.sqlite") as store:
        run_id = store.create_run("node", None, None, None, None, req)
        with pytest.raises(KeyboardInterrupt):
            node.run(store, run_id, req)
        info = store.get_run(run_id)
        assert info.status == "incomplete" and info.message is not None
        assert info.message.startswith("interrupted; lost: N=200 on 1 core;")
        assert "--resume" in info.message
        monkeypatch.setattr(node, "measure_point", real)
        outcome = node.run(store, run_id, req)
        assert outcome.new_points == 1 and outcome.total_points == 3
        assert store.get_run(run_id).status == "complete"
        points = store.linpacks(run_id)
    assert [p.n for p in points] == [100, 140, 200]
    p = points[0]
    assert isinstance(p, Linpack) and p.key == ("linpack", "cores1", 100)
    assert p.threads == 1 and len(p.affinity) == 1 and p.residual < 16
    assert p.n_samples >= 1 and p.median_s > 0 and p.raw["blas"]


def test_placement_is_applied_and_undone():
    before = pinning.allowed_cpus()
    cpus = pinning.choose_cpus(1, before)
    with pinning.placed(cpus, 1) as place:
        assert place.cpus == cpus and place.threads == 1
        assert all(b["num_threads"] == 1 for b in place.blas)
    assert pinning.allowed_cpus() == before


def test_measure_node_creates_a_node_run(tmp_path):
    with Store.open(tmp_path / "s.sqlite") as store:
        outcome = node.measure_node(store, request([100, 140]), label="node")
        info = store.get_run(outcome.run_id)
        assert (info.kind, info.status, info.label) == ("node", "complete", "node")
        assert outcome.total_points == 2 and outcome.stops == {1: "all sizes measured"}
        assert "P_peak" in info.request["peak_derivation"]["1"]
