"""Load warnings read from the engine's per-host table."""

from __future__ import annotations

import pytest

from commscope.analysis import load


def end(**host: object) -> dict:
    base = {
        "nodes": ["n0"],
        "ranks": 2,
        "cpus": 2,
        "host_cpus": 2,
        "elapsed_cpu_s": 4.0,
        "tick_s": 0.01,
        "ranks_cpu_s": 3.9,
    }
    return {"type": "end", "points": 1, "elapsed_s": 2.0, "load": [{**base, **host}]}


@pytest.mark.parametrize(
    ("share", "busy"), [(0.0, False), (0.10, False), (0.12, True), (0.5, True)]
)
def test_others_share_warns_above_ten_percent_beyond_the_counters_step(share, busy):
    # 2 CPUs x 0.01 s ticks over 4 CPU-seconds: the share is known to +-1 %.
    (host,) = load.hosts(end(others_share=share))
    assert host.resolution == pytest.approx(0.01)
    assert host.busy is busy
    warnings = load.warnings([end(others_share=share)])
    assert bool(warnings) is busy
    if busy:
        assert warnings == [f"other processes took {share:.0%} of the 2 CPUs of n0 during the run"]


def test_a_short_run_cannot_tell_a_busy_host():
    # 0.05 CPU-seconds in 0.01 s ticks: a 35 % share is within the rounding (+-40 %).
    assert load.warnings([end(others_share=0.35, elapsed_cpu_s=0.05)]) == []


def test_more_ranks_than_usable_cpus_is_named_with_its_nodes():
    text = load.warnings([end(nodes=["csnode0", "csnode1"], ranks=4, cpus=2, others_share=0.0)])
    assert text == ["4 ranks shared 2 CPUs on csnode0, csnode1 (oversubscribed)"]


def test_runs_without_a_load_table_have_no_warning():
    assert load.warnings([None, {"type": "end", "points": 0, "elapsed_s": 0.1}]) == []
    assert load.hosts(end(elapsed_cpu_s=0.0, others_share=None))[0].others_share is None


def test_a_warning_repeated_by_several_launches_is_given_once():
    same = end(ranks=3, cpus=2, others_share=0.0)
    assert len(load.warnings([same, same])) == 1


@pytest.mark.parametrize(
    ("wait", "warned"), [(None, False), (0.0, False), (0.05, False), (0.2, True)]
)
def test_a_rank_waiting_for_a_cpu_is_named_even_in_a_short_run(wait, warned):
    # Too short for the host's counters, but schedstat counts nanoseconds.
    record = end(others_share=0.0, elapsed_cpu_s=0.05)
    if wait is not None:
        record["load"][0]["ranks_wait_share"] = wait
    assert load.warnings([record]) == (
        ["a rank on n0 waited for a CPU 20% of the run"] if warned else []
    )
