"""`check --prometheus` read by a real node_exporter (Debian's prometheus-node-exporter).

The exporter is started with only its textfile collector, on a free port of 127.0.0.1, and
scraped over HTTP as Prometheus would: the check's metrics appear with their values and
labels, and scrapes racing a stream of rewrites never see half a file.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from commscope.check.baseline import Baseline
from commscope.check.export import write_prometheus
from commscope.check.judging import check_run
from commscope.data.run_data import read_run
from commscope.data.store import Store
from tests.conftest import need
from tests.synthetic_checks import store_run

EXPORTER = "prometheus-node-exporter"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def scrape(port: int) -> dict[str, Any]:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as reply:
        text = reply.read().decode()
    return {f.name: f for f in text_string_to_metric_families(text)}


@pytest.fixture
def exporter(tmp_path: Path) -> Iterator[tuple[int, Path]]:
    need(shutil.which(EXPORTER) is not None, f"{EXPORTER} is not installed (setup.sh --test)")
    folder = tmp_path / "textfile"
    folder.mkdir()
    port = free_port()
    proc = subprocess.Popen(
        [
            EXPORTER,
            f"--web.listen-address=127.0.0.1:{port}",
            "--collector.disable-defaults",
            "--collector.textfile",
            f"--collector.textfile.directory={folder}",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                scrape(port)
                break
            except OSError:
                assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
                assert time.monotonic() < deadline, "node_exporter did not answer in 30 s"
                time.sleep(0.1)
        yield port, folder
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_the_exporter_serves_the_checks_metrics(cli, exporter):
    port, folder = exporter
    runs = [store_run(cli.store, seed) for seed in (1, 2, 3)]
    cli("baseline", "create", "nightly", *map(str, runs), check=True)
    slow = store_run(cli.store, 5, inter_node=1.25)
    out = cli("check", "--baseline", "nightly", str(slow), "--prometheus",
              str(folder / "commscope.prom"))  # fmt: skip
    assert out.returncode == 2, out.stderr
    families = scrape(port)
    status = families["commscope_check_status"].samples
    assert [(s.labels, s.value) for s in status] == [({"baseline": "nightly"}, 2.0)]
    errors = families["node_textfile_scrape_error"].samples
    assert [s.value for s in errors] == [0.0]
    bw = families["commscope_p2p_bandwidth_bytes_per_second"].samples
    inter = [s for s in bw if s.labels["pair"] == "inter-node" and s.labels["op"] == "bw"]
    assert inter and all(s.labels["baseline"] == "nightly" for s in inter)
    assert {s.labels["bytes"] for s in inter} >= {"1048576"}
    figure = families["commscope_check_figure_status"].samples
    critical = [s.labels["figure"] for s in figure if s.value == 2.0]
    assert critical and all('pair="inter-node"' in key for key in critical)


def test_a_scrape_racing_rewrites_never_sees_half_a_file(cli, exporter):
    port, folder = exporter
    runs = [store_run(cli.store, seed) for seed in (1, 2, 3)]
    run = runs[0]
    cli("baseline", "create", "b", *map(str, runs), check=True)  # one run judges nothing
    with Store.open(cli.store, write=False) as store:
        verdict = check_run(Baseline.from_json(store.baseline("b")), read_run(store, run), {})
    target = str(folder / "commscope.prom")
    write_prometheus(verdict, target)
    expected = len(scrape(port))
    stop = threading.Event()
    writes = [0]

    def rewrite() -> None:
        while not stop.is_set():
            write_prometheus(verdict, target)
            writes[0] += 1

    writer = threading.Thread(target=rewrite)
    writer.start()
    # At least 100 scrapes while at least 100 rewrites happen: on a loaded machine the writer
    # thread may get fewer turns, so the scrapes go on until it has had them (at most 5 min).
    scrapes, deadline = 0, time.monotonic() + 300
    try:
        while (scrapes < 100 or writes[0] <= 100) and time.monotonic() < deadline:
            families = scrape(port)
            scrapes += 1
            assert len(families) == expected
            assert [s.value for s in families["node_textfile_scrape_error"].samples] == [0.0]
            assert families["commscope_check_status"].samples[0].value == 0.0
    finally:
        stop.set()
        writer.join()
    assert writes[0] > 100, (scrapes, writes)  # the scrapes did race the rewrites
