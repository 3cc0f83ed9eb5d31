"""Report sections for contention (heat map per level) and LogGP, rendered without a browser."""

from __future__ import annotations

import re

from commscope import kinds
from commscope.analysis import contention as contention_analysis
from commscope.data.run_data import read_run
from commscope.data.store import Store
from commscope.report import contention_section, simulation_section
from tests import synthetic_contention, synthetic_loggp

HOSTILE = "<script>alert(1)</script>"
SIZES = [1 << 18, 1 << 20, 1 << 22]
CFS = range(1, 6)


def t_of(m: int, cf: int) -> float:
    """1 MiB and up share badly (degradation 1.6 cf - 0.6, above cf from cf 2); 256 KiB shares
    well (1 + 0.04 (cf - 1): above 1.1x from cf 4 on, never above cf)."""
    base = 1e-6 + m / 5e9
    return base * (1.6 * cf - 0.6 if m >= 1 << 20 else 1 + 0.04 * (cf - 1))


def marked(svg: str, kind: str) -> set[tuple[int, int]]:
    return {(int(m), int(cf)) for m, cf in re.findall(rf'<g id="cf-{kind}-(\d+)-(\d+)">', svg)}


def test_heatmap_marks_the_cells_each_rule_names(tmp_path):
    recs = synthetic_contention.records("memory", t_of, SIZES, CFS)
    table = contention_analysis.tables(recs)["memory"]
    svg = contention_section.heatmap(table)
    assert svg.startswith("<svg")
    deg = table.degradation
    above = {
        (int(m), int(c))
        for i, m in enumerate(table.sizes)
        for j, c in enumerate(table.cfs)
        if deg[i, j] > c
    }
    onset = {
        (int(m), int(c))
        for i, m in enumerate(table.sizes)
        for j, c in enumerate(table.cfs)
        if deg[i, j] > contention_section.ONSET
    }
    assert marked(svg, "above") == above
    assert above == {(m, cf) for m in SIZES[1:] for cf in range(2, 6)}
    assert marked(svg, "onset") == onset
    assert {cf for m, cf in onset if m == 1 << 18} == {4, 5}
    # Readable numbers in the cells: the worst cell 1.6 * 5 - 0.6 = 7.40.
    assert ">7.40<" in svg and ">1.00<" in svg


def test_report_has_a_heatmap_per_level_and_the_verdict_table(tmp_path):
    recs = synthetic_contention.records("memory", t_of, SIZES, CFS) + synthetic_contention.records(
        "nic", t_of, SIZES, range(1, 3)
    )
    path = tmp_path / "s.sqlite"
    run_id = synthetic_contention.store_run(path, recs, HOSTILE)
    with Store.open(path) as store:
        page = kinds.render_report([read_run(store, run_id)])
    figures = re.findall(
        r'<figure class="plot heatmap" id="contention-1-(\w+)">'
        r"<figcaption>Contention heat map: ([^<]+) <span>.*?</span>"
        r"</figcaption>(<svg.*?</svg>)\s*</figure>",
        page,
        re.S,
    )
    assert [(level, name) for level, name, _ in figures] == [
        ("memory", "memory controller"),
        ("nic", "NIC"),
    ]
    assert len(marked(figures[0][2], "above")) == 8 and len(marked(figures[1][2], "above")) == 2
    assert "8 cells above cf" in page and "2 cells above cf" in page
    # 256 KiB: contention shows from cf 4, never beyond cf; 1 MiB: beyond cf from cf 2.
    assert "<tr><td>256 KiB</td><td>4</td><td>5</td></tr>" in page
    assert "<tr><td>1 MiB</td><td>2</td><td>1</td></tr>" in page
    assert "<script" not in page.replace("&lt;script", "")


def test_report_shows_loggp_parameters_findings_and_plot(tmp_path):
    model = synthetic_loggp.Model()
    path = tmp_path / "s.sqlite"
    run_id = synthetic_loggp.store_run(path, synthetic_loggp.records(model), HOSTILE)
    with Store.open(path) as store:
        page = kinds.render_report([read_run(store, run_id)])
    assert "<h3>LogGP parameters</h3>" in page
    # L, o_s, o_r, g in us; G in ns/byte; 1/G in MB/s; 1/g messages per second.
    row = (
        "<td>0.300</td><td>0.200</td><td>0.250</td><td>0.400</td><td>0.1000</td>"
        "<td>10000.0</td><td>2.5e+06</td>"
    )
    assert row in page
    assert "make up 60 % of the small-message one-way time" in page
    plot = re.search(
        r"<figcaption>LogGP overheads and gap: intra-socket <span>.*?</figcaption>"
        r"(<svg.*?</svg>)",
        page,
        re.S,
    )
    assert plot is not None and "slope G = 0.1 ns/B" in plot.group(1)
    assert "run 1 &lt;script&gt;alert(1)&lt;/script&gt;" in page


def test_runs_without_these_measurements_have_no_such_sections(tmp_path):
    from tests import synthetic_runs

    path = tmp_path / "s.sqlite"
    run_id = synthetic_runs.store_run(path, "p2p only")
    with Store.open(path) as store:
        page = kinds.render_report([read_run(store, run_id)])
    assert "<h3>LogGP parameters" not in page and "Contention heat map:" not in page


def _sweep(
    changes: dict[int, float],
    parameter: str = "nic_latency",
    values: tuple[str, ...] = ("80us", "240us", "400us"),
) -> simulation_section.Sweep:
    rows = [
        (("coll", "alltoall", "8 ranks", size), [1e-3, 1e-3 * (1 + c / 2), 1e-3 * (1 + c)], c)
        for size, c in changes.items()
    ]
    return simulation_section.Sweep(
        parameter, "coll on 8 ranks of rack", [1, 2, 3], list(values), [1.0, 2.0, 3.0], rows
    )


def test_sweep_findings_name_the_most_sensitive_point_or_say_insensitive():
    moving = simulation_section.sweep_findings(_sweep({8: 3.2, 1 << 20: 0.01, 4 << 20: 0.002}))
    assert moving == [
        "coll on 8 ranks of rack: nic_latency from 80us to 400us moves alltoall"
        " 8 B (8 ranks) by +320.0%; 2 of 3 points move less than 5 %."
    ]
    calm = simulation_section.sweep_findings(_sweep({1 << 20: 0.03, 4 << 20: -0.01}))
    assert calm == [
        "coll on 8 ranks of rack: insensitive to nic_latency from 80us to 400us; no"
        " point moves 5 % or more (largest: alltoall 1 MiB (8 ranks), +3.0%)."
    ]
    svg = simulation_section.sweep_plot(_sweep({8: 3.2, 1 << 20: 0.01}))
    assert svg.startswith("<svg") and "alltoall 8 B (8 ranks)" in svg


def test_what_matters_ranks_the_swept_parameters_of_one_benchmark_by_their_largest_effect():
    latency = _sweep({8: 0.02, 1 << 20: 0.01}, "switch_latency", ("100ns", "1us", "10us"))
    taper = _sweep({8: 0.0, 1 << 20: 2.9}, "taper", ("1", "2", "4"))
    assert simulation_section.what_matters([latency, taper]) == [
        "coll on 8 ranks of rack: taper 1 to 4 moves alltoall 1 MiB (8 ranks) by +290.0%;"
        " switch_latency 100ns to 10us moves alltoall 8 B (8 ranks) by +2.0%: taper matters"
        " most."
    ]
    calm = _sweep({8: 0.01}, "taper", ("1", "2", "4"))
    assert simulation_section.what_matters([latency, calm])[0].endswith(
        "none of them moves a point 5 % or more."
    )
    # One parameter alone is the sweep's own finding, not a ranking.
    assert simulation_section.what_matters([latency]) == []
