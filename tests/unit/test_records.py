import json
from pathlib import Path

import pytest

from commscope.data.record_parse import load_schema, parse_record, record_from_dict
from commscope.data.records import End, Header, Point
from commscope.errors import RecordError

FIXTURE = Path(__file__).parent / "fixtures" / "p2p_openmpi.jsonl"
TYPES = "'type' is header, point, coll, contention, queue, stream, linpack, loggp or end"


def lines() -> list[str]:
    return FIXTURE.read_text().splitlines()


def parsed() -> list[Header | Point | End]:
    return [parse_record(line, f"{FIXTURE.name} line {i}") for i, line in enumerate(lines(), 1)]


def point_dict(**changes: object) -> dict:
    d = json.loads(lines()[4])  # the bw point
    d.update(changes)
    return d


def test_schema_is_shipped_and_cached() -> None:
    schema = load_schema()
    assert schema["title"].startswith("commscope engine records")
    assert load_schema() is schema


def test_golden_fixture_record_types() -> None:
    records = parsed()
    assert [type(r) for r in records] == [Header, Point, Point, Point, Point, Point, End]


def test_header_fields() -> None:
    header = parsed()[0]
    assert isinstance(header, Header)
    assert header.nranks == 2
    assert header.mpi.standard == "3.1"
    assert header.mpi.library_version.startswith("Open MPI v4.1.4")
    assert header.timer.name == "monotonic_raw"
    assert header.timer.frequency_hz is None
    assert header.nodes == ("vc0", "vc1")
    assert header.pair_labels == ("inter-node",)
    assert header.pairs[0].ranks == (0, 1)
    assert header.options["window"] == 64
    assert header.raw == json.loads(lines()[0])


def test_nodes_follow_rank_order_and_are_distinct() -> None:
    d = json.loads(lines()[0])
    d["nranks"] = 4
    d["ranks"] = [
        {"rank": 3, "node": "a", "node_index": 0, "socket": 0, "cpu": 1, "pid": 4},
        {"rank": 0, "node": "b", "node_index": 1, "socket": 0, "cpu": 0, "pid": 1},
        {"rank": 1, "node": "b", "node_index": 1, "socket": 1, "cpu": 8, "pid": 2},
        {"rank": 2, "node": "a", "node_index": 0, "socket": 0, "cpu": 0, "pid": 3},
    ]
    d["pairs"] = [
        {"label": "intra-socket", "ranks": [0, 1]},
        {"label": "inter-node", "ranks": [0, 2]},
        {"label": "intra-socket", "ranks": [2, 3]},
    ]
    header = record_from_dict(d, "test")
    assert isinstance(header, Header)
    assert header.nodes == ("b", "a")
    assert header.pair_labels == ("intra-socket", "inter-node")


def test_points_derived_values() -> None:
    points = {p.key: p for p in parsed() if isinstance(p, Point)}
    assert set(points) == {
        ("pingpong", "inter-node", 0),
        ("pingpong", "inter-node", 8),
        ("pingpong", "inter-node", 1024),
        ("bw", "inter-node", 65536),
        ("bibw", "inter-node", 65536),
    }
    zero = points[("pingpong", "inter-node", 0)]
    assert zero.median_s == pytest.approx(17e-6)
    assert zero.latency_s == zero.median_s
    assert zero.bandwidth_Bps == 0.0
    eight = points[("pingpong", "inter-node", 8)]
    assert eight.n_samples == 4
    assert eight.median_s == pytest.approx(18.5e-6)  # even count: mean of the middle two
    assert eight.bandwidth_Bps == pytest.approx(8 / 18.5e-6)
    bw = points[("bw", "inter-node", 65536)]
    assert bw.window == 64
    assert bw.median_s == pytest.approx(0.045)
    assert bw.bandwidth_Bps == pytest.approx(4194304 / 0.045)
    bibw = points[("bibw", "inter-node", 65536)]
    assert bibw.median_s == pytest.approx(0.09)
    assert bibw.bandwidth_Bps == pytest.approx(8388608 / 0.09)
    assert bibw.stop == "max_samples"


def test_zero_median_gives_unknown_bandwidth() -> None:
    point = record_from_dict(point_dict(samples_s=[0.0, 0.0, 1e-9]), "test")
    assert isinstance(point, Point)
    assert point.bandwidth_Bps != point.bandwidth_Bps  # NaN


def test_end_record() -> None:
    end = parsed()[-1]
    assert end == End(points=5, elapsed_s=12.75, raw={})
    assert end.raw == {"type": "end", "points": 5, "elapsed_s": 12.75}


def test_raw_is_excluded_from_compare_and_repr() -> None:
    a = record_from_dict(point_dict(), "a")
    b = record_from_dict(point_dict(extra="ignored"), "b")
    assert a == b
    assert hash(a) == hash(b)
    assert "raw" not in repr(a)


@pytest.mark.parametrize(
    ("line", "fragment"),
    [
        ("", "not JSON"),
        ("{not json", "not JSON"),
        ("[1, 2]", TYPES),
        ('{"type": "sample"}', TYPES),
        (json.dumps(point_dict(op="alltoall")), "alltoall"),
        (json.dumps(point_dict(samples_s=[0.1, -0.5])), "samples_s/1"),
        (json.dumps(point_dict(samples_s=[])), "samples_s"),
        (json.dumps(point_dict(bytes="8")), "bytes"),
        (json.dumps(point_dict(ranks=[1, 1])), "two ranks"),
        (json.dumps({k: v for k, v in point_dict().items() if k != "stop"}), "'stop'"),
        (json.dumps(point_dict()).replace("0.045", "NaN"), "NaN"),
        (lines()[0].replace('"schema_version": 1', '"schema_version": 2'), "schema_version 2"),
        (lines()[0].replace('"nranks": 2', '"nranks": 3'), "ranks 0..2"),
    ],
)
def test_invalid_lines_are_rejected_with_the_line_named(line: str, fragment: str) -> None:
    with pytest.raises(RecordError) as info:
        parse_record(line, "engine output line 7")
    message = info.value.one_line()
    assert message.startswith("engine output line 7: not a valid record: ")
    assert fragment in message
    assert "\n" not in str(info.value)


def test_long_reasons_are_shortened() -> None:
    line = json.dumps(point_dict(samples_s=[-1.0] + [0.001] * 5000))
    with pytest.raises(RecordError) as info:
        parse_record(line, "engine output line 9")
    assert len(str(info.value)) < 400


def test_record_from_dict_without_validation_trusts_the_input() -> None:
    d = point_dict(samples_s=[-1.0])
    with pytest.raises(RecordError):
        record_from_dict(d, "checked")
    point = record_from_dict(d, "trusted", validate=False)
    assert isinstance(point, Point)
    assert point.samples_s == (-1.0,)


def test_malformed_record_without_validation_is_a_record_error() -> None:
    with pytest.raises(RecordError, match="store point 3: not a valid record: point is malformed"):
        record_from_dict({"type": "point", "op": "bw"}, "store point 3", validate=False)
