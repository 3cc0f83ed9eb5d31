"""TCP benchmarks without sockets: peers, buffer lists, argument lists, records, bad input."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from commscope import units
from commscope.data.record_parse import parse_record, record_from_dict
from commscope.data.records import End, Header, Point, Stream
from commscope.data.store import Store
from commscope.errors import RecordError, UsageError
from commscope.measure.tcp import program as prog
from commscope.measure.tcp.session import expected_records

FIXTURE = Path(__file__).parent / "fixtures" / "tcp_loopback.jsonl"


def lines() -> list[str]:
    return FIXTURE.read_text().splitlines()


def parsed() -> list:
    return [parse_record(line, f"{FIXTURE.name} line {i}") for i, line in enumerate(lines(), 1)]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("node2", ("node2", prog.DEFAULT_PORT)),
        ("node2:6000", ("node2", 6000)),
        ("10.0.0.2:1", ("10.0.0.2", 1)),
        ("[fe80::1%eth0]:7000", ("fe80::1%eth0", 7000)),
        ("[::1]", ("::1", prog.DEFAULT_PORT)),
        ("::1", ("::1", prog.DEFAULT_PORT)),
        (" host-a.example ", ("host-a.example", prog.DEFAULT_PORT)),
    ],
)
def test_peers_parse(text, expected):
    assert prog.parse_peer(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "",
        ":80",
        "host:",
        "host:0",
        "host:65536",
        "host:http",
        "[::1",
        "[::1]x",
        "a b",
        "host;rm -rf",
    ],
)
def test_bad_peers_are_one_line_usage_errors(text):
    with pytest.raises(UsageError, match="--peer") as err:
        prog.parse_peer(text)
    assert "\n" not in err.value.one_line()


def test_sockbuf_lists_parse_with_default_as_zero():
    assert prog.parse_sockbufs("default,16K,64K,128K,256K,512K") == [
        0,
        16384,
        65536,
        131072,
        262144,
        524288,
    ]
    assert prog.parse_sockbufs("64K, 64KiB,default,0") == [65536, 0]
    assert units.sockbuf_text(0) == "default" and units.sockbuf_text(262144) == "256 KiB"


@pytest.mark.parametrize("text", ["", "16K,", "huge", "2G", "-1"])
def test_bad_sockbuf_lists_are_refused(text):
    with pytest.raises(UsageError):
        prog.parse_sockbufs(text)


def test_client_argv_carries_options_and_skips_what_is_stored():
    options = {
        "mode": "both",
        "sizes": [1, 8, 1024],
        "sockbuf": 65536,
        "warmup": 5,
        "duration_s": 2.0,
        "mean_bytes": 2000,
        "max_bytes": 16000,
        "unknown": "x",
    }
    skip = {("pingpong", "inter-node", 8), ("stream", "inter-node", 2000)}
    argv = prog.client_argv(Path("/bin/t"), options, "10.0.0.3", 5220, skip, node="csnode1")
    assert argv[:6] == ["/bin/t", "client", "--peer", "10.0.0.3", "--port", "5220"]
    pairs = dict(zip(argv[6::2], argv[7::2], strict=False))
    assert pairs["--mode"] == "both" and pairs["--sizes"] == "1,8,1024"
    assert pairs["--sockbuf"] == "65536" and pairs["--duration"] == "2.0"
    assert pairs["--skip"] == "8,stream" and pairs["--node"] == "csnode1"
    assert "x" not in argv


def test_server_argv():
    assert prog.server_argv(Path("/bin/t"), "10.0.0.3", 0, "csnode2", once=True) == [
        "/bin/t",
        "serve",
        "--port",
        "0",
        "--bind",
        "10.0.0.3",
        "--node",
        "csnode2",
        "--once",
    ]
    assert prog.server_argv(Path("/bin/t"), None, 5220) == ["/bin/t", "serve", "--port", "5220"]


def test_expected_records_per_mode():
    assert expected_records({"mode": "pingpong", "sizes": [1, 2, 3]}) == 3
    assert expected_records({"mode": "both", "sizes": [1, 2, 3]}) == 4
    assert expected_records({"mode": "stream", "sizes": [1, 2, 3]}) == 1


def test_tcp_fixture_parses_into_header_points_stream_end():
    records = parsed()
    assert [type(r) for r in records] == [Header, Point, Point, Point, Stream, End]
    header = records[0]
    assert header.transport == "tcp" and header.mpi is None
    assert header.nodes == ("client-a", "server-a") and header.pair_labels == ("intra-node",)
    ends = header.raw["tcp"]["ends"]
    assert [e["role"] for e in ends] == ["client", "server"]
    assert all(e["interface"] == "lo" and e["mtu"] == 65536 for e in ends)
    assert all(e["sndbuf"] == e["rcvbuf"] == 2 * 65536 for e in ends)  # the kernel doubles
    point = records[1]
    assert point.key == ("pingpong", "intra-node", 1)
    assert point.raw["transport"] == "tcp" and point.raw["sockbuf"] == 65536
    stream = records[4]
    assert stream.key == ("stream", "intra-node", 2000)
    assert [(d.src, d.dst) for d in stream.directions] == [(0, 1), (1, 0)]
    for d in stream.directions:
        assert d.received_bytes == d.sent_bytes == sum(d.bins_bytes)
        assert d.rate_Bps == pytest.approx(d.received_bytes / d.last_s)
        assert d.loss == (d.retrans / d.segs_out if d.segs_out else None)
    assert stream.median_s == pytest.approx(2000 / min(d.rate_Bps for d in stream.directions))
    assert records[-1].raw["tcp"]["server"]["snd_mss"] > 0


def test_mpi_headers_still_need_their_mpi():
    engine_header = json.loads((FIXTURE.parent / "p2p_openmpi.jsonl").read_text().splitlines()[0])
    del engine_header["mpi"]
    with pytest.raises(RecordError, match="mpi"):
        record_from_dict(engine_header, "test")
    tcp_header = json.loads(lines()[0])
    del tcp_header["tcp"]
    with pytest.raises(RecordError, match="tcp"):
        record_from_dict(tcp_header, "test")


@pytest.mark.parametrize(
    ("change", "fragment"),
    [
        ({"directions": []}, "directions"),
        ({"mean_bytes": 0}, "mean_bytes"),
        ({"pair": "next-door"}, "pair"),
        ({"duration_s": 0}, "duration_s"),
    ],
)
def test_malformed_streams_are_refused(change, fragment):
    data = json.loads(lines()[4])
    data.update(change)
    with pytest.raises(RecordError, match=fragment) as err:
        record_from_dict(data, "test")
    assert "\n" not in err.value.one_line()


def test_streams_go_through_the_store(tmp_path):
    records = parsed()
    with Store.open(tmp_path / "s.sqlite") as store:
        run = store.create_run("tcp", "t", None, "loopback", 2, {"benchmark": "tcp"})
        seg = store.start_segment(run, ["commscope-tcp"])
        store.set_header(run, seg, records[0])
        for record in records[1:5]:
            store.add_point(run, seg, record)
        assert [p.bytes for p in store.points(run)] == [1, 8, 1024]
        (stream,) = store.streams(run)
        assert stream == records[4]
        assert store.get_run(run).header_record.transport == "tcp"
        assert ("stream", "intra-node", 2000) in store.measured_keys(run)


@pytest.mark.parametrize(
    "args",
    [
        ["run", "tcp"],
        ["run", "tcp", "--peer", "a", "--loopback"],
        ["run", "tcp", "--peer", "a:99999"],
        ["run", "tcp", "--loopback", "--sockbuf", "lots"],
        ["run", "tcp", "--loopback", "--sizes", "0"],
        ["run", "tcp", "--loopback", "--mean-size", "20000"],
        ["run", "tcp", "--loopback", "--tcp-mode", "sideways"],
        ["run", "tcp", "--loopback", "--duration", "0"],
        ["tcp", "serve", "--port", "70000"],
        ["tcp"],
    ],
)
def test_bad_tcp_arguments_give_one_line_and_exit_2(cli, args):
    out = cli(*args)
    assert out.returncode == 2, out.stderr
    lines_ = [ln for ln in out.stderr.splitlines() if ln.strip()]
    assert len(lines_) == 1, out.stderr
    assert "error" in lines_[0]
    assert not os.path.exists(cli.store) or os.path.getsize(cli.store) > 0
