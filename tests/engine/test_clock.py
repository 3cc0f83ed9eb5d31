"""Clock synchronisation and the wait patterns of Kurnosov 2012 (MPIPerf) here, for real."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from commscope.analysis.coll import summarize
from commscope.data.store import Store
from tests.conftest import have_mpi, need

pytestmark = pytest.mark.mpi


def test_wait_patterns_are_within_1us_of_their_true_times(cli):
    need(have_mpi("openmpi"), "openmpi is not installed")
    # On this shared VM a run's clock sync now and then lands half a slow round trip off
    # (seen in CI: WaitPatternUp 3.4-4.8 us for one timer, the rest within 1 us). Each timer
    # and sync method must validate in one of three independent runs; every run is kept.
    good: dict[tuple[str, str], dict] = {}
    runs = 0
    for _ in range(3):
        runs += 1
        out = cli(
            "validate",
            "timers",
            "--mpi",
            "openmpi",
            "--np",
            "2",
            "--timers",
            "tsc,monotonic_raw",
            "--syncs",
            "linear,drift",
            "--json",
            check=True,
        )
        verdicts = json.loads(out.stdout)
        assert len(verdicts) == 4
        for v in verdicts:
            ok = (
                abs(v["null_s"]) <= 1e-6
                and abs(v["up_s"] - 2e-6) <= 1e-6
                and v["clock_error_s"] <= 1e-6
            )
            assert v["trustworthy"] == ok, v  # the tool's own verdict says the same
            if ok:
                good.setdefault((v["timer"], v["sync"]), v)
        if len(good) == 4:
            break
    missing = {(v["timer"], v["sync"]): v for v in verdicts if (v["timer"], v["sync"]) not in good}
    assert not missing, missing
    with Store.open(cli.store) as store:
        assert [r.kind for r in store.list_runs()] == ["validate"] * (4 * runs)


def _distorted_null(cli, sync: str) -> tuple[dict, dict, dict, list[dict]]:
    # Rank 1's clock is 1 s ahead and runs 100 ppm fast; a second of launches follows the sync
    # (the budget must bind: windows of a 0 us pattern let 20000 launches pass in 0.2 s).
    out = cli(
        "run",
        "coll",
        "--mpi",
        "openmpi",
        "--np",
        "2",
        "--ops",
        "waitpattern_null",
        "--sync",
        sync,
        "--timer",
        "tsc",
        "--test-distort",
        "1:1.0:1e-4",
        "--stop",
        "rse:0.0000001",
        "--max-launches",
        "1000000",
        "--coll-budget",
        "1",
        "--json",
        check=True,
    )
    run_id = json.loads(out.stdout)["run"]
    with Store.open(cli.store) as store:
        (coll,) = store.colls(run_id)
        end = store.segments(run_id)[-1].end
        header = store.get_run(run_id).header
    # The point's own check: the clock model it was timed with against a fresh estimate; the
    # run's end check comes after the clocks were synchronised again.
    return summarize(coll).to_json(), coll.raw["clock_check"], header, end["clock_check"]


def test_drift_aware_sync_survives_a_distorted_clock_where_linear_does_not(cli):
    need(have_mpi("openmpi"), "openmpi is not installed")
    # As above: on this shared VM one sync now and then lands off by half a slow round trip;
    # the drift-aware sync must hold in one of three independent runs.
    for _ in range(3):
        drift, drift_check, header, _ = _distorted_null(cli, "drift")
        assert header["options"]["test_distort"] == {"rank": 1, "offset_s": 1.0, "drift": 1e-4}
        fitted = header["clock_sync"]["ranks"][1]
        # The offset is quoted at the fit's reference time, when the 100 ppm drift has added
        # to the 1 s for as long as the timer has run (0.06 s seen in CI): within 0.2 s. A
        # disturbed run (a sync round trip of tenths of a second on a busy host) is retried
        # like a disturbed launch, whichever figure it spoilt.
        held = (
            fitted["offset_s"] == pytest.approx(-1.0, abs=0.2)
            and fitted["drift"] == pytest.approx(-1e-4, rel=0.05)  # the rate was found
            and abs(drift["time_s"]) <= 1e-6
            and drift_check["error_s"] <= 1e-6
        )
        if held:
            break
    assert fitted["offset_s"] == pytest.approx(-1.0, abs=0.2)
    assert fitted["drift"] == pytest.approx(-1e-4, rel=0.05)
    assert abs(drift["time_s"]) <= 1e-6
    assert drift_check["error_s"] <= 1e-6  # still synchronised after the launches
    assert "clock_drift" not in drift["warnings"]

    linear, linear_check, linear_header, _ = _distorted_null(cli, "linear")
    assert linear_header["options"]["resync"] == "point"  # the default
    # Linear sync fixes the offset once; 100 ppm later the clocks are tens of us apart, far
    # beyond what the estimates' round trips explain: the point is voided, not reported.
    assert linear_check["error_s"] > 20e-6 and linear_check["unexplained_s"] > 10e-6
    assert "clock_drift" in linear["warnings"]
    print(
        f"\nWaitPatternNull under a 1 s / 100 ppm distorted clock: drift-aware "
        f"{drift['time_s'] * 1e6:.3f} us (clock error after {drift['nt']} launches "
        f"{drift_check['error_s'] * 1e6:.3f} us); linear {linear['time_s'] * 1e6:.3f} us "
        f"with {linear['nt'] - linear['nc']} of {linear['nt']} launches invalid "
        f"(clock error {linear_check['error_s'] * 1e6:.1f} us)"
    )


def test_a_cpu_hog_makes_invalid_launches_that_are_counted_not_averaged_in(cli):
    need(have_mpi("openmpi"), "openmpi is not installed")
    need(len(os.sched_getaffinity(0)) >= 2, "needs two cores")
    core = sorted(os.sched_getaffinity(0))[1]  # rank 1 is bound to the second core
    hog = subprocess.Popen(["taskset", "-c", str(core), sys.executable, "-c", "while True: pass"])
    try:
        out = cli(
            "run",
            "coll",
            "--mpi",
            "openmpi",
            "--np",
            "2",
            "--ops",
            "waitpattern_up",
            "--stop",
            "rse:0.0000001",
            "--max-launches",
            "20000",
            "--coll-budget",
            "3",
            "--json",
            check=True,
        )
    finally:
        hog.kill()
        hog.wait()
    run_id = json.loads(out.stdout)["run"]
    with Store.open(cli.store) as store:
        (coll,) = store.colls(run_id)
    s = summarize(coll)
    invalid = s.nt - s.nc
    assert invalid > 0, "a preempted rank must produce invalid launches"
    assert invalid == sum(1 for f in coll.flags if f)
    assert s.invalid_late + s.invalid_overrun >= invalid
    # The reported time comes from valid launches only: the preempted ones took milliseconds.
    worst_invalid = max(t for t, f in zip(coll.times_s, coll.flags, strict=True) if f)
    assert s.time_s < worst_invalid
    assert s.max_s <= max(coll.valid_times_s)
    shown = json.loads(cli("show", str(run_id), "--json", check=True).stdout)
    row = shown["collectives"][0]
    assert row["nt"] == s.nt and row["nc"] == s.nc and row["nc"] < row["nt"]
