"""A baseline's lifecycle on real stores: --from-last, ages, and an excuse that expires.

The runs are schema-valid p2p and collective records (tests/synthetic_checks.py) stored as
the engine would store them, with a request, an end record and the night their engine
started; the checks are the jobs layer's, the commands run in-process through the CLI.
"""

from __future__ import annotations

import datetime
import json
import re
import shlex
import shutil
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from commscope.check import excuse
from commscope.check.age import BaselineAge, age_text
from commscope.check.export import write_prometheus
from commscope.check.verdict import Verdict
from commscope.cli import main
from commscope.data.store import Store
from commscope.errors import UsageError
from commscope.jobs import baseline as baseline_job
from commscope.jobs.check import CheckJob, run_check
from commscope.status import CRITICAL, OK, WARNING
from tests.synthetic_checks import LOAD_END, store_run

DAY = 86400.0
T0 = datetime.datetime(2026, 1, 5, 2, 0).timestamp()  # 02:00 local: a nightly check's hour
REQUEST: dict[str, Any] = {
    "benchmark": "p2p",
    "mpi": "openmpi",
    "np": 4,
    "launcher": "auto",
    "timeout_s": 600.0,
    "engine": {"ops": "pingpong,bw,bibw", "sizes": [8, 65536, 1048576]},
    "slurm": {"job": "101", "nodes": ["n0", "n1"], "ntasks": 4, "own": True},
}
# What a check's run stores: the timeout bounded, another allocation of the same nodes.
CHECKS_REQUEST = {**REQUEST, "timeout_s": 300.0, "slurm": {**REQUEST["slurm"], "job": "202"}}
OTHER_REQUEST = {**REQUEST, "engine": {"ops": "pingpong", "sizes": [8]}}
QUIET_END = {**LOAD_END, "load": [{**LOAD_END["load"][0], "others_share": 0.02}]}
SIZES = (8, 64, 1024, 8192, 65536, 1048576)  # of the synthetic runs' 111: stored quicker


def night(path: Path, seed: int, n: float, **kw: Any) -> int:
    """A run measured on night ``n`` (02:00 local on day T0 + n), quiet unless told."""
    kw.setdefault("request", REQUEST)
    kw.setdefault("end", QUIET_END)
    return store_run(path, seed, started_unix=T0 + n * DAY, sizes=SIZES, **kw)


def cli(path: Path, capsys: Any, *argv: str) -> tuple[int, str, str]:
    code = main(["--store", str(path), *argv])
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.fixture(scope="module")
def mixed_store(tmp_path_factory: Any) -> Path:
    """Runs 1-9: four good runs of REQUEST among runs --from-last must pass over."""
    path = tmp_path_factory.mktemp("mixed") / "store.sqlite"
    night(path, 1, 0)  # 1 good, the oldest
    night(path, 2, 1)  # 2 good
    night(path, 3, 2, request=OTHER_REQUEST)  # 3 another request: not like, not counted
    night(path, 4, 3, status="incomplete")  # 4 stopped early
    night(path, 5, 4, end=LOAD_END)  # 5 others took 50 % of a host's CPUs, the rest 2 %
    night(path, 6, 5, request=CHECKS_REQUEST)  # 6 good: a check's run of the same request
    night(path, 7, 6, nodes=("n2", "n3"))  # 7 other hosts
    night(path, 8, 7, mpi="mpich-4.0")  # 8 another MPI
    night(path, 9, 8)  # 9 good, the newest
    return path


@pytest.fixture
def mixed(mixed_store: Path, tmp_path: Path) -> Path:
    """A copy of the mixed store, for one test to write baselines into."""
    path = tmp_path / "store.sqlite"
    shutil.copyfile(mixed_store, path)  # closed: the write-ahead log is in the file
    return path


def create(path: Path, name: str = "nightly", **kw: Any) -> baseline_job.Made:
    return baseline_job.create(baseline_job.BaselineJob(store=str(path), name=name, **kw))


def test_from_last_takes_the_newest_good_runs_of_the_request(mixed: Path) -> None:
    made = create(mixed, from_last=3)
    assert made.baseline.runs == (2, 6, 9)  # oldest first; 1 is good but older
    assert made.picked is not None and made.picked.reference == 9
    # Passed over on the way: the incomplete, loaded, other-hosts and other-MPI runs.
    assert made.picked.skipped == {
        "incomplete": 1,
        "on other hosts": 1,
        "under another environment": 1,
        "loaded": 1,
    }
    with Store.open(mixed, write=False) as store:
        assert store.baseline("nightly")["runs"] == [2, 6, 9]


def test_from_last_like_a_given_run(mixed: Path) -> None:
    made = create(mixed, name="mpich", from_last=1, like="8")
    assert made.baseline.runs == (8,)
    made = create(mixed, name="other", from_last=1, like="3")
    assert made.baseline.runs == (3,)


def test_a_loaded_newest_run_is_passed_over_even_for_one_run(mixed: Path) -> None:
    loaded = night(mixed, 10, 9, end=LOAD_END)
    made = create(mixed, from_last=1)
    # Its load is judged against the median of three like runs (10, 9, 6), not its own.
    assert made.baseline.runs == (9,) and made.picked is not None
    assert made.picked.reference == loaded and made.picked.skipped["loaded"] == 1


def test_too_few_good_runs_is_one_line_naming_the_count_and_the_fix(mixed: Path) -> None:
    with pytest.raises(UsageError) as err:
        create(mixed, from_last=5)
    text = str(err.value)
    assert "\n" not in text
    assert text.startswith("--from-last 5: 4 good runs like run 9")
    assert "1 incomplete" in text and "1 loaded" in text and "1 on other hosts" in text
    assert text.endswith("give --from-last 4, or measure it again on 1 more night")
    with pytest.raises(UsageError, match=r"1 good run like run 8 .*name the runs by id$"):
        create(mixed, from_last=2, like="8")
    with Store.open(mixed, write=False) as store:
        assert store.baseline_names() == []  # nothing half-made


def test_from_last_on_the_command_line(mixed: Path, capsys: Any) -> None:
    code, out, _ = cli(mixed, capsys, "baseline", "create", "nightly", "--from-last", "3")
    assert code == 0
    assert out.startswith("--from-last 3: runs 2, 6, 9, like run 9 (passed over: 1 incomplete,")
    code, _, err = cli(mixed, capsys, "baseline", "create", "again", "--from-last", "9")
    assert code == 2 and err.count("\n") == 1 and "give --from-last 4" in err
    code, _, err = cli(mixed, capsys, "baseline", "create", "x", "1", "2", "--from-last", "2")
    assert code == 2 and "give run ids or --from-last N, not both" in err
    code, _, err = cli(mixed, capsys, "baseline", "create", "nightly", "--from-last", "3")
    assert code == 2 and "--replace" in err


def test_a_rebase_takes_the_runs_under_the_new_environment(tmp_path: Path) -> None:
    path = tmp_path / "store.sqlite"
    old = [night(path, s, s) for s in (1, 2, 3)]
    create(path, runs=tuple(map(str, old)))
    new = [night(path, s, s, mpi="mpich-4.0", request=CHECKS_REQUEST) for s in (4, 5, 6)]
    night(path, 7, 7, request=OTHER_REQUEST)  # the newest run is of another request
    made = create(path, from_last=3, replace=True)
    assert made.replaced and made.baseline.runs == tuple(new)
    assert made.baseline.environment["mpi"] == "mpich-4.0"
    # Four asked: the three openmpi runs are of another environment than the newest like run.
    with pytest.raises(UsageError, match="3 under another environment"):
        create(path, from_last=4, replace=True)


def test_ages_in_text_and_json(tmp_path: Path, capsys: Any) -> None:
    assert [age_text(s) for s in (59, 61, 2400, 7300, 3600 * 30, 12 * DAY + 5)] == [
        "0 minutes", "1 minute", "40 minutes", "2 hours", "30 hours", "12 days",
    ]  # fmt: skip
    made = BaselineAge(T0, T0 - 9 * DAY, T0 - 2 * DAY)
    assert made.to_json(T0 + 12 * DAY) == {
        "created_unix": T0,
        "age_days": 12.0,
        "oldest_run_unix": T0 - 9 * DAY,
        "newest_run_unix": T0 - 2 * DAY,
        "newest_run_age_days": 14.0,
    }
    assert made.text(T0 + 12 * DAY).startswith("12 days old (made 2026-01-05 02:00)")

    path = tmp_path / "store.sqlite"
    runs = [night(path, 1, 0), night(path, 2, 2), night(path, 3, 5)]
    create(path, runs=tuple(map(str, runs)))
    code, out, _ = cli(path, capsys, "baseline", "list", "--json")
    (row,) = json.loads(out)["baselines"]
    assert code == 0 and row["oldest_run_unix"] == T0 and row["newest_run_unix"] == T0 + 5 * DAY
    assert 0 <= row["age_days"] < 0.1  # made just now
    first, last = (datetime.date.fromtimestamp(t).isoformat() for t in (T0, T0 + 5 * DAY))
    code, out, _ = cli(path, capsys, "baseline", "show", "nightly")
    assert re.search(r"; \d+ minutes? old \(made ", out) and f"runs of {first} to {last}" in out
    code, out, _ = cli(path, capsys, "baseline", "list")
    assert f"{first} to {last}" in out
    code, out, _ = cli(path, capsys, "baseline", "show", "nightly", "--json")
    assert json.loads(out)["age"]["newest_run_unix"] == T0 + 5 * DAY


# --- an excused environment change expires ------------------------------------------------


def check(path: Path, run: int, nights: int = 3) -> Verdict:
    return run_check(CheckJob(str(path), "nightly", run=str(run), excuse_nights=nights)).verdict


@pytest.fixture
def baseline(tmp_path: Path) -> Path:
    """Baseline 'nightly' of three openmpi runs on nights 0-2."""
    path = tmp_path / "store.sqlite"
    create(path, runs=tuple(str(night(path, s, s)) for s in (1, 2, 3)))
    return path


def test_a_changed_environment_excuses_n_nights_then_asks_to_rebase_and_judges(
    baseline: Path, capsys: Any
) -> None:
    change = "MPI: openmpi-4.1.4 -> mpich-4.0"
    for n in (1, 2, 3):  # nights 3, 4, 5: inter-node 25 % slower under another MPI
        run = night(baseline, 10 + n, 2 + n, mpi="mpich-4.0", inter_node=1.25)
        verdict = check(baseline, run)
        assert verdict.status == WARNING and verdict.rebase is None
        assert verdict.environment_age is not None and verdict.environment_age.nights == n
        assert any(f.excused for f in verdict.figures)
        assert not any(f.status == CRITICAL for f in verdict.figures)
        if n == 2:  # a second check of night 4, twenty minutes later: the same night
            again = night(baseline, 20, 4 + 1200 / DAY, mpi="mpich-4.0", inter_node=1.25)
            age = check(baseline, again).environment_age
            assert age is not None and (age.nights, age.runs) == (2, 3)

    run = night(baseline, 14, 6, mpi="mpich-4.0", inter_node=1.25)  # night 4 of the change
    verdict = check(baseline, run)
    assert verdict.status == CRITICAL and not any(f.excused for f in verdict.figures)
    command = "commscope baseline create nightly --from-last 3 --replace"
    assert verdict.rebase == command
    assert verdict.summary().endswith(
        f"; the environment changed 3 nights ago ({change}); rebase: {command}"
    )
    assert verdict.to_json()["environment_age"] == {
        "changes": [change], "nights": 4, "runs": 5, "excused_nights": 3, "expired": True,
    }  # fmt: skip
    prom = baseline.parent / "check.prom"
    write_prometheus(verdict, str(prom))
    families = {f.name: f for f in text_string_to_metric_families(prom.read_text())}
    (asked,) = families["commscope_check_rebase_asked"].samples
    assert asked.value == 1 and asked.labels == {"baseline": "nightly"}

    # Figures as good as the baseline's: still WARNING, asking to rebase (never OK again).
    run = night(baseline, 15, 7, mpi="mpich-4.0")
    verdict = check(baseline, run)
    assert verdict.status == WARNING and verdict.counts()["WARNING"] == 0
    assert "rebase: commscope baseline create" in verdict.summary()

    # The command it names rebases on the runs under the new MPI; then all is well.
    code, out, _ = cli(baseline, capsys, *shlex.split(command)[1:])
    assert code == 0 and "baseline nightly replaced" in out
    verdict = check(baseline, night(baseline, 16, 8, mpi="mpich-4.0"))
    assert verdict.status == OK and verdict.environment_changes == []


def test_the_excuse_is_counted_from_the_change_and_undone_changes_start_afresh(
    baseline: Path,
) -> None:
    other = {"mpi": "mpich-4.0", "inter_node": 1.25}
    for n in (3, 4, 5):
        check(baseline, night(baseline, n, n, **other))
    check(baseline, night(baseline, 6, 6))  # back to openmpi for a night
    verdict = check(baseline, night(baseline, 7, 7, **other))
    assert verdict.environment_age is not None and verdict.environment_age.nights == 1
    assert verdict.status == WARNING and verdict.rebase is None
    # With no nights excused, the first night already judges and asks to rebase.
    verdict = check(baseline, night(baseline, 8, 8, **other), nights=0)
    assert verdict.status == CRITICAL and verdict.rebase is not None


def test_nights_run_noon_to_noon_and_the_youngest_change_decides() -> None:
    def at(day: int, hour: int, minute: int = 0) -> float:
        return datetime.datetime(2026, 1, day, hour, minute).timestamp()

    assert excuse.night(at(5, 23, 50)) == excuse.night(at(6, 0, 10)) == excuse.night(at(6, 11))
    assert excuse.night(at(6, 12, 1)) != excuse.night(at(6, 11, 59))
    mpi, kernel = "MPI: a -> b", "kernel: 6.1 -> 6.8"
    kept = {
        10: {"environment_changes": [mpi], "measured_unix": at(5, 2)},
        11: {"environment_changes": [mpi], "checked_unix": at(6, 2)},  # kept before 0.2
        12: {"environment_changes": [mpi, kernel], "measured_unix": at(7, 2)},
        14: {"environment_changes": [mpi, kernel], "measured_unix": at(9, 2)},  # a later run
    }
    age = excuse.age([mpi, kernel], 13, at(8, 2), kept, 3)
    assert age is not None and (age.nights, age.runs, age.expired) == (2, 2, False)
    age = excuse.age([mpi], 13, at(8, 2), kept, 3)
    assert age is not None and (age.nights, age.runs, age.expired) == (4, 4, True)
    assert age.rebase_command("nightly", 5) == (
        "commscope baseline create nightly --from-last 4 --replace"
    )
    assert excuse.age([], 13, at(8, 2), kept, 3) is None
