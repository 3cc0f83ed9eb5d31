"""The HTML report and the comparison page, rendered without a browser."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from commscope import importers, kinds
from commscope.analysis import coll as coll_analysis
from commscope.data.mpi_config import EagerLimit, ProtocolLimits
from commscope.data.run_data import read_run
from commscope.data.store import Store
from commscope.report import compare_html, figures
from tests import synthetic_runs

FIXTURES = Path(__file__).parent / "fixtures"
HOSTILE = "<script>alert(1)</script>"


def svgs(page: str) -> int:
    return len(re.findall(r"<svg[\s>]", page))


VADER = EagerLimit("Open MPI", "vader", "intra-node", "btl_vader_eager_limit", 4096, "--mca")


def test_report_has_every_section_figure_and_no_fetch(tmp_path):
    path = tmp_path / "s.sqlite"
    limits = ProtocolLimits("Open MPI", (VADER,), {"btl_vader_eager_limit": "4096"})
    request = {"np": 4, "mca": {"btl_vader_eager_limit": "4096"}}
    run_id = synthetic_runs.store_run(path, HOSTILE, limits=limits, request=request)
    with Store.open(path) as store:
        out = kinds.write_report([read_run(store, run_id)], tmp_path / "r.html")
    page = out.read_text()
    for heading in (
        "Key figures",
        "Protocol regimes",
        "Findings",
        "Throughput",
        "Signature",
        "Saturation",
        "Short messages",
        "Long messages",
        "Collectives",
    ):
        assert heading in page, heading
    assert svgs(page) == 7  # six point-to-point views and the collectives
    assert "<script" not in page.replace("&lt;script", "")
    assert "run 1 &lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", page)
    # The intra-socket step contains the recorded limit: named; the header shows the setup.
    assert "3075 B and 4093 B (near 4 KiB): the Open MPI vader eager limit (4096 B)." in page
    assert "--mca btl_vader_eager_limit=4096" in page
    assert "intra-node vader 4096 B (btl_vader_eager_limit, --mca)" in page
    assert "3075 B &rarr; 4093 B" in page  # the threshold in the key-figures table
    assert page.count("<details>") == 2  # per-size and collective tables folded


def test_report_of_an_imported_run_without_header(tmp_path):
    imported = importers.load("imb", FIXTURES / "imb_mpi1.txt", pair="intra-node")
    with Store.open(tmp_path / "s.sqlite") as store:
        run_id = importers.store_imported(store, imported, "imb")
        page = kinds.render_report([read_run(store, run_id)])
    assert "imported from" in page and "imb_mpi1.txt (imb output)" in page
    assert "intra-node" in page and "Collectives" in page
    assert svgs(page) >= 6


def test_coll_plot_draws_a_band_per_operation():
    colls = synthetic_runs.colls()
    rows = [(f"{c.op} {c.group}", coll_analysis.summarize(c)) for c in colls]
    svg = figures.coll_plot(rows)
    assert svg.startswith("<svg")
    assert "allreduce world" in svg and "bcast world" in svg
    # One filled band (a path inside a PolyCollection group) per operation.
    assert len(re.findall(r'<g id="(?:FillBetweenPolyCollection|PolyCollection)_\d+">', svg)) == 2
    first = rows[0][1]
    assert first.ns < first.nc < first.nt  # invalid launches dropped, then 25 % trimmed


def test_compare_page_escapes_labels_and_overlays_runs(tmp_path):
    path = tmp_path / "s.sqlite"
    a = synthetic_runs.store_run(path, "a", with_colls=False)
    b = synthetic_runs.store_run(path, "b", with_colls=False)
    with Store.open(path) as store:
        out = compare_html.write_compare(store, [a, b], [HOSTILE, "mpich"], tmp_path / "c.html")
    page = out.read_text()
    assert svgs(page) == 6  # three ops by two pairs
    assert "<script" not in page.replace("&lt;script", "")
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page


def test_a_disturbed_run_carries_its_load_warning_in_the_report(tmp_path):
    path = tmp_path / "s.sqlite"
    with Store.open(path) as store:
        run_id = store.create_run("coll", "busy", "openmpi-4.1.4", "mpirun", 4, {"np": 4})
        seg = store.start_segment(run_id, ["mpirun"])
        store.set_header(run_id, seg, synthetic_runs.header())
        for rec in synthetic_runs.colls():
            store.add_point(run_id, seg, rec)
        host = {
            "nodes": ["n0", HOSTILE],
            "ranks": 4,
            "cpus": 2,
            "host_cpus": 2,
            "elapsed_cpu_s": 4.0,
            "tick_s": 0.01,
            "ranks_cpu_s": 2.0,
            "others_share": 0.3,
            "ranks_wait_share": 0.4,
        }
        store.finish_segment(
            seg,
            "complete",
            end={
                "type": "end",
                "points": 14,
                "elapsed_s": 2.0,
                "load": [host],
                "tcp_loss": [
                    {
                        "nodes": [HOSTILE],
                        "out_segs": 5000,
                        "retrans_segs": 80,
                        "timeouts": 2,
                        "congestion_control": "bbr",
                        "tcp_limit_output_bytes": 32768,
                        "tcp_slow_start_after_idle": 1,
                    },
                    {
                        "nodes": ["n1"],
                        "congestion_control": "cubic",
                        "tcp_limit_output_bytes": 4194304,
                        "tcp_slow_start_after_idle": 1,
                    },
                ],
            },
        )
        store.set_run_status(run_id, "complete")
        page = kinds.write_report([read_run(store, run_id)], tmp_path / "r.html").read_text()
    # The warnings are on the summary card, each once; the run's table links there.
    card = page.split('<section class="summary-card" id="summary">')[1].split("</section>")[0]
    warnings = re.findall(r"<li>(.*?)</li>", card, re.S)
    assert len(warnings) == len(set(warnings))
    [row] = [w for w in warnings if "waiting for a core" in w]
    names = "n0, &lt;script&gt;alert(1)&lt;/script&gt;"
    assert f"other processes took 30% of the 2 CPUs of {names} during the run" in row
    assert f"a rank on {names} waited for a CPU 40% of the run" in row
    assert f"4 ranks shared 2 CPUs on {names} (oversubscribed)" in row
    [lost] = [w for w in warnings if "waiting for lost segments" in w]
    assert f'<a href="#summary-run-{run_id}">{len(warnings)} in the summary</a>' in page
    assert "TCP on &lt;script&gt;alert(1)&lt;/script&gt; sent 5000 segments and resent 80" in lost
    assert "timed out 2 time(s)" in lost
    [cc] = re.findall(r'<tr class="tcp-congestion">.*?</tr>', page)
    assert "bbr on &lt;script&gt;alert(1)&lt;/script&gt;; cubic on n1" in cc
    [queue] = re.findall(r'<tr class="tcp-socket-queue">.*?</tr>', page)
    assert "32 KiB on &lt;script&gt;alert(1)&lt;/script&gt;; 4 MiB on n1" in queue
    # Both restart after idle by the setting, but BBR sets its rate itself: only n1 restarts.
    [idle] = re.findall(r'<tr class="tcp-idle-restart">.*?</tr>', page)
    assert "1 on every node (restarts on n1:" in idle


def test_a_collective_whose_times_rise_with_start_delay_is_flagged_in_its_table(tmp_path):
    rng = np.random.default_rng(3)
    delays = [d / 1e3 for d in [0.05] * 8 + [0.1] * 8 + [1.4, 2.0, 2.5, 2.9]]
    times = [float(t) for t in 0.137 + rng.normal(0, 0.003, 16)]
    times += [float(t) for t in 0.200 + rng.normal(0, 0.005, 4)]
    skewed = synthetic_runs.window_coll(times, [0] * 20, delays)
    path = tmp_path / "s.sqlite"
    with Store.open(path) as store:
        run_id = store.create_run("coll", "skew", "openmpi-4.1.4", "mpirun", 4, {"np": 4})
        seg = store.start_segment(run_id, ["mpirun"])
        store.set_header(run_id, seg, synthetic_runs.header())
        for rec in [*synthetic_runs.colls(), skewed]:
            store.add_point(run_id, seg, rec)
        store.finish_segment(seg, "complete", end={"type": "end", "points": 15, "elapsed_s": 1.0})
        store.set_run_status(run_id, "complete")
        page = kinds.write_report([read_run(store, run_id)], tmp_path / "r.html").read_text()
    [row] = re.findall(r'<tr class="coll-warning">.*?</tr>', page, re.S)
    assert "alltoall 262144 B: launch times rise with start delay" in row
    assert "the 4 of 20 valid launches begun 1.40-2.90 ms late" in row
