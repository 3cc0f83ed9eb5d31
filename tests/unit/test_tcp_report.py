"""The report's TCP section: streams against the link, the buffer sweep, TCP beside MPI."""

from __future__ import annotations

import re

import pytest

from commscope import kinds
from commscope.analysis import tcp as tcp_analysis
from commscope.data.run_data import read_run
from commscope.data.store import Store
from commscope.report import tcp_section
from tests import synthetic_runs, synthetic_tcp

LINK_MBPS = 1000
LINK_BPS = LINK_MBPS * 1e6 / 8
STREAM_BPS = 58.75e6  # 47 % of the link
CAP = 212992  # net.core.wmem_max/rmem_max
HOSTILE = "<script>alert('tcp')</script>$x$"


@pytest.fixture
def store_path(tmp_path):
    path = tmp_path / "s.sqlite"
    synthetic_tcp.store_tcp_run(path, "tcp sockbuf=default", 0, LINK_MBPS, STREAM_BPS)
    synthetic_tcp.store_tcp_run(path, HOSTILE, 65536, LINK_MBPS, STREAM_BPS, retrans=7, cap=CAP)
    synthetic_tcp.store_tcp_run(path, "tcp sockbuf=1 MiB", 1 << 20, LINK_MBPS, STREAM_BPS, cap=CAP)
    return path


def section(path, ids):
    with Store.open(path) as store:
        runs = [kinds.report_contexts([read_run(store, i)])[0] for i in ids]
        return tcp_section.build(runs)


def test_streams_are_set_against_the_link(store_path):
    tcp = section(store_path, [1, 2, 3])
    assert len(tcp["streams"]) == 6  # both directions of three runs
    for row in tcp["streams"]:
        assert row.link_Bps == pytest.approx(LINK_BPS)
        assert row.link_share == pytest.approx(row.rate_Bps / LINK_BPS)
        assert row.rate_Bps == pytest.approx(STREAM_BPS, rel=0.01)
    assert {r.direction for r in tcp["streams"]} == {"client -> server", "server -> client"}
    share = round(STREAM_BPS / LINK_BPS * 100)
    text = " ".join(tcp["findings"])
    assert (
        f"client -> server {share} %, server -> client {share} % of the 125 MB/s link"
        " (eth0 at 1000 Mb/s)" in text
    )
    # Retransmissions are named for the run and direction that had them, only there.
    lost = [f for f in tcp["findings"] if "retransmitted" in f]
    assert (
        len(lost) == 1
        and lost[0].startswith(f"run 2 {HOSTILE}")
        and "client -> server 7" in lost[0]
    )


def test_the_sweep_shows_requested_granted_and_capped_buffers(store_path):
    tcp = section(store_path, [3, 1, 2])
    rows = tcp["sweep"]
    assert [r.sockbuf for r in rows] == [0, 65536, 1 << 20]  # default first, then by size
    for r in rows:
        want = synthetic_tcp.granted(r.sockbuf, CAP if r.sockbuf else 212992)
        assert r.granted == (("client", want, want), ("server", want, want))
        assert r.peak_Bps and r.peak_bytes and r.latency_s
        assert r.stream_Bps == pytest.approx((STREAM_BPS, STREAM_BPS), rel=0.01)
    assert rows[2].caps_hit == (f"net.core.rmem_max = {CAP}", f"net.core.wmem_max = {CAP}")
    assert rows[0].caps_hit == rows[1].caps_hit == ()
    # More buffer, faster ping-pong in these runs: the largest request has the highest peak.
    best = max(rows, key=lambda r: r.peak_Bps)
    assert best.sockbuf == 1 << 20
    assert any(f.startswith("Socket-buffer sweep: 1 MiB buffers") for f in tcp["findings"])
    assert any("capped by net.core.rmem_max" in f for f in tcp["findings"])


def test_tcp_sits_beside_mpi_in_the_plots(store_path):
    mpi = synthetic_runs.store_run(store_path, "mpi", with_colls=False)
    with Store.open(store_path) as store:
        page = kinds.render_report([read_run(store, i) for i in [mpi, 1]])
    assert "TCP: the network below MPI" in page
    titles = re.findall(r"<figcaption>(TCP [a-z]+) <span>\(TCP beside MPI", page)
    assert titles == ["TCP throughput", "TCP signature", "TCP saturation"]
    # Each line is named by transport and run: MPI's pairs and the TCP run.
    assert "MPI run 4 mpi: inter-node" in page and "TCP run 1 tcp sockbuf=default" in page


def test_one_tcp_run_alone_has_tables_but_no_overlay_and_mpi_alone_no_section(store_path):
    tcp = section(store_path, [1])
    assert tcp["plots"] == [] and len(tcp["sweep"]) == 1
    mpi = synthetic_runs.store_run(store_path, "mpi", with_colls=False)
    assert section(store_path, [mpi]) is None
    with Store.open(store_path) as store:
        assert "TCP: the network below MPI" not in kinds.render_report([read_run(store, mpi)])


def test_hostile_labels_are_escaped_in_tables_and_figures(store_path):
    with Store.open(store_path) as store:
        page = kinds.render_report([read_run(store, i) for i in [1, 2, 3]])
    assert "<script>alert" not in page
    tcp = page.split('<section class="tcp"')[1]
    assert "&lt;script&gt;alert(&#39;tcp&#39;)&lt;/script&gt;$x$" in tcp  # tables, findings
    # Figure legends: matplotlib escapes the text, and the '$' stays a '$' (no mathtext).
    assert "TCP run 2 &lt;script&gt;alert('tcp')&lt;/script&gt;$x$: inter-node" in tcp


def test_without_a_link_speed_the_virtual_clusters_rate_is_the_link(tmp_path):
    path = tmp_path / "v.sqlite"
    synthetic_tcp.store_tcp_run(
        path,
        "vc",
        speed_mbps=None,
        stream_Bps=50e6,
        where={"kind": "vcluster", "nodes": 2, "rate": "800mbit"},
    )
    synthetic_tcp.store_tcp_run(path, "lo", speed_mbps=None, stream_Bps=50e6)
    tcp = section(path, [1, 2])
    vc, lo = [r for r in tcp["streams"] if r.direction == "client -> server"]
    assert vc.link_Bps == pytest.approx(800e6 / 8) and vc.link_share == pytest.approx(0.5, rel=0.01)
    assert lo.link_Bps is None and lo.link_share is None
    assert any("link's nominal rate is unknown" in f for f in tcp["findings"])


def test_caps_are_found_only_where_the_grant_fell_short():
    end = tcp_analysis.EndFacts(
        "client",
        "n0",
        "10.0.0.1",
        "eth0",
        1500,
        1000,
        sndbuf=2 * CAP,
        rcvbuf=2 * 65536,
        wmem_max=CAP,
        rmem_max=CAP,
    )
    assert end.caps_hit(1 << 20) == (f"net.core.wmem_max = {CAP}",)
    assert end.caps_hit(65536) == ()  # granted twice the request: nothing cut
    assert end.caps_hit(0) == ()  # the default asks for nothing
