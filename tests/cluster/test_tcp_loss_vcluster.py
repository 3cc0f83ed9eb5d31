"""A link that drops segments is named by the run that crossed it (root, virtual cluster).

Two nodes at 200 mbit; the receiving node's link from the bridge is cut to half that rate
with a queue of three frames instead of its usual 256 KiB: a bottleneck with too small a
buffer, where what the sender sends faster is dropped on the way (iperf3 here: about half
the segments resent). The sender's TCP resends them: its namespace, and only it, must be
named by `show` and the report. The receiver sends only acknowledgements and small control
messages, through a link left as it was.

The receiver also runs another TCP congestion control than the sender (reno, which every
kernel allows in every namespace), and does not restart idle connections
(net.ipv4.tcp_slow_start_after_idle=0): each namespace's own settings must be the ones recorded.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from commscope.data.store import Store
from commscope.measure import vcluster
from commscope.units import size_text
from tests.conftest import have_mpi, need

pytestmark = pytest.mark.cluster

BOTTLENECK = ["tbf", "rate", "100mbit", "burst", "4kb", "limit", "4500"]  # a 3-frame queue


@pytest.mark.parametrize("cluster", [(2, "200mbit")], indirect=True)
def test_the_node_whose_segments_were_dropped_is_named(cli, cluster, tmp_path):
    need(have_mpi("openmpi"), "openmpi is not installed")
    sender, receiver = cluster.nodes
    subprocess.run(
        ["tc", "qdisc", "replace", "dev", receiver.veth, "root", *BOTTLENECK], check=True
    )
    allowed = Path("/proc/sys/net/ipv4/tcp_allowed_congestion_control").read_text().split()
    sender_cc = vcluster.congestion_control(sender.name)
    receiver_cc = next((cc for cc in ["reno", *allowed] if cc != sender_cc), None)
    need(receiver_cc is not None, f"the host allows only {sender_cc}: no second algorithm")
    setting = f"net.ipv4.tcp_congestion_control={receiver_cc}"
    for each in (setting, "net.ipv4.tcp_slow_start_after_idle=0"):  # before any connection
        subprocess.run(
            ["ip", "netns", "exec", receiver.name, "sysctl", "-q", "-w", each], check=True
        )
    restart_sysctl = "net.ipv4.tcp_slow_start_after_idle"
    sender_restart = int(
        subprocess.run(
            ["ip", "netns", "exec", sender.name, "sysctl", "-n", restart_sysctl],
            check=True, capture_output=True, text=True,
        ).stdout
    )  # fmt: skip
    out = cli(
        "run", "p2p", "--vcluster", "--ranks-per-node", "1", "--mpi", "openmpi",
        "--ops", "bw", "--sizes", "1MiB", "--json", "--timeout", "600",
        # a few 8 MiB windows lose segments enough: the defaults moved 20 windows of 64 MiB
        "--window", "8", "--warmup", "1", "--min-samples", "4", "--max-samples", "8",
        timeout=900,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    run_id = json.loads(out.stdout)["run"]
    with Store.open(cli.store) as store:
        ranks = store.get_run(run_id).header["ranks"]
    assert [r["node"] for r in ranks] == [sender.name, receiver.name]  # rank 0 sends

    shown = json.loads(cli("show", str(run_id), "--json", check=True).stdout)
    print(json.dumps(shown["tcp_loss"]), shown["tcp_loss_warnings"])
    by_node = {tuple(ns["nodes"]): ns for ns in shown["tcp_loss"]}
    assert set(by_node) == {(sender.name,), (receiver.name,)}  # one entry per namespace
    sent, got = by_node[(sender.name,)], by_node[(receiver.name,)]
    assert sent["retrans_segs"] > 0 and sent["retrans_segs"] > got["retrans_segs"]
    named = [w for w in shown["tcp_loss_warnings"] if w.startswith(f"TCP on {sender.name} ")]
    assert named and f"and resent {sent['retrans_segs']}" in named[0]
    assert (sent["congestion_control"], got["congestion_control"]) == (sender_cc, receiver_cc)
    text = cli("show", str(run_id), check=True).stdout
    assert f"TCP congestion control: {sender_cc} on {sender.name}; {receiver_cc} on" in text
    # Each node's socket queue limit, as the vcluster set it, is part of the run's record.
    limits = {sent["tcp_limit_output_bytes"], got["tcp_limit_output_bytes"]}
    assert limits == {cluster.tcp_limit_output}
    queue = size_text(cluster.tcp_limit_output, exact=True)
    assert f"TCP socket queue limit (tcp_limit_output_bytes): {queue} on every node" in text
    # Each node's restart after idle, and where it applies: never under BBR, never when off.
    restarts = (sent["tcp_slow_start_after_idle"], got["tcp_slow_start_after_idle"])
    assert restarts == (sender_restart, 0)
    restart_text = f"{sender_restart} on {sender.name}; 0 on {receiver.name}"
    assert f"TCP slow start after idle (tcp_slow_start_after_idle): {restart_text}" in text
    restarting = [sender.name] if sender_restart and sender_cc != "bbr" else []
    assert shown["tcp_idle_restart_nodes"] == restarting
    # The receiver sent little and lost less: its link was left as it was.
    assert not any(w.startswith(f"TCP on {receiver.name} sent") for w in shown["tcp_loss_warnings"])

    report = tmp_path / "loss.html"
    cli("report", str(run_id), "-o", str(report), check=True)
    # The summary card, first on the page, names the sender's losses once, and only them.
    lost = re.findall(
        r"<li>(TCP on [^<]*): timings include waiting for lost segments</li>", report.read_text()
    )
    assert len(lost) == 1 and lost[0].startswith(f"TCP on {sender.name} sent"), lost
