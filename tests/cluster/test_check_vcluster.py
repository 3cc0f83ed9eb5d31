"""`check` on a 2-node virtual cluster: a regression put in on purpose is caught (root).

A baseline of three p2p runs at 1 gbit; then one node's link at 100 mbit (a NIC that
negotiated down to Fast Ethernet): `check` measures the baseline's request again, exits 2 and
names the inter-node bandwidth of that node's link. Three runs on two shared cores spread
their 1 MiB bandwidth by 9-20 % (bench/results/check.md and a failed CI run), so a
three-run baseline's band for it is 50-80 % (`commscope baseline show`): a link at half its
rate can stay inside it, one at a tenth leaves it. The rate restored: nothing is called a
regression. A busy loop on a core during a check: the verdict names the load and calls
nothing a regression.

The baseline holds the inter-node pair alone, the one the slowed link carries. Its
intra-node pairs, two ranks beside two more on two shared cores, shift from run to run by
more than three runs show: a CI run saw a 64 KiB intra-socket latency 73 % over a baseline
whose band was narrower, with the link untouched (`bench/check_alarms.py` counts such false
alarms over many checks).

Every figure of the link moves by more than the default 10 % from run to run on two shared
cores: a CI run saw the restored link's figures all 15-19 % worse than three runs minutes
before (8-byte bibw 17.7 %, 1 MiB bandwidth 18.5 % against a band of 17.6 %). So the checks
here give latency and bandwidth a tolerance of 50 %, which a tenth of the rate (90 % worse)
still passes far beyond; `bench/check_alarms.py` counts false alarms and catches at the
default tolerance.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.conftest import have_mpi, need

pytestmark = pytest.mark.cluster
SIZES = "8,64KiB,1MiB"
# Windows of 8 messages and 2 warm-up rounds: the check measures the baseline's request again
# over a 100 mbit link, where the default 64-message windows of 1 MiB and 10 warm-up rounds
# take about a minute per operation.
HOW = ("--window", "8", "--warmup", "2", "--pairs", "inter-node")
TOLERANCE = "latency=50%,bw=50%"


def critical(verdict: dict) -> list[dict]:
    return [f for f in verdict["figures"] if f["status"] == "CRITICAL"]


@pytest.mark.parametrize("cluster", [(2, "1gbit")], indirect=True)
def test_check_catches_a_slowed_link_and_calls_load_no_regression(cli, cluster):
    need(have_mpi("openmpi"), "openmpi is not installed")
    runs = []
    for _ in range(3):
        out = cli("run", "p2p", "--vcluster", "--sizes", SIZES, *HOW, "--json", timeout=600)
        assert out.returncode == 0, out.stderr
        runs.append(str(json.loads(out.stdout)["run"]))
    cli("baseline", "create", "nightly", *runs, check=True)

    cli("vcluster", "set", "csnode2", "--rate", "100mbit", check=True)
    out = cli("check", "--baseline", "nightly", "--tolerance", TOLERANCE, "--json", timeout=900)
    verdict = json.loads(out.stdout)
    print(out.stdout[:4000])
    assert out.returncode == 2, out.stderr
    named = [
        f
        for f in critical(verdict)
        if f["name"] == "p2p_bandwidth_bytes_per_second" and f["labels"]["bytes"] == "1048576"
    ]
    assert all(f["labels"]["link"] == "csnode1->csnode2" for f in named)
    one_way = [f for f in named if f["labels"]["op"] == "bw"]
    assert one_way and all(f["worse_by"] > 0.7 for f in one_way)  # a tenth the rate: ~90 % worse

    cli("vcluster", "set", "csnode2", "--rate", "1gbit", check=True)
    out = cli("check", "--baseline", "nightly", "--tolerance", TOLERANCE, "--json", timeout=900)
    verdict = json.loads(out.stdout)
    print(out.stdout[:4000])
    assert not critical(verdict)
    # OK, or WARNING only where the load monitor saw other processes and said so.
    assert out.returncode == 0 or (out.returncode == 1 and verdict["load"]), out.stdout

    busy = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        out = cli("check", "--baseline", "nightly", "--tolerance", TOLERANCE, "--json",
                  timeout=900)  # fmt: skip
    finally:
        busy.kill()
        busy.wait()
    verdict = json.loads(out.stdout)
    print(out.stdout[:4000])
    assert out.returncode in (0, 1) and not critical(verdict)
    assert any("other processes took" in text for text in verdict["load"])
