"""Contention level "queue": records parsed and stored, waits and queue depth derived, shown."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from commscope.analysis import queue as queue_analysis
from commscope.data.record_parse import record_from_dict
from commscope.data.records import Queue
from commscope.data.store import Store
from commscope.errors import RecordError
from tests.synthetic_runs import store_records

MIB = 1 << 20


def queue_dict(bytes_: int = MIB, loaded: list[list[float]] | None = None) -> dict[str, object]:
    """A record as the engine writes it: idle round trips of 30-39 us, two repetitions."""
    idle = [[(30 + i) * 1e-6 for i in range(10)]] * 2
    return {
        "type": "queue",
        "bytes": bytes_,
        "stream": [0, 2],
        "ping": [3, 1],
        "ping_bytes": 8,
        "messages": 10,
        "stream_s": [1.6, 1.7],  # 10 MiB at about 6.3 MB/s
        "idle_s": idle,
        "loaded_s": loaded if loaded is not None else [[0.02, 0.021, 0.022], [0.00003, 0.023]],
    }


def test_a_record_parses_with_its_key_and_samples():
    rec = record_from_dict(queue_dict(), "test")
    assert isinstance(rec, Queue)
    assert rec.key == ("contention_queue", "ping", MIB)
    assert rec.n_samples == 5
    assert rec.median_s == pytest.approx(0.021)
    assert rec.ping == (3, 1) and rec.stream == (0, 2)


@pytest.mark.parametrize("field", ["idle_s", "loaded_s"])
def test_a_record_whose_repetitions_do_not_line_up_is_refused(field):
    d = queue_dict()
    d[field] = d[field][:1]  # type: ignore[index]
    with pytest.raises(RecordError, match="one entry per repetition"):
        record_from_dict(d, "test")


def test_waits_are_round_trips_less_the_idle_median_and_give_the_queue_depth():
    w = queue_analysis.wait_of(record_from_dict(queue_dict(), "test"))  # type: ignore[arg-type]
    idle = np.median([(30 + i) * 1e-6 for i in range(10)])
    assert w.idle_s == pytest.approx(idle)
    assert w.samples == 5
    assert w.quantile(0.5) == pytest.approx(0.021 - idle)
    # One loaded round trip (30 us) is no longer than the idle ones: 4 of 5 waited.
    assert w.waiting_share == pytest.approx(0.8)
    rate = np.median([10 * MIB / 1.6, 10 * MIB / 1.7])
    assert w.stream_Bps == pytest.approx(rate)
    assert w.queued_bytes(0.5) == pytest.approx((0.021 - idle) * rate)
    shown = w.to_json()
    assert shown["wait_s"]["p50"] == pytest.approx(0.021 - idle)
    assert shown["queued_bytes"]["p90"] == pytest.approx(w.queued_bytes(0.9))


def test_a_record_without_loaded_round_trips_gives_no_waits_rather_than_zeros():
    w = queue_analysis.wait_of(record_from_dict(queue_dict(loaded=[[], []]), "test"))  # type: ignore[arg-type]
    assert w.samples == 0
    assert np.isnan(w.quantile(0.5)) and np.isnan(w.waiting_share)


def test_show_and_the_report_give_the_waits_per_stream_size(cli, tmp_path):
    recs = [record_from_dict(queue_dict(m), f"q{m}") for m in (4 * MIB, 256 << 10)]
    run = store_records(cli.store, "contention", recs, "queue", 4)  # type: ignore[arg-type]
    with Store.open(cli.store) as store:
        assert [q.bytes for q in store.queues(run)] == [256 << 10, 4 * MIB]
    shown = json.loads(cli("show", str(run), "--json", check=True).stdout)
    assert [q["bytes"] for q in shown["contention_queue"]] == [256 << 10, 4 * MIB]
    assert shown["contention"] == []
    text = cli("show", str(run), check=True).stdout
    assert "queue: round trips of a small message" in text
    assert re.search(r"262144 .* 80% ", text), text
    page = tmp_path / "r.html"
    cli("report", str(run), "-o", str(page), check=True)
    html = page.read_text()
    [table] = re.findall(r'<table class="contention-queue".*?</table>', html, re.S)
    assert "256 KiB" in table and "4 MiB" in table and "80 %" in table
    [plot] = re.findall(
        r'<figure class="plot" id="contention-queue-plot-1">.*?</figure>', html, re.S
    )
    for m in (256 << 10, 4 * MIB):  # one curve per stream size
        assert f'id="queue-cdf-{m}"' in plot
    assert "degradation t(m,cf)" not in html  # no level tables without their records


def back_dict(bytes_: int = MIB) -> dict[str, object]:
    """The stream's sender (rank 0) answering the stream's receiver (rank 2)."""
    d = queue_dict(bytes_, loaded=[[0.04, 0.13, 0.131], [0.13, 0.15]])
    d["ping"] = [2, 0]
    return d


def streamer_dict(bytes_: int = MIB) -> dict[str, object]:
    """The stream's sender (rank 0) answering another rank (3) while it streams to rank 2."""
    d = queue_dict(bytes_, loaded=[[0.019, 0.02, 0.021], [0.022, 0.023]])
    d["ping"] = [3, 0]
    return d


def test_each_answerer_is_a_point_of_its_own():
    third = record_from_dict(queue_dict(), "test")
    back = record_from_dict(back_dict(), "test")
    streamer = record_from_dict(streamer_dict(), "test")
    assert isinstance(back, Queue) and back.back and not third.back  # type: ignore[union-attr]
    assert isinstance(streamer, Queue) and not streamer.back
    assert [r.kind for r in (third, back, streamer)] == ["third", "back", "streamer"]  # type: ignore[union-attr]
    assert back.key == ("contention_queue", "back", MIB)
    assert streamer.key == ("contention_queue", "streamer", MIB)
    assert len({third.key, back.key, streamer.key}) == 3  # every kind of one size fits one run
    found = queue_analysis.waits([streamer, back, third])  # type: ignore[list-item]
    assert [w.kind for w in found] == ["third", "back", "streamer"]
    assert [w.to_json()["answerer"] for w in found] == [
        "third rank", "stream's sender", "stream's sender, to another rank"
    ]  # fmt: skip
    assert found[1].quantile(0.5) > found[0].quantile(0.5)


def test_show_and_the_report_tell_the_answerers_apart(cli, tmp_path):
    kinds = (queue_dict(), back_dict(), streamer_dict())
    recs = [record_from_dict(d, f"q{i}") for i, d in enumerate(kinds)]
    run = store_records(cli.store, "contention", recs, "queue", 4)  # type: ignore[arg-type]
    shown = json.loads(cli("show", str(run), "--json", check=True).stdout)
    assert [q["answerer"] for q in shown["contention_queue"]] == [
        "third rank", "stream's sender", "stream's sender, to another rank"
    ]  # fmt: skip
    text = cli("show", str(run), check=True).stdout
    assert "third rank" in text and "stream's sender" in text and "to another rank" in text
    page = tmp_path / "r.html"
    cli("report", str(run), "-o", str(page), check=True)
    html = page.read_text()
    [table] = re.findall(r'<table class="contention-queue".*?</table>', html, re.S)
    assert "stream&#39;s sender" in table or "stream's sender" in table
    assert f'id="queue-cdf-{MIB}"' in html and f'id="queue-cdf-back-{MIB}"' in html
    assert f'id="queue-cdf-streamer-{MIB}"' in html and "to another rank" in table
