"""commscope-tcp for real on loopback (no MPI, no root): records, sweeps and bad input."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator

import pytest

from commscope.data.store import Store
from commscope.errors import LaunchError
from commscope.measure.tcp import program as prog
from commscope.measure.tcp import server as tcp_server
from commscope.measure.tcp import session

FAST = ["--warmup", "2", "--max-samples", "20", "--point-budget", "0.05"]


def one_line_error(out) -> str:
    lines = [ln for ln in out.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, out.stderr
    return lines[0]


@pytest.fixture
def local_server() -> Iterator[tcp_server.Server]:
    """A server on 127.0.0.1 and a free port, for many sessions; always stopped."""
    server = tcp_server.start(prog.server_argv(prog.find(), "127.0.0.1", 0))
    try:
        yield server
    finally:
        server.stop()


def test_loopback_pingpong_and_stream_are_stored_and_analysed(cli, tmp_path):
    out = cli(
        "run",
        "tcp",
        "--loopback",
        "--sizes",
        "1,8,1024,65536,1MiB",
        "--tcp-mode",
        "both",
        "--duration",
        "1",
        "--json",
        *FAST,
        check=True,
    )
    (result,) = json.loads(out.stdout)["runs"]
    assert result["status"] == "complete" and result["pair"] == "intra-node"
    assert [e["interface"] for e in result["ends"]] == ["lo", "lo"]
    assert all(e["mtu"] == 65536 and e["speed_mbps"] is None for e in result["ends"])
    assert 0 < result["latency_s"] < 1e-3 and result["latency_bytes"] == 1
    assert [(d["from"], d["to"]) for d in result["stream"]] == [(0, 1), (1, 0)]
    assert all(d["rate_Bps"] > 1e6 and d["retrans"] is not None for d in result["stream"])
    with Store.open(cli.store) as store:
        run = store.get_run(result["run"])
        points = store.points(run.id)
    assert run.kind == "tcp" and run.label == "tcp sockbuf=default" and run.mpi is None
    assert run.header["transport"] == "tcp" and run.header["tcp"]["mode"] == "both"
    assert {(p.op, p.pair, p.bytes) for p in points} == {
        ("pingpong", "intra-node", s) for s in (1, 8, 1024, 65536, 1 << 20)
    }
    assert points[-1].bandwidth_Bps > points[0].bandwidth_Bps
    # The MPI tools read TCP runs unchanged.
    show = json.loads(cli("show", str(run.id), "--json", check=True).stdout)
    assert show["key_figures"][0]["pair"] == "intra-node"
    assert show["key_figures"][0]["latency_s"] == pytest.approx(result["latency_s"])
    assert show["tcp"]["stream"] == result["stream"]
    report = tmp_path / "r.html"
    cli("report", str(run.id), "-o", str(report), check=True)
    assert "Signature" in report.read_text()


def test_sockbuf_sweep_makes_one_run_per_size_with_the_granted_buffers(cli):
    out = cli(
        "run",
        "tcp",
        "--loopback",
        "--sizes",
        "1,65536",
        "--sockbuf",
        "default,16K,64K",
        "--label",
        "lo",
        "--json",
        *FAST,
        check=True,
    )
    runs = json.loads(out.stdout)["runs"]
    assert [r["sockbuf_requested"] for r in runs] == [0, 16384, 65536]
    with Store.open(cli.store) as store:
        labels = [store.get_run(r["run"]).label for r in runs]
    assert labels == ["lo sockbuf=default", "lo sockbuf=16 KiB", "lo sockbuf=64 KiB"]
    for r in runs[1:]:
        for end in r["ends"]:
            # The kernel doubles a request and caps it at twice net.core.[wr]mem_max.
            want_snd = 2 * min(r["sockbuf_requested"], end["wmem_max"])
            want_rcv = 2 * min(r["sockbuf_requested"], end["rmem_max"])
            assert (end["sndbuf"], end["rcvbuf"]) == (want_snd, want_rcv), end
    compare = cli("compare", *(str(r["run"]) for r in runs), "--json", check=True)
    assert compare.returncode == 0


def test_an_unreachable_peer_is_one_line_and_keeps_the_run(cli):
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    out = cli("run", "tcp", "--peer", f"127.0.0.1:{port}", "--sizes", "1")
    assert out.returncode == 1
    line = one_line_error(out)
    assert "no commscope tcp server at 127.0.0.1" in line and "commscope tcp serve" in line
    with Store.open(cli.store) as store:
        (run,) = store.list_runs()
    assert run.status == "incomplete" and "nothing was measured" in run.message


def test_an_unknown_host_is_one_line(cli):
    out = cli("run", "tcp", "--peer", "no-such-host.invalid", "--sizes", "1")
    assert out.returncode == 1
    assert "cannot resolve peer no-such-host.invalid" in one_line_error(out)


def test_a_port_in_use_is_one_line_exit_2(cli):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        out = cli("tcp", "serve", "--bind", "127.0.0.1", "--port", str(port), timeout=30)
    assert out.returncode == 2
    line = one_line_error(out)
    assert f"port {port} on 127.0.0.1 is in use" in line and "--port" in line


def test_a_server_that_is_not_ours_is_named(cli):
    with socket.socket() as lsock:
        lsock.bind(("127.0.0.1", 0))
        lsock.listen()

        def answer() -> None:
            conn, _ = lsock.accept()
            with conn:
                conn.recv(512)
                conn.sendall(b"SSH-2.0-OpenSSH_9.2\r\n")

        thread = threading.Thread(target=answer, daemon=True)
        thread.start()
        out = cli(
            "run",
            "tcp",
            "--peer",
            f"127.0.0.1:{lsock.getsockname()[1]}",
            "--sizes",
            "1",
            timeout=60,
        )
        thread.join(timeout=10)
    assert out.returncode == 1
    assert "is not a commscope tcp server (it said 'SSH-2.0" in one_line_error(out)


def test_a_peer_closing_mid_run_keeps_the_points_and_resume_measures_the_rest(tmp_path):
    server = tcp_server.start(prog.server_argv(prog.find(), "127.0.0.1", 0))
    port = server.port
    sizes = [1, 8, 64, 512, 4096]
    request = {
        "benchmark": "tcp",
        "timeout_s": 120,
        "where": {"kind": "peer", "host": "127.0.0.1", "port": port},
        "tcp": {
            "mode": "pingpong",
            "sizes": sizes,
            "sockbuf": 0,
            "warmup": 2,
            "target_rse": 1e-9,
            "point_budget_s": 0.2,
        },
    }  # each point takes 0.2 s

    def kill_after_two(done: int, total: int) -> None:
        if done == 2:
            server.stop()

    with Store.open(tmp_path / "s.sqlite") as store:
        run_id = store.create_run("tcp", "t", None, "peer", 2, request)
        try:
            with pytest.raises(LaunchError) as err:
                session.run(store, run_id, request, progress=kill_after_two)
        finally:
            server.stop()
        message = err.value.one_line()
        assert "\n" not in message
        assert "the peer closed the connection" in message or "reset" in message
        assert f"--resume {run_id}" in message
        kept = [p.bytes for p in store.points(run_id)]
        assert 2 <= len(kept) < len(sizes) and kept == sizes[: len(kept)]
        assert store.get_run(run_id).status == "incomplete"
        again = tcp_server.start(prog.server_argv(prog.find(), "127.0.0.1", port))
        try:
            outcome = session.run(store, run_id, request)
        finally:
            again.stop()
        assert outcome.new_points == len(sizes) - len(kept)
        assert sorted(p.bytes for p in store.points(run_id)) == sizes
        assert store.get_run(run_id).status == "complete"
        assert [s.status for s in store.segments(run_id)] == ["incomplete", "complete"]


def test_a_long_lived_server_serves_sessions_one_after_another(local_server, cli):
    peer = f"127.0.0.1:{local_server.port}"
    for _ in range(2):
        cli("run", "tcp", "--peer", peer, "--sizes", "1,1024", "--quiet", *FAST, check=True)
    assert sum(line == "session done" for line in local_server.log) == 2


def test_the_program_builds_from_the_shipped_sources_without_mpi(tmp_path):
    built = prog.build(tmp_path / "commscope-tcp")
    assert prog.check(built) == built
