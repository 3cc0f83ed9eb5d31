"""The HTML report rendered by a real headless Chromium: content present, hostile text inert."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from commscope.records import Header, Point, parse_record
from commscope.store import Store
from tests.conftest import need

pytestmark = pytest.mark.browser
FIXTURE = Path(__file__).parents[1] / "unit" / "fixtures" / "p2p_openmpi.jsonl"
HOSTILE = "<script>document.title='pwned'</script><img src=x onerror=\"document.title='pwned'\">"


def chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


def dump_dom(html: Path, profile: Path) -> str:
    argv = [chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
            "--no-first-run", "--disable-background-networking", "--disable-component-update",
            "--disable-sync", f"--user-data-dir={profile}", "--virtual-time-budget=2000",
            "--dump-dom", html.as_uri()]
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
