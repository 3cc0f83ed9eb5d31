"""The report's layout in a real headless Chromium at desktop and phone widths.

The summary card comes first, the contents' links land on sections, and at phone width the
page does not scroll sideways (wide tables scroll inside themselves). Screenshots go to
``$COMMSCOPE_ARTIFACTS`` when set (CI keeps them as artifacts), else the test's tmp_path:
never into the repository.
"""

from __future__ import annotations

import json
import os
import re
from html import escape, unescape
from pathlib import Path

import pytest

from commscope import kinds
from commscope.data.records import Coll, Point
from commscope.data.run_data import read_run
from commscope.data.store import Store
from tests import synthetic_runs, synthetic_tcp
from tests.conftest import need
from tests.report.test_report_browser import HOSTILE, chromium, dump_dom, screenshot
from tests.unit import test_terminal_summary as busy

pytestmark = pytest.mark.browser
WIDTHS = {"desktop": 1280, "phone": 390}
HEIGHT = 2000
SLACK = 2  # CSS pixels of rounding allowed beyond the viewport
CSP = re.compile(r'<meta http-equiv="Content-Security-Policy"[^>]*>')
WINDOW = (1280, HEIGHT)  # headless Chromium's window is at least 500 px wide: the report is
# laid out at each width in an iframe of that width (its srcdoc keeps the report's CSP).
FRAME = (
    '<!doctype html><html><body style="margin:0">'
    '<iframe id="f" style="border:0;display:block;width:{width}px;height:{height}px"'
    ' srcdoc="{page}"></iframe>{script}</body></html>'
)
# Measures the framed report with every fold opened and writes its answer into the DOM.
PROBE = """<script>
const f = document.getElementById("f");
f.onload = () => {
  const d = f.contentDocument, w = f.contentWindow;
  d.querySelectorAll("details").forEach(x => { x.open = true; });
  const first = d.querySelector("body section");
  document.body.setAttribute("data-probe", JSON.stringify({
    inner: w.innerWidth,
    scroll: d.scrollingElement.scrollWidth,
    first: first ? first.id : null,
    firstTop: first ? first.getBoundingClientRect().top : null,
    wide: [...d.querySelectorAll("body *")]
      .filter(e => e.getBoundingClientRect().right > w.innerWidth + 2 && !e.closest("table"))
      .map(e => e.tagName + "." + e.className).slice(0, 5),
  }));
};
</script>"""


def artifacts(tmp_path: Path) -> Path:
    """Where screenshots go: $COMMSCOPE_ARTIFACTS (made if missing), else tmp_path."""
    where = os.environ.get("COMMSCOPE_ARTIFACTS")
    out = Path(where) if where else tmp_path
    out.mkdir(parents=True, exist_ok=True)
    return out


def report_of_three_runs(tmp_path: Path) -> Path:
    """A busy run (warnings), a p2p run with collectives and a hostile label, a TCP run."""
    path = tmp_path / "s.sqlite"
    records: list[Point | Coll] = [*busy.sample_points(), *busy.sample_colls()]
    ids = [synthetic_runs.store_records(path, "all", records, "busy", 2)]
    ids.append(synthetic_runs.store_run(path, HOSTILE))
    ids.append(synthetic_tcp.store_tcp_run(path, "tcp", 65536, retrans=3))
    with Store.open(path) as store:
        return kinds.write_report([read_run(store, i) for i in ids], tmp_path / "report.html")


def framed(report: Path, width: int, script: str = "") -> Path:
    """A page showing ``report`` in an iframe ``width`` CSS pixels wide."""
    page = report.with_name(f"framed-{width}{'-probe' if script else ''}.html")
    text = escape(report.read_text(), quote=True)
    page.write_text(FRAME.format(width=width, height=HEIGHT, page=text, script=script))
    return page


def probe(report: Path, width: int, profile: Path) -> dict[str, object]:
    """What the probe measured of the report laid out ``width`` pixels wide."""
    dom = dump_dom(framed(report, width, PROBE), profile, WINDOW)
    found = re.search(r'data-probe="([^"]*)"', dom)
    assert found, "the probe did not run"
    return dict(json.loads(unescape(found.group(1))))


def test_card_first_contents_resolve_and_no_sideways_scroll(tmp_path):
    need(chromium() is not None, "headless Chromium (Debian package chromium) is not installed")
    from PIL import Image

    report = report_of_three_runs(tmp_path)
    html = report.read_text()
    assert CSP.search(html)  # the report keeps its script ban, in the frame too
    dom = dump_dom(report, tmp_path / "profile-dom")
    assert "<title>commscope report</title>" in dom  # no script renamed it
    ids = set(re.findall(r'\sid="([^"]+)"', dom))
    toc = dom.split('<nav class="toc" id="contents">')[1].split("</nav>")[0]
    targets = re.findall(r'href="#([^"]+)"', toc)
    assert {"summary", "run-1", "run-2", "run-3", "tcp", "definitions"} <= set(targets)
    assert set(targets) <= ids  # every entry lands on a section
    shots = artifacts(tmp_path)
    for name, width in WIDTHS.items():
        found = probe(report, width, tmp_path / f"profile-{name}")
        assert found["inner"] == width, found  # the window was the width asked for
        assert found["first"] == "summary", found
        assert isinstance(found["firstTop"], (int, float)) and found["firstTop"] < HEIGHT / 2
        scroll = found["scroll"]
        assert isinstance(scroll, int) and scroll <= width + SLACK, found
        assert found["wide"] == [], found  # only tables may be wider, inside their scroller
        png = shots / f"report-{name}-{width}.png"
        screenshot(framed(report, width), tmp_path / f"profile-shot-{name}", png, WINDOW)
        with Image.open(png) as image:
            assert image.size[0] == WINDOW[0]
            image.crop((0, 0, width, HEIGHT)).save(png)  # the frame alone
