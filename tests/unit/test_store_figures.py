"""Each run's figure values in a real store: kept at completion, read back, kept lazily.

A history reads the kept values (one row per run and figure) instead of every raw point; a
run stored before they were kept is read from its points once and kept when the store can
be written; a read-only store is read and left as it was; damage in a kept row is named.
"""

from __future__ import annotations

import contextlib
import io
import json
import sqlite3
from pathlib import Path

import pytest

from commscope.cli import main
from commscope.data.run_data import read_run
from commscope.data.store import Store
from commscope.data.store_figures import FIGURES_KIND
from commscope.errors import StoreError
from commscope.jobs import figures
from commscope.kinds import run_figures
from commscope.kinds.figures import FIGURES_VERSION, key_of
from tests import synthetic_runs as syn
from tests.synthetic_checks import store_run
from tests.unit.test_store_damage import read_only

OSU = Path(__file__).parent / "fixtures" / "osu_latency.txt"
LATENCY = "p2p_latency_seconds"


def commscope(store: Path, *argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["--store", str(store), *argv])
    return code, out.getvalue(), err.getvalue()


def kept_rows(path: Path) -> list[tuple[int, int]]:
    """(run, how many figures it keeps) for every run that keeps some."""
    conn = sqlite3.connect(path)
    try:
        sql = """SELECT run_id, SUM(json_array_length(figures_json, '$.values'))
            FROM run_figures GROUP BY run_id ORDER BY run_id"""
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


def test_a_history_keeps_the_figures_it_read_from_points_and_reads_them_back(
    tmp_path: Path,
) -> None:
    path = tmp_path / "s.sqlite"
    runs = [store_run(path, seed) for seed in (1, 2)]
    assert kept_rows(path) == []  # stored without the jobs layer: nothing kept yet
    first = figures.read(str(path))
    assert first.kept == runs and first.not_kept is None
    with Store.open(path, write=False) as store:
        expected = {
            (r, f.key): (f.center, len(f.samples))
            for r in runs
            for f in run_figures(read_run(store, r))
            if f.samples
        }
        markers = store.figure_markers()
    assert kept_rows(path) == [(r, len(expected) // 2) for r in runs]
    assert {r: m["version"] for r, m in markers.items()} == dict.fromkeys(runs, FIGURES_VERSION)
    assert markers[1]["environment"]["hosts"] == ["n0", "n1"]
    # Read back from the rows: the same values as from the points, and nothing kept again.
    again = figures.read(str(path))
    assert again.kept == [] and again.environments[2]["hosts"] == ["n0", "n1"]
    got = {(v.run_id, key_of(v.name, v.labels)): (v.value, v.n_samples) for v in again.values}
    assert got == expected
    # Only the names asked for, and only the newest runs.
    only = figures.read(str(path), last=1, names=[LATENCY])
    assert {v.run_id for v in only.values} == {2} and {v.name for v in only.values} == {LATENCY}
    assert [r.id for r in only.runs] == [2]


def test_an_incomplete_run_is_read_from_its_points_and_never_kept(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite"
    with Store.open(path) as store:
        run = store.create_run("p2p", "cut", "openmpi", "mpirun", 4, {"np": 4})
        seg = store.start_segment(run, ["mpirun"])
        store.set_header(run, seg, syn.header())
        for rec in syn.points("inter-node", (0, 2), seed=1)[:5]:
            store.add_point(run, seg, rec)
        store.finish_segment(seg, "incomplete", "killed")
        store.set_run_status(run, "incomplete", "killed")
    found = figures.read(str(path), names=[LATENCY])
    assert found.kept == [] and found.values and kept_rows(path) == []
    with Store.open(path) as store:
        assert not figures.keep(store, run)  # not at completion either: it did not complete


def test_an_import_keeps_its_figures_when_it_is_stored(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite"
    args = ("import", "osu", str(OSU), "--label", "x", "--pair", "inter-node")
    code, _, err = commscope(path, *args)
    assert (code, err) == (0, "")
    ((run, count),) = kept_rows(path)
    assert run == 1 and count > 0
    code, out, _ = commscope(path, "history", LATENCY, "--json")
    assert code == 0 and '"run": 1' in out


def older_store(path: Path) -> None:
    """Make ``path`` the store of an earlier commscope: version 3, no run_figures table."""
    conn = sqlite3.connect(path)
    conn.execute("DROP TABLE run_figures")
    conn.execute("DELETE FROM run_data WHERE kind = ?", (FIGURES_KIND,))
    conn.execute("UPDATE schema_version SET version = 3")
    conn.commit()
    conn.close()


def test_a_version_3_store_is_read_as_it_is_read_only_and_kept_when_writable(
    tmp_path: Path,
) -> None:
    path = tmp_path / "s.sqlite"
    store_run(path, 1)
    older_store(path)
    with read_only(path):
        before = path.read_bytes()
        found = figures.read(str(path), names=[LATENCY])
        assert found.values and found.kept == []
        assert found.not_kept is not None and "read-only" in found.not_kept
        assert path.read_bytes() == before
    found = figures.read(str(path), names=[LATENCY])  # writable: brought to version 4, kept
    assert found.kept == [1]
    conn = sqlite3.connect(path)
    assert conn.execute("SELECT version FROM schema_version").fetchall() == [(4,)]
    conn.close()
    assert kept_rows(path)[0][0] == 1


def test_a_changed_kept_value_is_named_as_damage(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite"
    store_run(path, 1)
    figures.read(str(path))
    conn = sqlite3.connect(path)
    (text,) = conn.execute("SELECT figures_json FROM run_figures WHERE rowid = 1").fetchone()
    body = json.loads(text)
    body["values"][0] *= 2  # still JSON of the right shape: only the checksum tells
    conn.execute("UPDATE run_figures SET figures_json = ? WHERE rowid = 1", (json.dumps(body),))
    conn.commit()
    conn.close()
    damage = r"is damaged: run 1 figures \S+ \(table run_figures\) does not match its checksum"
    with pytest.raises(StoreError, match=damage):
        figures.read(str(path))
    code, out, _ = commscope(path, "check-store")
    assert code == 2 and "does not match its checksum" in out and "(table run_figures)" in out


def test_values_of_another_run_or_not_finite_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite"
    store_run(path, 1)
    with Store.open(path) as store:
        values, env = figures.of_run(read_run(store, 1))
        other = [values[0].__class__(2, "x", {}, 1.0, "seconds", 1)]
        with pytest.raises(ValueError, match="run 2"):
            store.keep_figures(1, other, {})
        nan = [values[0].__class__(1, "x", {}, float("nan"), "seconds", 1)]
        with pytest.raises(ValueError, match="no finite value"):
            store.keep_figures(1, nan, {})
        assert store.figure_values() == []  # nothing was written
        assert env["mpi"] == "openmpi-4.1.4"
