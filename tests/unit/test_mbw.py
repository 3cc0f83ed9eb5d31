"""The mbw kind (osu_mbw_mr's method) from synthetic records, and osu_mbw_mr output imported."""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

import pytest
from rich.console import Console

from commscope import importers, kinds
from commscope.analysis import mbw
from commscope.cli import run_cmd, run_mbw, run_request
from commscope.data.request import EngineOptions
from commscope.data.run_data import read_run
from commscope.data.store import Store
from commscope.errors import InputError, UsageError
from commscope.kinds import mbw as mbw_kind
from commscope.measure import engine_options
from tests import synthetic_mbw as syn

FIXTURE = Path(__file__).parent / "fixtures" / "osu_mbw_mr.txt"
HOSTILE = "<script>alert(1)</script>"
MODEL = syn.Model()


def fixture_rows() -> list[tuple[int, float, float]]:
    lines = FIXTURE.read_text().splitlines()
    rows = (ln.split() for ln in lines if not ln.startswith("#"))
    return [(int(a), float(b), float(c)) for a, b, c in rows]


def text_of(items: list[object]) -> str:
    console = Console(width=200, record=True)
    for item in items:
        console.print(item)
    return console.export_text()


def test_summary_gives_the_model_peaks_and_where_bandwidth_saturates():
    (s,) = mbw.summarize(syn.records(MODEL))
    assert s.pair == "inter-node" and [st.pairs for st in s.steps] == [1, 2, 4]
    for st in s.steps:
        for r in st.rows:
            assert r.aggregate_Bps == pytest.approx(MODEL.aggregate_Bps(st.pairs, r.bytes))
            # osu_mbw_mr's relation: messages/s = MB/s / size, and k x window per sample.
            assert r.message_rate_per_s == pytest.approx(r.aggregate_Bps / r.bytes)
        # 4 pairs fill the link from 1 KiB on: the first size at the peak is named.
        assert st.peak_bytes == (1024 if st.pairs == 4 else 1 << 20) and st.peak_rate_bytes == 8
    peaks = [st.peak_Bps for st in s.steps]
    assert peaks[0] == pytest.approx(MODEL.aggregate_Bps(1, 1 << 20))
    assert peaks[1] == peaks[2] == pytest.approx(MODEL.link_Bps)
    # k=1 reaches 2/3 of the link, k=2 fills it: the bandwidth saturates at 2 pairs.
    assert s.saturation_pairs == 2
    assert "saturates at 2 pairs" in mbw.findings([s])[0]


def test_a_link_one_pair_fills_saturates_at_one_pair():
    (s,) = mbw.summarize(syn.records(syn.Model(link_Bps=1e9)))
    assert s.saturation_pairs == 1
    assert mbw.findings([s]) == [
        "inter-node: more pairs do not raise the aggregate bandwidth: 1 already reaches"
        " 90% of its peak (1000.0 MB/s with 1)"
    ]


def test_one_pair_count_names_no_saturation_and_other_ops_are_refused():
    (s,) = mbw.summarize(syn.records(MODEL, ks=(2,)))
    assert s.saturation_pairs is None and mbw.findings([s]) == []
    bw_point = syn.records(MODEL, ks=(1,))[0].raw | {"op": "bw"}
    from commscope.data.record_parse import record_from_dict

    with pytest.raises(ValueError, match="'bw' is not a multi-pair"):
        mbw.row(record_from_dict(bw_point, "x"))


def test_runs_keep_mbw_points_apart_and_the_kind_shows_them(tmp_path):
    path = tmp_path / "s.sqlite"
    run_id = syn.store_run(path, syn.records(MODEL), HOSTILE)
    with Store.open(path) as store:
        run = read_run(store, run_id)
        assert run.points == [] and len(run.family("mbw")) == 9
        assert store.measured_keys(run_id) >= {("mbw_k4", "inter-node", 1 << 20)}
        summaries = mbw_kind.summarize(run, kinds.View())
        page = kinds.render_report([run])
    assert summaries is not None
    shown = mbw_kind.to_json(summaries)
    assert json.loads(json.dumps(shown)) == shown
    (entry,) = shown["mbw"]
    assert entry["saturation_pairs"] == 2 and len(entry["steps"]) == 3
    assert entry["steps"][1]["peak_Bps"] == pytest.approx(MODEL.link_Bps)
    assert mbw_kind.to_json(None) == {"mbw": []}
    text = text_of(mbw_kind.tables(summaries))
    assert "2 (saturates)" in text and "3000.0" in text and "k=4 msg/s" in text
    # The report: a peaks table, two plots, the finding, every label escaped.
    assert "<h3>Multi-pair bandwidth and message rate</h3>" in page
    assert "<td>2 (saturates)</td><td>3000.0</td>" in page
    for caption in ("Aggregate bandwidth: inter-node", "Message rate: inter-node"):
        found = rf"<figcaption>{caption} <span>.*?</figcaption>(<svg.*?</svg>)"
        plot = re.search(found, page, re.S)
        assert plot is not None and "4 pairs" in plot.group(1)
    assert "saturates at 2 pairs" in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page and HOSTILE not in page


def test_show_json_and_table_through_the_cli(cli):
    run_id = syn.store_run(cli.store, syn.records(MODEL))
    shown = json.loads(cli("show", str(run_id), "--json", check=True).stdout)
    assert [s["pairs"] for s in shown["mbw"][0]["steps"]] == [1, 2, 4]
    assert "key_figures" not in shown  # p2p sees none of them: no p2p section
    text = cli("show", str(run_id), check=True).stdout
    assert "mbw inter-node: peaks per pair count" in text


def test_osu_mbw_mr_output_becomes_the_same_points():
    imp = importers.load("osu", FIXTURE, pair="intra-node")
    rows = fixture_rows()
    assert imp.n_points == len(rows) and imp.nranks == 4  # 2 pairs
    by_size = {p.bytes: p for p in imp.records}
    for size, mbs, rate in rows:
        p = by_size[size]
        assert p.key == ("mbw_k2", "intra-node", size)
        assert p.window == 64 and p.bytes_per_sample == 2 * 64 * size
        r = mbw.row(p)
        assert r.aggregate_Bps == pytest.approx(mbs * 1e6, rel=1e-12)
        # The file's messages/s, up to its two printed decimals of MB/s.
        assert abs(r.message_rate_per_s - rate) <= 0.005 * 1e6 / size + 0.01


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        (
            "# OSU MPI Multiple Bandwidth / Message Rate Test v7.4\n# Size MB/s Messages/s\n"
            "8  10.00  1250000.00\n",
            "data before its '# [ pairs: N ]' line",
        ),
        (
            "# OSU MPI Multiple Bandwidth / Message Rate Test v7.4\n"
            "# [ pairs: 2 ] [ window size: 64 ]\n# Size MB/s Messages/s\n8  10.00  2500000.00\n",
            "2.5e+06 messages/s is not 10 MB/s",
        ),
        (
            "# OSU MPI Multiple Bandwidth / Message Rate Test v7.4\n# [ pairs: 0 ]\n"
            "# Size MB/s Messages/s\n8  10.00  1250000.00\n",
            "pairs ",
        ),
        (
            "# OSU MPI Multiple Bandwidth / Message Rate Test v7.4\n# [ pairs: 1 ] [ window size: "
            "varied ]\n# Size MB/s\n8  10.00\n",
            "window size",
        ),
        (
            "# OSU MPI Multiple Bandwidth / Message Rate Test v7.4\n# [ pairs: 1 ]\n"
            "# Size MB/s Messages/s\n0  10.00  1.00\n",
            "not a size above 0",
        ),
    ],
)
def test_bad_osu_mbw_mr_output_is_refused_naming_file_and_line(tmp_path, text, reason):
    f = tmp_path / "mbw.txt"
    f.write_text(text)
    with pytest.raises(InputError, match=re.escape(reason)) as err:
        importers.load("osu", f)
    assert str(err.value).startswith(f"{f} line ") and "\n" not in str(err.value)


def test_a_bad_file_stores_nothing_through_the_cli(cli, tmp_path):
    f = tmp_path / "mbw.txt"
    f.write_text(FIXTURE.read_text().replace("# [ pairs: 2 ]", "#"))
    out = cli("import", "osu", str(f), "--label", "osu")
    assert out.returncode == 2 and out.stderr.count("\n") == 1 and "line 5" in out.stderr
    assert not cli.store.exists()  # refused before a store was made


def test_compare_matches_osu_mbw_mr_against_a_measured_run(cli):
    sizes = tuple(size for size, _, _ in fixture_rows())
    measured = syn.store_run(cli.store, syn.records(MODEL, ks=(2,), sizes=sizes, pair="intra-node"))
    cli("import", "osu", str(FIXTURE), "--label", "osu", "--pair", "intra-node", check=True)
    out = json.loads(cli("compare", str(measured), "latest", "--json", check=True).stdout)
    rows = [r for r in out["rows"] if r["op"] == "mbw_k2"]
    assert [r["bytes"] for r in rows] == list(sizes)
    for r, (size, mbs, _) in zip(rows, fixture_rows(), strict=True):
        ours, theirs = r["runs"]
        # Per message: the aggregate rate, as each side reports it.
        assert ours["bandwidth_Bps"] == pytest.approx(MODEL.aggregate_Bps(2, size))
        assert theirs["bandwidth_Bps"] == pytest.approx(mbs * 1e6)
    text = cli("compare", str(measured), "latest", check=True).stdout
    assert "mbw_k2 intra-node (MB/s" in text


def _args(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    run_cmd.setup_parser(parser)
    return parser.parse_args(list(argv))


def test_run_mbw_requests_osu_sizes_and_checks_the_pair_counts():
    request = run_request.build_request(_args("mbw", "--np", "8", "--max-size", "1KiB"))
    e = request.engine
    assert e.ops == "mbw" and e.sizes == tuple(1 << i for i in range(11)) and e.mbw_pairs == "auto"
    given = run_request.build_request(
        _args("mbw", "--np", "8", "--pairs-per-step", "1,4", "--sizes", "8,1K", "--window", "16")
    )
    assert given.engine.mbw_pairs == "1,4" and given.engine.window == 16
    assert engine_options.expected_points(given.engine, 1) == 4
    assert engine_options.expected_points(EngineOptions(ops="mbw", sizes=(8,)), 1) is None
    for bad, fix in (("1,5", "from 1 to 4 (half of 8 ranks)"), ("2,2", "distinct"), ("x", "1,2")):
        with pytest.raises(UsageError, match=re.escape(fix)):
            run_request.build_request(_args("mbw", "--np", "8", "--pairs-per-step", bad))
    assert run_mbw.pair_steps("auto", 2) is None


def test_run_mbw_bad_pair_count_exits_2_and_stores_nothing(cli):
    out = cli("run", "mbw", "--np", "4", "--pairs-per-step", "3")
    assert out.returncode == 2 and out.stderr.strip().count("\n") == 0
    assert "--pairs-per-step '3'" in out.stderr
    assert not cli.store.exists() or "mbw" not in cli("runs", check=True).stdout
