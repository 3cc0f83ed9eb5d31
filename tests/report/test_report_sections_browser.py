"""The contention heat map and the LogGP section in a real headless Chromium."""

from __future__ import annotations

import re

import pytest

from commscope import kinds
from commscope.data.run_data import read_run
from commscope.data.store import Store
from tests import synthetic_contention, synthetic_loggp
from tests.conftest import need
from tests.report.test_report_browser import chromium, coloured_bands, dump_dom, screenshot
from tests.unit.test_report_sections import CFS, SIZES, t_of

pytestmark = pytest.mark.browser
ALERT = "<script>alert(1)</script>"


def test_heatmap_and_loggp_plot_are_drawn_and_marked(tmp_path):
    need(chromium() is not None, "headless Chromium (Debian package chromium) is not installed")
    path = tmp_path / "s.sqlite"
    cont = synthetic_contention.store_run(
        path, synthetic_contention.records("memory", t_of, SIZES, CFS), ALERT
    )
    lg = synthetic_loggp.store_run(path, synthetic_loggp.records(synthetic_loggp.Model()))
    with Store.open(path) as store:
        report = kinds.write_report(
            [read_run(store, i) for i in [cont, lg]], tmp_path / "report.html"
        )
    dom = dump_dom(report, tmp_path / "profile-dom")
    assert "<title>commscope report</title>" in dom  # no script ran
    assert "<script" not in dom.replace("&lt;script", "")
    heat = re.search(
        r'<figure class="plot heatmap" id="contention-1-memory">.*?</figure>', dom, re.S
    )
    assert heat is not None
    # The browser kept the marks: 8 hatched cells above cf, 10 outlined above 1.1x.
    assert len(re.findall(r'<g id="cf-above-\d+-\d+">', heat.group(0))) == 8
    assert len(re.findall(r'<g id="cf-onset-\d+-\d+">', heat.group(0))) == 10
    assert "LogGP overheads and gap: intra-socket" in dom
    png = tmp_path / "report.png"
    screenshot(report, tmp_path / "profile-shot", png)
    # Two figures: the heat map (coloured cells) and the LogGP plot (coloured markers).
    figures = [b for b in coloured_bands(png) if b[1] - b[0] > 100 and b[2] > 1500]
    assert len(figures) == 2, coloured_bands(png)
