"""The all-pairs matrix, multi-pair and one-sided sections in a real headless Chromium."""

from __future__ import annotations

import re

import pytest

from commscope import kinds
from commscope.data.run_data import read_run
from commscope.data.store import Store
from tests import synthetic_mbw
from tests.conftest import need
from tests.report.test_report_browser import chromium, coloured_bands, dump_dom, screenshot
from tests.unit import test_matrix, test_rma

pytestmark = pytest.mark.browser
ALERT = "<script>alert(1)</script>"


def test_matrix_mbw_and_rma_sections_are_drawn_and_escaped(tmp_path):
    need(chromium() is not None, "headless Chromium (Debian package chromium) is not installed")
    path = tmp_path / "s.sqlite"
    names = test_matrix.NODES[:4]
    slow = test_matrix.bw_matrix(4, lambda a, b: 5e6 if 2 in (a, b) else 22e6, noise=0.02)
    matrix = test_matrix.store_run(path, slow, names)  # labelled with a script tag
    mbw = synthetic_mbw.store_run(path, synthetic_mbw.records(synthetic_mbw.Model()), ALERT)
    rma = test_rma.store_run(path, test_rma.records(), ALERT)
    with Store.open(path) as store:
        report = kinds.write_report(
            [read_run(store, i) for i in (matrix, mbw, rma)], tmp_path / "report.html"
        )
    dom = dump_dom(report, tmp_path / "profile-dom")
    assert "<title>commscope report</title>" in dom  # no script ran
    assert "<script" not in dom.replace("&lt;script", "")
    for heading in (
        "All-pairs matrix",
        "Multi-pair bandwidth and message rate",
        "One-sided communication (RMA)",
    ):
        assert f"<h3>{heading}</h3>" in dom
    # The slowed node is named as sender and receiver, and no other node is.
    named = set(re.findall(r"(csnode\d) as (?:sender|receiver)", dom))
    assert named == {"csnode3"}, named
    figures = re.findall(r'<figure class="plot">.*?</figure>', dom, re.S)
    heat = [f for f in figures if "from each sender (row) to each receiver" in f]
    assert len(heat) == 1 and "<svg" in heat[0]
    assert sum("Aggregate bandwidth" in f or "Message rate" in f for f in figures) == 2
    assert any("One-sided latency and bandwidth" in f for f in figures)
    png = tmp_path / "report.png"
    screenshot(report, tmp_path / "profile-shot", png)
    # Each of the four figures (heat map, two mbw plots, one RMA plot) holds colour the
    # browser drew; tables and text are grey.
    drawn = [b for b in coloured_bands(png) if b[1] - b[0] > 100 and b[2] > 1500]
    assert len(drawn) == 4, coloured_bands(png)
