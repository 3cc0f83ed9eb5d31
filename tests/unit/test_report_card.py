"""The report's summary card, table of contents and folded long tables, without a browser."""

from __future__ import annotations

import re

from commscope import kinds
from commscope.analysis import p2p
from commscope.data.records import Coll, Point
from commscope.data.run_data import read_run
from commscope.data.store import Store
from commscope.report.html import FOLD_ROWS
from commscope.units import rate_text, time_text
from tests import synthetic_runs
from tests.unit import test_terminal_summary as busy

HOSTILE = "<script>alert(1)</script>"


def _card(page: str) -> str:
    body = page.split("<body>", 1)[1]
    first = re.search(r"<section[^>]*>", body)
    assert first is not None and 'id="summary"' in first.group(0), "the card comes first"
    return body[first.start() : body.index("</section>", first.start())]


def _items(html: str) -> list[str]:
    return re.findall(r"<li>(.*?)</li>", html, re.S)


def test_the_card_quotes_the_inter_node_figures_first_and_escapes_labels(tmp_path):
    path = tmp_path / "s.sqlite"
    run_id = synthetic_runs.store_run(path, HOSTILE)
    with Store.open(path) as store:
        run = read_run(store, run_id)
        page = kinds.render_report([run])
    card = _card(page)
    assert f'<a href="#run-{run_id}">run {run_id} &lt;script&gt;alert(1)&lt;/script&gt;</a>' in card
    rows = re.findall(r'<tr><th class="l">(.*?)</th><td class="l">(.*?)</td></tr>', card)
    assert rows[0][0] == "inter-node latency"  # the figure an admin quotes first
    [inter] = [k for k in p2p.key_figures(run.points) if k.pair == "inter-node"]
    assert inter.latency_s is not None and inter.peak_bandwidth_Bps is not None
    shown = dict(rows)
    assert shown["inter-node latency"].startswith(time_text(inter.latency_s))
    assert shown["inter-node peak bandwidth"].startswith(rate_text(inter.peak_bandwidth_Bps))
    assert {"intra-socket latency", "allreduce on 4 ranks", "bcast on 4 ranks"} <= set(shown)
    assert "No warnings." in card


def test_each_warning_is_on_the_card_once(tmp_path):
    path = tmp_path / "s.sqlite"
    records: list[Point | Coll] = [*busy.sample_points(), *busy.sample_colls()]
    synthetic_runs.store_records(path, "all", records, "busy", 2)
    with Store.open(path) as store:
        page = kinds.render_report([read_run(store, 1)])
    warnings = _items(_card(page))
    assert warnings and len(warnings) == len(set(warnings))
    assert sum("lose its core" in w for w in warnings) == 1  # the interrupted samples
    assert sum("started late" in w for w in warnings) == 1  # every flagged collective
    flagged = [w for w in warnings if "started late" in w][0]
    assert "more" in flagged  # the points beyond the first few are counted, not listed
    assert '<a href="#summary-run-1">' in page  # the run's table points to them


def test_contents_link_every_section_and_long_tables_fold(tmp_path):
    path = tmp_path / "s.sqlite"
    a = synthetic_runs.store_run(path, "a")
    b = synthetic_runs.store_run(path, "b", with_colls=False)
    with Store.open(path) as store:
        page = kinds.render_report([read_run(store, a), read_run(store, b)])
    toc = page.split('<nav class="toc" id="contents">')[1].split("</nav>")[0]
    targets = re.findall(r'href="#([^"]+)"', toc)
    ids = set(re.findall(r'id="([^"]+)"', page))
    assert {f"run-{a}", f"run-{b}", "summary", "definitions"} <= set(targets) <= ids
    assert set(re.findall(r'href="#([^"]+)"', page)) <= ids  # no link anywhere dangles
    folds = re.findall(
        r'<details class="long">\s*<summary>(.*?) \((\d+) rows\)</summary>(.*?)</details>',
        page,
        re.S,
    )
    assert folds  # the regime fits of two pairs and three operations are many rows
    for what, n, inner in folds:
        assert what and int(n) > FOLD_ROWS
        assert inner.count("<tr>") - 1 == int(n) or len(_items(inner)) == int(n)
    # Figures before the long tables of each run.
    for run_id in (a, b):
        section = page.split(f'<section class="run" id="run-{run_id}">')[1].split("</section>")[0]
        assert section.index('<figure class="plot">') < section.index("<details")


def test_short_tables_stay_open(tmp_path):
    path = tmp_path / "s.sqlite"
    records = synthetic_runs.points("inter-node", (0, 2))
    synthetic_runs.store_records(path, "p2p", records, "one pair", 2)
    with Store.open(path) as store:
        page = kinds.render_report([read_run(store, 1)])
    key = page.split('<table class="key-figures">')[0].rsplit("<h3>Key figures</h3>", 1)[1]
    assert "<details" not in key  # three rows: shown as they are
