"""The HTML report rendered by a real headless Chromium: content present, hostile text inert."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from commscope import kinds
from commscope.data.record_parse import parse_record
from commscope.data.records import Header, Point
from commscope.data.run_data import read_run
from commscope.data.store import Store
from commscope.report import compare_html
from tests import synthetic_runs
from tests.conftest import need

pytestmark = pytest.mark.browser
FIXTURE = Path(__file__).parents[1] / "unit" / "fixtures" / "p2p_openmpi.jsonl"
HOSTILE = "<script>document.title='pwned'</script><img src=x onerror=\"document.title='pwned'\">"


def chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


def dump_dom(html: Path, profile: Path, size: tuple[int, int] | None = None) -> str:
    """The DOM after load; ``size``: the window (width, height) in CSS pixels."""
    argv = [
        chromium(),
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={profile}",
        *([f"--window-size={size[0]},{size[1]}"] if size else []),
        "--virtual-time-budget=2000",
        "--dump-dom",
        html.as_uri(),
    ]
    out = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    return out.stdout


def stored_fixture_run(store_path: Path, label: str) -> None:
    lines = FIXTURE.read_text().splitlines()
    records = [parse_record(line, f"fixture line {i + 1}") for i, line in enumerate(lines)]
    with Store.open(store_path) as store:
        run_id = store.create_run("p2p", label, "openmpi-4.1.4", "mpirun", 2, {"np": 2})
        seg = store.start_segment(run_id, ["mpirun"])
        for rec in records:
            if isinstance(rec, Header):
                store.set_header(run_id, seg, rec)
            elif isinstance(rec, Point):
                store.add_point(run_id, seg, rec)
        store.finish_segment(seg, "complete")
        store.set_run_status(run_id, "complete")


def test_report_renders_figures_and_keeps_hostile_labels_inert(cli, tmp_path):
    need(chromium() is not None, "headless Chromium (Debian package chromium) is not installed")
    stored_fixture_run(cli.store, HOSTILE)
    report = tmp_path / "report.html"
    cli("report", "latest", "-o", str(report), check=True)
    html = report.read_text()
    # Self-contained: nothing is fetched (the only URLs are XML namespaces).
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", html)
    assert "<script" not in html.replace("&lt;script", "")
    dom = dump_dom(report, tmp_path / "profile")
    assert "<title>commscope report</title>" in dom  # a live script would have renamed it
    assert "pwned" not in re.sub(r"&lt;script&gt;.*?&lt;/script&gt;|onerror=.*?&gt;", "", dom)
    assert "&lt;script&gt;document.title='pwned'&lt;/script&gt;" in dom
    assert dom.count("<svg") >= 2  # latency and bandwidth figures inline
    assert "inter-node" in dom and "Key figures" in dom
    # The key-figures row for the fixture's inter-node pair: 0-byte latency 17 us (median).
    assert re.search(r"<td[^>]*>inter-node</td><td>0-1</td><td>17\.00</td>", dom), dom[:3000]


ALERT = "<script>alert(1)</script>"
SCREEN = (1280, 8000)


def screenshot(html: Path, profile: Path, png: Path, size: tuple[int, int] = SCREEN) -> None:
    argv = [
        chromium(),
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={profile}",
        "--hide-scrollbars",
        f"--window-size={size[0]},{size[1]}",
        f"--screenshot={png}",
        html.as_uri(),
    ]
    out = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and png.exists(), out.stderr[-2000:]


def coloured_bands(png: Path) -> list[tuple[int, int, int]]:
    """(first row, last row, coloured pixels) of each band of rows holding coloured pixels.

    Text, tables and axes are grey; only plotted lines, markers and bands carry colour.
    """
    from PIL import Image

    rgb = np.asarray(Image.open(png).convert("RGB")).astype(int)
    coloured = (rgb.max(axis=2) - rgb.min(axis=2)) > 60
    per_row = coloured.sum(axis=1)
    bands, start, gap = [], None, 0
    for y, n in enumerate(per_row):
        if n >= 2:
            start = y if start is None else start
            gap = 0
        elif start is not None:
            gap += 1
            if gap > 40:  # a caption or table between two figures
                end = y - gap
                bands.append((start, end, int(per_row[start : end + 1].sum())))
                start, gap = None, 0
    if start is not None:
        bands.append((start, len(per_row) - 1, int(per_row[start:].sum())))
    return bands


def test_report_plots_are_drawn_and_a_script_label_shows_as_text(tmp_path):
    need(chromium() is not None, "headless Chromium (Debian package chromium) is not installed")
    synthetic_runs.store_run(tmp_path / "s.sqlite", ALERT)
    with Store.open(tmp_path / "s.sqlite") as store:
        report = kinds.write_report([read_run(store, 1)], tmp_path / "report.html")
    dom = dump_dom(report, tmp_path / "profile-dom")
    assert "<title>commscope report</title>" in dom
    assert "run 1 &lt;script&gt;alert(1)&lt;/script&gt;</h2>" in dom
    assert "<script" not in dom.replace("&lt;script", "")
    png = tmp_path / "report.png"
    screenshot(report, tmp_path / "profile-shot", png)
    bands = coloured_bands(png)
    # Seven figures: throughput, signature, saturation, regimes, short (two panels side by
    # side), long, collectives; each a tall band with many coloured pixels.
    figures = [b for b in bands if b[1] - b[0] > 150 and b[2] > 1500]
    assert len(figures) == 7, bands
    assert all(b[1] < SCREEN[1] - 1 for b in figures)  # the page fitted the screenshot


def test_compare_page_in_the_browser_keeps_hostile_labels_inert(tmp_path):
    need(chromium() is not None, "headless Chromium (Debian package chromium) is not installed")
    path = tmp_path / "s.sqlite"
    a = synthetic_runs.store_run(path, "a", with_colls=False)
    b = synthetic_runs.store_run(path, "b", with_colls=False)
    with Store.open(path) as store:
        page = compare_html.write_compare(store, [a, b], [HOSTILE, ALERT], tmp_path / "c.html")
    dom = dump_dom(page, tmp_path / "profile")
    assert "<title>commscope comparison</title>" in dom  # no script renamed it
    assert "<script" not in dom.replace("&lt;script", "")
    assert dom.count("&lt;script&gt;alert(1)&lt;/script&gt;") >= 2  # table and figure legends
    png = tmp_path / "c.png"
    screenshot(page, tmp_path / "profile-shot", png)
    assert len([b for b in coloured_bands(png) if b[1] - b[0] > 150]) == 6


def test_tcp_section_beside_mpi_in_the_browser_keeps_hostile_labels_inert(tmp_path):
    need(chromium() is not None, "headless Chromium (Debian package chromium) is not installed")
    from tests import synthetic_tcp

    path = tmp_path / "s.sqlite"
    mpi = synthetic_runs.store_run(path, "mpi", with_colls=False)
    tcp = synthetic_tcp.store_tcp_run(path, HOSTILE, 65536, retrans=3)
    with Store.open(path) as store:
        report = kinds.write_report(
            [read_run(store, i) for i in [mpi, tcp]], tmp_path / "report.html"
        )
    dom = dump_dom(report, tmp_path / "profile")
    assert "<title>commscope report</title>" in dom  # no script renamed it
    assert "pwned" not in re.sub(r"&lt;script&gt;.*?&lt;/script&gt;|onerror=.*?&gt;", "", dom)
    section = dom.split('<section class="tcp" id="tcp">')[1].split("</section>")[0]
    assert "<script" not in section.replace("&lt;script", "")
    assert "TCP: the network below MPI" in section
    for table in ("tcp-streams", "tcp-sweep", "tcp-ends"):
        assert f'<table class="{table}">' in section
    assert "&lt;script&gt;document.title='pwned'&lt;/script&gt;" in section  # shown as text
    assert "retransmitted segments (client -&gt; server 3" in section
    assert section.count("<svg") == 3  # throughput, signature, saturation: TCP beside MPI
