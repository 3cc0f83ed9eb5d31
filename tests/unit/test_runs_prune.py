"""`commscope runs prune`: old runs removed whole, by age and count, never a baseline's."""

from __future__ import annotations

import contextlib
import io
import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from commscope.cli import main
from commscope.data import store_prune
from commscope.data.store import Store
from commscope.errors import StoreError, UsageError
from commscope.jobs.prune import DAY_S, PruneJob, choose, prune
from tests import synthetic_runs as syn

RUN_TABLES = ("segments", "points", "run_data")


def store_run(path: Path, label: str, kind: str = "coll") -> int:
    """A small complete run of four collective points, with run data."""
    run = syn.store_records(path, kind, syn.colls()[:4], label, 4)
    with Store.open(path) as store:
        store.set_run_data(run, "note", {"run": run})
    return run


def cli(store: Path, *argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["--store", str(store), *argv])
    return code, out.getvalue(), err.getvalue()


def rows_of(path: Path) -> dict[str, set[int]]:
    """For each table of run rows, the runs that have rows in it."""
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        found = {t: {r[0] for r in conn.execute(f"SELECT run_id FROM {t}")} for t in RUN_TABLES}
        found["runs"] = {r[0] for r in conn.execute("SELECT id FROM runs")}
    finally:
        conn.close()
    return found


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Runs 1-6 "nightly" (coll), 7-8 "matrix" (coll), 9 a "nightly" of kind p2p; 1 and 2
    held by baseline "nb"; 10 still running."""
    path = tmp_path_factory.mktemp("made") / "store.sqlite"
    for _ in range(6):
        store_run(path, "nightly")
    store_run(path, "matrix")
    store_run(path, "matrix")
    store_run(path, "nightly", kind="p2p")
    code, _, err = cli(path, "baseline", "create", "nb", "1", "2")
    assert code == 0, err
    with Store.open(path) as store:
        store.create_run("coll", "nightly", None, None, 4, {})
    assert sorted(p.name for p in path.parent.iterdir()) == ["store.sqlite"]  # WAL merged
    return path


@pytest.fixture
def nights(made: Path, tmp_path: Path) -> Path:
    """A copy of the made store for one test."""
    path = tmp_path / "store.sqlite"
    shutil.copyfile(made, path)
    return path


def test_keep_counts_the_newest_of_each_kind_and_label(nights: Path) -> None:
    with Store.open(nights, write=False) as store:
        runs, held = store.list_runs(), store.held_runs()
    assert held == {1: ["nb"], 2: ["nb"]}
    choice = choose(runs, held, None, 2, now=runs[-1].created_unix)
    # nightly coll: 10 (running), 6 newest; 5 4 3 go, 2 1 held. matrix: 8 7 stay. p2p: 9.
    assert [r.id for r in choice.going] == [3, 4, 5]
    assert [(r.id, names) for r, names in choice.held] == [(1, ("nb",)), (2, ("nb",))]
    assert choice.running == ()
    choice = choose(runs, held, None, 1, now=runs[-1].created_unix)
    assert [r.id for r in choice.going] == [3, 4, 5, 6, 7]


def test_age_and_count_must_both_agree(nights: Path) -> None:
    with Store.open(nights, write=False) as store:
        runs, held = store.list_runs(), store.held_runs()
    cut = runs[4].created_unix  # run 5: runs 1-4 are older than it
    later = cut + 3 * DAY_S
    assert [r.id for r in choose(runs, held, 3.0, None, now=later).going] == [3, 4]
    # The four newest nightly coll runs (10, 6, 5, 4) stay, whatever their age.
    assert [r.id for r in choose(runs, held, 3.0, 4, now=later).going] == [3]
    # Everything old: only the running run and the baseline's stay.
    everything = choose(runs, held, 1.0, None, now=runs[-1].created_unix + 2 * DAY_S)
    assert [r.id for r in everything.going] == [3, 4, 5, 6, 7, 8, 9]
    assert [r.id for r in everything.running] == [10]
    assert [r.id for r in choose(runs, held, 30.0, None, now=later).going] == []
    with pytest.raises(UsageError, match="--older-than DAYS, --keep N or both"):
        choose(runs, held, None, None, now=later)


def test_prune_removes_every_row_of_the_runs_in_one_go(nights: Path) -> None:
    before = rows_of(nights)
    dry = prune(PruneJob(str(nights), keep=2, dry_run=True))
    assert [r.id for r in dry.pruned] == [3, 4, 5] and dry.dry_run
    assert rows_of(nights) == before  # a dry run removes nothing
    done = prune(PruneJob(str(nights), keep=2))
    assert [r.id for r in done.pruned] == [3, 4, 5] and done.points == 12
    after = rows_of(nights)
    assert after["runs"] == before["runs"] - {3, 4, 5}
    for table in RUN_TABLES:
        assert after[table] == before[table] - {3, 4, 5}, table
    code, out, _ = cli(nights, "check-store")
    assert code == 0 and "nothing is damaged" in out
    with Store.open(nights, write=False) as store:
        assert [r.id for r in store.list_runs()] == [1, 2, 6, 7, 8, 9, 10]
        assert store.held_runs() == {1: ["nb"], 2: ["nb"]}
        assert len(store.colls(6)) == 4


def test_a_baseline_made_meanwhile_keeps_its_runs(nights: Path) -> None:
    with Store.open(nights) as store:
        store.add_baseline("late", {"runs": [3]})
        assert store.prune_runs([3, 4, 10, 99]) == [4]  # held, running, absent: left out
    assert rows_of(nights)["runs"] == set(range(1, 11)) - {4}


def test_a_failed_prune_removes_nothing(nights: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    before = rows_of(nights)
    # A table SQLite cannot delete from, after the first ones: the transaction rolls back.
    monkeypatch.setattr(store_prune, "_OWNED", (*store_prune._OWNED, "no_such_table"))
    with pytest.raises(StoreError, match="cannot remove 3 runs"):
        prune(PruneJob(str(nights), keep=2))
    assert rows_of(nights) == before


def test_vacuum_gives_the_space_back(tmp_path: Path) -> None:
    path = tmp_path / "store.sqlite"
    for seed in range(8):
        syn.store_records(path, "coll", syn.colls(seed), "nightly", 4)
    kept = prune(PruneJob(str(path), keep=4))
    assert len(kept.pruned) == 4 and kept.size_after == kept.size_before  # until vacuumed
    done = prune(PruneJob(str(path), keep=1, vacuum=True))
    assert len(done.pruned) == 3 and done.vacuumed
    assert done.size_after < done.size_before / 3, (done.size_before, done.size_after)
    assert path.stat().st_size == done.size_after


def test_cli_prune_text_and_json(nights: Path) -> None:
    code, out, err = cli(nights, "runs", "prune", "--keep", "2", "--dry-run")
    assert code == 0, err
    assert "would remove 3 runs (12 points): 3 4 5" in out
    assert "kept run 1: baseline nb holds it" in out and "runs that would go" in out
    code, out, err = cli(nights, "runs", "prune", "--keep", "2", "--json")
    assert code == 0, err
    data = json.loads(out)
    assert [r["id"] for r in data["pruned"]] == [3, 4, 5] and data["points"] == 12
    assert data["kept_by_baselines"] == [
        {"id": 1, "baselines": ["nb"]},
        {"id": 2, "baselines": ["nb"]},
    ]
    assert data["dry_run"] is False and data["vacuumed"] is False
    code, out, _ = cli(nights, "runs", "prune", "--keep", "2")
    assert code == 0 and "removed 0 runs" in out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        ((), "give --older-than DAYS, --keep N or both"),
        (("--keep", "0"), "argument --keep: 0 is out of range"),
        (("--older-than", "-3"), "argument --older-than: '-3' is out of range"),
        (("--older-than", "nan"), "argument --older-than"),
    ],
)
def test_cli_prune_bad_input_is_one_line(nights: Path, argv: tuple[str, ...], message: str) -> None:
    before = rows_of(nights)
    with pytest.raises(SystemExit) if argv else contextlib.nullcontext():
        code, _, err = cli(nights, "runs", "prune", *argv)
        assert code == 2 and message in err and len(err.splitlines()) == 1, err
    assert rows_of(nights) == before


def test_cli_prune_makes_no_store(tmp_path: Path) -> None:
    missing = tmp_path / "typo.sqlite"
    code, _, err = cli(missing, "runs", "prune", "--keep", "3")
    assert code == 1 and f"no store at {missing}" in err
    assert not missing.exists()
