"""`baseline`, `check` and `history` through the real CLI on synthetic runs in a real store.

The runs are schema-valid p2p and collective records (tests/synthetic_runs.py) whose inter-node
times are scaled: a run 20 % slower between nodes must be CRITICAL and name those figures; a
run from the same distribution must be OK; the exit codes are the monitoring plugins' own.
"""

from __future__ import annotations

import json
import re
import sqlite3
from html import unescape
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from junitparser import JUnitXml
from prometheus_client.parser import text_string_to_metric_families
from scipy import stats

from commscope.check.baseline import Baseline, figure_bases
from commscope.check.verdict import NOT_JUDGED, judge
from commscope.data.store import SCHEMA_VERSION, Store
from commscope.kinds.figures import FigureSpec, figure
from commscope.status import CRITICAL, OK, UNKNOWN, WARNING
from tests import synthetic_runs as syn
from tests.synthetic_checks import LOAD_END, store_run


@pytest.fixture
def base(cli: Any) -> Any:
    """A store with a baseline 'nightly' of three runs."""
    runs = [store_run(cli.store, seed) for seed in (1, 2, 3)]
    cli("baseline", "create", "nightly", *map(str, runs), check=True)
    return cli


def test_an_unchanged_run_is_ok_and_a_slower_link_is_critical(base: Any) -> None:
    same = store_run(base.store, 4)
    out = base("check", "--baseline", "nightly", str(same))
    assert out.returncode == OK, out.stdout + out.stderr
    assert out.stdout.startswith("commscope OK: run 4 against baseline nightly")

    slow = store_run(base.store, 5, inter_node=1.25)
    out = base("check", "--baseline", "nightly", str(slow), "--json")
    assert out.returncode == CRITICAL
    verdict = json.loads(out.stdout)
    assert verdict["check_version"] == 2 and verdict["status"] == "CRITICAL"
    critical = [f for f in verdict["figures"] if f["status"] == "CRITICAL"]
    # Only inter-node figures got worse, and every large-message one is named.
    assert critical and all(f["labels"].get("pair") == "inter-node" for f in critical)
    assert any(f["name"] == "p2p_bandwidth_bytes_per_second" for f in critical)
    worst = verdict["figures"][0]
    assert worst["status"] == "CRITICAL" and worst["worse_by"] == pytest.approx(0.25, abs=0.06)
    # Worst first, then the terminal's first line names the worst figure.
    out = base("check", "--baseline", "nightly", str(slow))
    assert out.returncode == CRITICAL and "commscope CRITICAL" in out.stdout.splitlines()[0]
    assert "inter-node" in out.stdout.splitlines()[0]


def test_a_tolerance_wider_than_the_change_passes_it(base: Any) -> None:
    slow = store_run(base.store, 5, inter_node=1.25)
    out = base("check", "--baseline", "nightly", str(slow), "--tolerance", "all=40%")
    assert out.returncode == OK, out.stdout


def test_load_and_a_changed_environment_are_named_not_called_regressions(base: Any) -> None:
    loaded = store_run(base.store, 5, inter_node=1.25, end=LOAD_END)
    out = base("check", "--baseline", "nightly", str(loaded), "--json")
    verdict = json.loads(out.stdout)
    assert out.returncode == WARNING and verdict["load"]
    assert "other processes took 50%" in verdict["load"][0]
    assert not any(f["status"] == "CRITICAL" for f in verdict["figures"])
    assert any(f["excused"] and "load" in f["cause"] for f in verdict["figures"])

    other_mpi = store_run(base.store, 6, inter_node=1.25, mpi="mpich-4.0")
    verdict = json.loads(base("check", "--baseline", "nightly", str(other_mpi), "--json").stdout)
    assert verdict["status"] == "WARNING"
    assert verdict["environment_changes"] == ["MPI: openmpi-4.1.4 -> mpich-4.0"]


def test_a_wide_run_to_run_spread_is_not_judged_never_ok() -> None:
    spec = FigureSpec("x_seconds", "seconds", "lower", "latency", "x")
    rng = np.random.default_rng(0)
    runs = [[figure(spec, c * np.exp(rng.normal(0, 0.01, 50)))] for c in (1.0, 1.3, 0.8)]
    bases = figure_bases(runs)
    made = bases["x_seconds"]
    assert made.left_out == ()  # |M| of 1.3 and 0.8 below 3.5: none is far off
    sd = np.std(np.log(made.run_centers), ddof=1)
    scale = sd * np.sqrt(1 + 1 / 3)  # one figure: no family to borrow from, df = 2
    lc = np.expm1(stats.t.ppf(0.99, 2) * scale)
    ld = np.expm1((stats.t.ppf(0.99, 2) + stats.t.ppf(0.95, 2)) * scale)
    baseline = Baseline("b", 0.0, (1, 2, 3), "p2p", {}, {}, bases)
    (lim,) = baseline.limits().values()
    assert lim.df == 2 and lim.decision == pytest.approx(lc, rel=1e-9)
    assert lim.detection == pytest.approx(ld, rel=1e-9) and ld > 5  # 500 %: blind

    # 25 % slower: the baseline cannot tell that from chance, and says so (not OK).
    slower = [figure(spec, 1.25 * np.exp(rng.normal(0, 0.01, 50)))]
    verdict = judge(baseline, 9, slower, {}, 0.0)
    (only,) = verdict.figures
    assert only.status == NOT_JUDGED and not only.judged and "detection limit" in only.cause
    assert verdict.status == UNKNOWN and "none of its 1 figures can be judged" in verdict.summary()
    # With the bound lifted the figure is judged, by its decision threshold, and passes it.
    (only,) = judge(baseline, 9, slower, {}, 0.0, max_detection_limit=100.0).figures
    assert only.status == OK and only.judged_by == "decision threshold"
    assert only.limit == pytest.approx(lc, rel=1e-9)


def test_a_noisy_rate_baseline_still_calls_a_rate_near_zero() -> None:
    # Three runs of a bandwidth that spread widely: on the centers themselves the limit would
    # pass 100 % and no loss of bandwidth could ever leave it; on their log it stays below.
    spec = FigureSpec("x_bytes_per_second", "bytes_per_second", "higher", "bw", "x")
    rng = np.random.default_rng(1)
    centers = (80e6, 60e6, 75e6)
    runs = [[figure(spec, c * np.exp(rng.normal(0, 0.01, 50)))] for c in centers]
    bases = figure_bases(runs)
    made = bases["x_bytes_per_second"]
    assert made.left_out == ()
    baseline = Baseline("b", 0.0, (1, 2, 3), "p2p", {}, {}, bases)
    (lim,) = baseline.limits(0.9).values()
    factor = stats.t.ppf(0.99, 2) * np.sqrt(1 + 1 / 3)
    half = factor * np.std(np.log(made.run_centers), ddof=1)
    assert lim.decision == pytest.approx(1 - np.exp(-half), rel=1e-9)
    assert lim.decision is not None and 0.5 < lim.decision < 1.0
    linear = factor * np.std(made.run_centers, ddof=1) / np.median(made.run_centers)
    assert linear > 1.0  # the linear limit: past 100 %
    assert lim.judged  # its detection limit (82 %) is within the bound of 90 % given here

    slow = figure(spec, 1e6 * np.exp(rng.normal(0, 0.01, 50)))  # a link near dead
    (only,) = judge(baseline, 9, [slow], {}, 0.0, max_detection_limit=0.9).figures
    assert only.status == CRITICAL and only.judged_by == "decision threshold"


def test_a_run_with_none_of_the_figures_is_unknown_and_says_why() -> None:
    spec = FigureSpec("x_seconds", "seconds", "lower", "latency", "x")
    runs = [[figure(spec, [1.0, 1.1, 0.9])] for _ in range(3)]
    baseline = Baseline("b", 0.0, (1, 2, 3), "coll", {}, {}, figure_bases(runs))
    busy = "other processes took 40% of the 2 CPUs of n1, n2 during the run"
    loaded = judge(baseline, 9, [], {}, 0.0, load=[busy])
    assert loaded.status == UNKNOWN and loaded.summary().endswith(busy)
    quiet = judge(baseline, 9, [], {}, 0.0)
    assert quiet.status == UNKNOWN and "'commscope show 9' says why" in quiet.summary()


def test_a_missing_figure_warns(cli: Any) -> None:
    runs = [store_run(cli.store, s) for s in (1, 2)]
    cli("baseline", "create", "b", *map(str, runs), check=True)
    with Store.open(cli.store) as store:
        run_id = store.create_run("p2p", "partial", "openmpi-4.1.4", "mpirun", 4, {"np": 4})
        seg = store.start_segment(run_id, ["mpirun"])
        store.set_header(run_id, seg, syn.header())
        for p in syn.points("intra-socket", (0, 1), seed=9):
            store.add_point(run_id, seg, p)
        store.finish_segment(seg, "incomplete", "stopped")
        store.set_run_status(run_id, "incomplete", "stopped")
    verdict = json.loads(cli("check", "--baseline", "b", str(run_id), "--json").stdout)
    assert verdict["status"] == "WARNING"
    missing = [f for f in verdict["figures"] if f["measured"] is None]
    assert missing and all(f["status"] == "WARNING" for f in missing)


def test_prometheus_and_junit_files(base: Any, tmp_path: Path) -> None:
    slow = store_run(base.store, 5, inter_node=1.25)
    prom, xml = tmp_path / "commscope.prom", tmp_path / "check.xml"
    out = base("check", "--baseline", "nightly", str(slow), "--prometheus", str(prom),
               "--junit", str(xml), "--prometheus-figures", "all")  # fmt: skip
    assert out.returncode == CRITICAL
    families = {f.name: f for f in text_string_to_metric_families(prom.read_text())}
    status = families["commscope_check_status"].samples[0]
    assert status.value == CRITICAL and status.labels == {"baseline": "nightly"}
    assert families["commscope_check_timestamp_seconds"].samples[0].value > 1.7e9
    latency = families["commscope_p2p_latency_seconds"]
    eight = [s for s in latency.samples if s.labels["bytes"] == "8"]
    assert {s.labels["pair"] for s in eight} == {"intra-socket", "inter-node"}
    inter = next(s for s in eight if s.labels["pair"] == "inter-node")
    assert inter.value == pytest.approx(1.25 * 17e-6, rel=0.05)  # 17 us one-way, 25 % slower

    suite = next(iter(JUnitXml.fromfile(str(xml))))
    cases = list(suite)
    verdict = json.loads(base("check", "--baseline", "nightly", str(slow), "--json").stdout)
    assert len(cases) == len(verdict["figures"])
    failed = [c for c in cases if not c.is_passed and not c.is_skipped]
    assert len(failed) == verdict["counts"]["CRITICAL"] > 0
    message = failed[0].result[0].message
    assert "baseline nightly" in message and "worse" in message and "inter-node" in message

    # By default only the flagged figures get series: a matrix of 1,000 nodes stays bounded.
    base("check", "--baseline", "nightly", str(slow), "--prometheus", str(prom))
    families = {f.name: f for f in text_string_to_metric_families(prom.read_text())}
    flagged = {f["key"] for f in verdict["figures"] if f["status"] in ("WARNING", "CRITICAL")}
    per_figure = {s.labels["figure"] for s in families["commscope_check_figure_status"].samples}
    assert per_figure == flagged and len(flagged) < len(verdict["figures"])
    assert (
        families["commscope_check_figures_not_judged"].samples[0].value
        == verdict["counts"]["NOT_JUDGED"]
    )


def unknown_exports(prom: Path, xml: Path) -> tuple[float, str, str]:
    """What an UNKNOWN check wrote: its timestamp, the Prometheus reason, the JUnit error."""
    families = {f.name: f for f in text_string_to_metric_families(prom.read_text())}
    assert families["commscope_check_status"].samples[0].value == UNKNOWN
    (reason,) = families["commscope_check_unknown_info"].samples
    (case,) = list(next(iter(JUnitXml.fromfile(str(xml)))))
    (error,) = case.result
    assert type(error).__name__ == "Error"
    stamp = families["commscope_check_timestamp_seconds"].samples[0].value
    return stamp, reason.labels["reason"], error.message


def test_a_check_that_cannot_decide_replaces_last_nights_verdict_with_unknown(
    base: Any, tmp_path: Path
) -> None:
    prom, xml = tmp_path / "commscope.prom", tmp_path / "check.xml"
    run = str(store_run(base.store, 4))
    assert base("check", "--baseline", "nightly", run, "--prometheus", str(prom),
                "--junit", str(xml)).returncode == OK  # fmt: skip
    ok_stamp = (
        {f.name: f for f in text_string_to_metric_families(prom.read_text())}[
            "commscope_check_timestamp_seconds"
        ]
        .samples[0]
        .value
    )
    for bad, said in (
        (("--baseline", "nope", run), "no baseline 'nope'"),
        (("--baseline", "nightly", "99"), "99"),
        (("--baseline", "nightly", run, "--tolerance", "bw=lots"), "lots"),
    ):
        out = base("check", *bad, "--prometheus", str(prom), "--junit", str(xml))
        assert out.returncode == UNKNOWN, out.stderr
        stamp, reason, message = unknown_exports(prom, xml)
        assert stamp >= ok_stamp and said in reason and said in message, (reason, message)


def test_an_export_that_cannot_be_written_makes_the_others_unknown(
    base: Any, tmp_path: Path
) -> None:
    from commscope.check.judging import check_run
    from commscope.data.run_data import read_run
    from commscope.errors import CommscopeError
    from commscope.jobs.check import CheckJob, export

    run = store_run(base.store, 4)
    with Store.open(base.store) as store:
        verdict = check_run(Baseline.from_json(store.baseline("nightly")), read_run(store, run), {})
    prom, xml = tmp_path / "commscope.prom", tmp_path / "gone" / "check.xml"
    job = CheckJob(base.store, "nightly", prometheus=str(prom), junit=str(xml))
    with pytest.raises(CommscopeError, match="--junit"):
        export(job, verdict)
    families = {f.name: f for f in text_string_to_metric_families(prom.read_text())}
    assert families["commscope_check_status"].samples[0].value == UNKNOWN
    (reason,) = families["commscope_check_unknown_info"].samples
    assert "could not be exported" in reason.labels["reason"]
    assert "--junit" in reason.labels["reason"] and "OK" in reason.labels["reason"]


def test_history_shows_a_figure_over_the_runs(base: Any) -> None:
    store_run(base.store, 5, inter_node=1.25)
    out = base("history", 'p2p_latency_seconds{pair="inter-node",bytes="8"}', "--json")
    assert out.returncode == 0, out.stderr
    points = json.loads(out.stdout)["points"]
    assert [p["run"] for p in points] == [1, 2, 3, 4]
    assert points[-1]["value"] == pytest.approx(1.25 * points[0]["value"], rel=0.05)
    listed = base("history", "--list")
    assert "coll_time_seconds" in listed.stdout and "matrix_bandwidth" in listed.stdout


def test_baseline_list_show_delete(base: Any) -> None:
    listed = json.loads(base("baseline", "list", "--json").stdout)["baselines"]
    assert [(b["name"], b["runs"]) for b in listed] == [("nightly", [1, 2, 3])]
    body = json.loads(base("baseline", "show", "nightly", "--json").stdout)
    assert body["environment"]["hosts"] == ["n0", "n1"]
    assert body["environment"]["mpi_library"].startswith("Open MPI v4.1.4")
    assert all(f["spread"] is not None for f in body["figures"])
    assert "intra-socket" in base("baseline", "show", "nightly").stdout
    assert base("baseline", "delete", "nightly").returncode == 0
    assert json.loads(base("baseline", "list", "--json").stdout)["baselines"] == []


def one_line_error(out: Any, code: int, *words: str) -> None:
    assert out.returncode == code, out.stdout + out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in out.stderr
    for word in words:
        assert word in lines[0]


def test_bad_input_is_one_line_and_unknown_for_check(base: Any, tmp_path: Path) -> None:
    run = str(store_run(base.store, 4))
    one_line_error(base("check", "--baseline", "nope", run), 3, "no baseline 'nope'")
    one_line_error(base("check", run), 3, "--baseline")
    for bad in ("bw", "bw=", "bw=x%", "speed=5%", "bw=0%", "bw=-5%"):
        one_line_error(base("check", "--baseline", "nightly", run, "--tolerance", bad), 3, bad)
    one_line_error(
        base("check", "--baseline", "nightly", run, "--prometheus", str(tmp_path / "m.txt")),
        3,
        ".prom",
    )
    folder = tmp_path / "dir.prom"
    folder.mkdir()
    one_line_error(base("check", "--baseline", "nightly", run, "--prometheus", str(folder)), 3)
    one_line_error(
        base("check", "--baseline", "nightly", run, "--junit", str(tmp_path / "no" / "x.xml")),
        3,
    )
    other = store_run(base.store, 7, nodes=("m0", "m1"))
    one_line_error(base("check", "--baseline", "nightly", str(other)), 3, "--allow-other-hosts")
    assert base("check", "--baseline", "nightly", str(other), "--allow-other-hosts").returncode in (
        OK,
        WARNING,
    )
    with Store.open(base.store) as store:
        tcp = store.create_run("tcp", None, None, None, None, {})
    one_line_error(base("check", "--baseline", "nightly", str(tcp)), 3, "tcp run")
    # Other commands keep their exit code 2 for bad input.
    one_line_error(base("baseline", "create", "nightly", run), 2, "exists")
    one_line_error(base("baseline", "create", "bad name", run), 2, "baseline name")
    one_line_error(base("baseline", "create", "x", run, run), 2, "twice")
    one_line_error(base("baseline", "create", "x", str(tcp)), 2, "no figure")
    names = [b["name"] for b in json.loads(base("baseline", "list", "--json").stdout)["baselines"]]
    assert names == ["nightly"]  # nothing half created


def test_a_missing_store_is_named_and_never_created(cli: Any, tmp_path: Path) -> None:
    # A typo in --store: commands that need a store's runs or baselines refuse it, and
    # leave no new empty store (nor its folder) behind.
    for store in (tmp_path / "typo.sqlite", tmp_path / "typo" / "store.sqlite"):
        for argv, code in (
            (("baseline", "create", "nightly", "1"), 1),
            (("baseline", "delete", "nightly"), 1),
            (("check", "--baseline", "nightly"), 3),
            (("check", "--baseline", "nightly", "1"), 3),
        ):
            one_line_error(cli("--store", str(store), *argv), code, f"no store at {store}")
        assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_an_existing_metrics_file_is_replaced_whole(base: Any, tmp_path: Path) -> None:
    prom = tmp_path / "c.prom"
    prom.write_text("# old\n")
    run = str(store_run(base.store, 4))
    assert base("check", "--baseline", "nightly", run, "--prometheus", str(prom)).returncode == 0
    assert "commscope_check_status" in prom.read_text()
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("c.prom")) == ["c.prom"]


def test_a_version_2_store_gains_the_baselines_table_when_written(cli: Any) -> None:
    run = store_run(cli.store, 1)
    conn = sqlite3.connect(cli.store)
    conn.execute("DROP TABLE baselines")  # what a version 2 store lacks
    conn.execute("DROP TABLE run_figures")
    conn.execute("UPDATE schema_version SET version = 2")
    conn.commit()
    conn.close()
    listed = cli("baseline", "list", "--json")  # reading: the store stays version 2
    assert listed.returncode == 0 and json.loads(listed.stdout)["baselines"] == []
    one_line_error(cli("check", "--baseline", "b", str(run)), 3, "no baseline 'b'")
    cli("baseline", "create", "b", str(run), check=True)
    conn = sqlite3.connect(cli.store)
    assert conn.execute("SELECT version FROM schema_version").fetchall() == [(SCHEMA_VERSION,)]
    conn.close()
    # One run gives no run-to-run spread: nothing can be judged, and the check says so.
    out = cli("check", "--baseline", "b", str(run))
    assert out.returncode == UNKNOWN and "can be judged" in out.stdout.splitlines()[0]


def test_the_report_trend_puts_flagged_figures_first_and_marks_the_run(base: Any, tmp_path):
    slow = store_run(base.store, 5, inter_node=1.25)
    assert base("check", "--baseline", "nightly", str(slow)).returncode == CRITICAL
    out = tmp_path / "trend.html"
    done = base("report", str(slow), "--trend", "nightly", "-o", str(out))
    assert done.returncode == 0, done.stderr
    html = out.read_text()
    assert "Trend against baseline nightly" in html
    captions = [unescape(c) for c in re.findall(r"<figcaption>(.*?)</figcaption>", html)]
    verdict = json.loads(base("check", "--baseline", "nightly", str(slow), "--json").stdout)
    assert captions[0] == verdict["figures"][0]["key"] and "inter-node" in captions[0]
    assert "check CRITICAL" in html  # the flagged run's marker in the legend
    one_line_error(base("report", "--trend", "nope", "-o", str(out)), 1, "no baseline 'nope'")


def test_control_characters_in_stored_host_names_are_escaped_in_junit_and_the_report(
    tmp_path: Path,
) -> None:
    # Host names come from the machines (MPI_Get_processor_name) or an imported file: an
    # ESC or a newline in one must not reach the JUnit XML (where XML 1.0 forbids it) or
    # the HTML report raw.
    import xml.etree.ElementTree as ET

    from tests.fuzz.harness import call

    store, xml, html = tmp_path / "s.sqlite", tmp_path / "check.xml", tmp_path / "r.html"
    nodes = ("n\x1b[2J0", "n\n1")
    for seed in (1, 2, 3, 4):
        store_run(store, seed, nodes=nodes)
    assert call(None, store, "baseline", "create", "nightly", "1", "2", "3").code == 0
    out = call(None, store, "check", "--baseline", "nightly", "4", "--junit", str(xml))
    assert out.code in (OK, WARNING), out
    assert call(None, store, "report", "4", "-o", str(html)).code == 0
    raw = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
    for written in (xml.read_text(), html.read_text()):
        assert not raw.search(written)
        assert "n\\x1b[2J0" in written
    names = [case.get("name") for case in ET.fromstring(xml.read_text()).iter("testcase")]
    between = [n for n in names if 'pair="inter-node"' in n and "link=" in n]
    assert between and all('link="n\\x1b[2J0->n\\x0a1"' in n for n in between)
