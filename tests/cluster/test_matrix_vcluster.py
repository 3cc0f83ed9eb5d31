"""The all-pairs matrix on a 4-node virtual cluster with one node's link slowed (root).

Every link is shaped at 200 mbit except one node's, both ways, at 50 mbit: the matrix is
bandwidth-bound by tbf, not by this machine's two cores, so the slow node stands out
however the ranks are scheduled. The bandwidth findings of the report and of `show --json`
must name it and no other.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from commscope.data.store import Store
from commscope.measure import runner, vcluster
from tests.conftest import have_mpi, need

pytestmark = pytest.mark.cluster
SLOW = "csnode3"


@pytest.mark.parametrize("cluster", [(4, "200mbit")], indirect=True)
# One MPI here (MPICH took 113 s on this machine); the naming of slow nodes and links under
# noise is the bench's: `flock /tmp/commscope-bench.lock .venv/bin/python
# bench/matrix_confirm.py --runs 20`.
@pytest.mark.parametrize("family", ["openmpi"])
def test_the_bandwidth_matrix_names_the_slow_node_and_no_other(cli, cluster, family, tmp_path):
    need(have_mpi(family), f"{family} is not installed")
    vcluster.set_rate(SLOW, "50mbit")
    out = cli("run", "matrix", "--vcluster", "--mpi", family, "--json", timeout=900)
    assert out.returncode == 0, out.stderr
    run_id = json.loads(out.stdout)["run"]
    with Store.open(cli.store) as store:
        run = store.get_run(run_id)
    nodes = [r["node"] for r in run.header["ranks"]]
    assert nodes == [f"csnode{i}" for i in range(1, 5)]  # one rank per node

    shown = json.loads(cli("show", str(run_id), "--json", check=True).stdout)
    lat, bw = shown["matrix"]
    print(json.dumps(bw["values"]), json.dumps(bw["outliers"]), json.dumps(lat["outliers"]))
    assert bw["named_nodes"] == [SLOW]
    assert {(o["where"], o["name"]) for o in bw["outliers"]} == {
        ("sender", SLOW),
        ("receiver", SLOW),
    }
    # Latency is not bandwidth-bound: 8-byte round trips here follow the two cores' scheduling
    # more than tbf (and the k = n/2 step's pairs run several times slower, slow node or not),
    # so which links it names is printed, not asserted.
    # The slow node's links run near 50 mbit, the others well above it: the shaping is what
    # the matrix measured (structure, not absolute speed: the others share two cores).
    slow = nodes.index(SLOW)
    values = bw["values"]
    slowest_fast = min(
        values[i][j] for i in range(4) for j in range(4) if i != j and slow not in (i, j)
    )
    fastest_slow = max(
        values[i][j] for i in range(4) for j in range(4) if i != j and slow in (i, j)
    )
    assert fastest_slow <= 50e6 / 8 < slowest_fast

    report = tmp_path / "matrix.html"
    cli("report", str(run_id), "-o", str(report), check=True)
    page = report.read_text()
    findings = re.findall(r"<li>bandwidth matrix at \d+ bytes: ([^<]*)</li>", page)
    named = {re.match(r"(\S+?)(?: as |: |->)", text).group(1) for text in findings}
    assert named == {SLOW} and not any("->" in text.split(":")[0] for text in findings)
    assert f"{SLOW} as sender" in page and f"{SLOW} as receiver" in page
    assert "<h3>All-pairs matrix</h3>" in page and page.count("<svg") >= 2


@pytest.mark.parametrize("cluster", [(2, "200mbit")], indirect=True)
def test_a_matrix_of_sockets_puts_one_rank_on_each_socket_of_each_node(cli, cluster):
    need(have_mpi("openmpi"), "openmpi is not installed")
    sockets = runner.sockets_here()  # every virtual node has this machine's sockets
    out = cli(
        "run", "matrix", "--vcluster", "--matrix-per", "socket", "--sizes", "64K",
        "--samples", "3", "--json", timeout=900,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    run_id = json.loads(out.stdout)["run"]
    with Store.open(cli.store) as store:
        run = store.get_run(run_id)
    assert run.request["vcluster"]["ranks_per_node"] == sockets
    assert run.header["options"]["matrix_per"] == "socket"
    ranks = run.header["ranks"]
    assert len(ranks) == 2 * sockets
    for r in ranks:  # pinned to one cpu of its own socket
        (cpu,) = r["affinity"]
        package = Path(f"/sys/devices/system/cpu/cpu{cpu}/topology/physical_package_id")
        assert int(package.read_text()) == r["socket"], r
    assert sorted({(r["node"], r["socket"]) for r in ranks}) == sorted(
        (r["node"], r["socket"]) for r in ranks
    )  # no socket of a node holds two ranks
    names = json.loads(cli("show", str(run_id), "--json", check=True).stdout)["matrix"][0]
    assert names["nodes"] == [f"{r['node']}/s{r['socket']}" for r in ranks]

    # More ranks on a node than it has sockets: refused in one line that names the fix.
    out = cli(
        "run", "matrix", "--vcluster", "--matrix-per", "socket", "--ranks-per-node",
        str(sockets + 1), "--sizes", "64K", timeout=900,
    )  # fmt: skip
    assert out.returncode != 0
    assert f"give --ranks-per-node {sockets} or fewer" in out.stderr, out.stderr
