"""`commscope run node` end to end through the CLI: a small sweep, stored, shown, reported."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from commscope.analysis.node import BUSY_WARNING
from commscope.measure.compute import cpu, pinning
from tests.conftest import CLI

SIZES = "100,200,400,700,1000"


@pytest.fixture(scope="module")
def node_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[CLI, dict[str, Any], Path]:
    """One small sweep on 1 and 2 cores (1 when the machine has one), N up to 1000."""
    tmp = tmp_path_factory.mktemp("node")
    home = Path(os.environ.get("COMMSCOPE_TEST_HOME", "/tmp/commscope-test-home"))
    cli = CLI(tmp / "store.sqlite", home)
    cores = [1, 2] if cpu.physical_cores(pinning.allowed_cpus()) >= 2 else [1]
    report = tmp / "node.html"
    out = cli(
        "run",
        "node",
        "--cores",
        ",".join(map(str, cores)),
        "--matrix-order",
        SIZES,
        "--time-budget",
        "0",
        "--json",
        "--report",
        str(report),
        check=True,
        timeout=300,
    )
    return cli, json.loads(out.stdout), report


def test_every_point_is_stored_checked_and_placed(node_run):
    cli, result, report = node_run
    assert result["status"] == "complete"
    figures = result["node"]["figures"]
    cores = [f["cores"] for f in figures]
    assert cores in ([1, 2], [1])
    assert result["points"] == result["new_points"] == 5 * len(cores)
    for f in figures:
        assert f["threads"] == f["cores"] and len(f["affinity"]) == f["cores"]
        assert f["largest_n"] == 1000
        assert f["p_max_gflops"] > 0 and f["efficiency"] > 0, f
        if f["busy_ghz"] is not None or "cpufreq" in f["nominal_source"]:
            # The clock the cores ran at while busy, or the highest a core may run at: a real
            # upper bound, whichever is higher.
            assert 0 < f["efficiency"] <= 1, f
            assert f["clock_ghz"] == max(f["busy_ghz"] or 0, f["nominal_ghz"]), f
        else:
            # No busy clock (commscope-clock could not run): /proc/cpuinfo's nominal clock can
            # be beaten by a boosting core, but not by more than boost clocks allow.
            assert f["efficiency"] < 1.5, f
        assert f["peak_derivation"].startswith(f"P_peak = {f['cores']} core")
    assert all(p["residual"] < 16 for p in result["node"]["points"])

    shown = json.loads(cli("show", str(result["run"]), "--json", check=True).stdout)
    assert shown["kind"] == "node" and shown["node"]["figures"] == figures
    page = report.read_text()
    assert "Node compute: Linpack" in page and "P_peak = 1 core x" in page
    text = cli("show", "latest", check=True).stdout
    assert "node compute" in text and "efficiency" in text and "P_peak =" in text


def test_half_performance_comes_before_the_maximum(node_run):
    _, result, _ = node_run
    for f in result["node"]["figures"]:
        share = f["others_cpu_share"]
        if share is not None and share > BUSY_WARNING:
            # Other processes on the same cores distort the curve's shape, not its checks:
            # what must hold then is that the figures say so.
            assert f["warning"] and f"{share:.0%}" in f["warning"], f
            assert f["n_half"] <= f["largest_n"], f
            continue
        assert f["n_half"] < f["n_max"], f


def test_run_node_rejects_bad_input_before_measuring(cli):
    for args in (
        ["--cores", "0"],
        ["--matrix-order", "10x"],
        ["--max-memory", "150%"],
        ["--time-budget", "-1"],
        ["--matrix-order", "100,99999999", "--max-memory", "1GiB"],
    ):
        out = cli("run", "node", *args)
        assert out.returncode == 2, (args, out.stderr)
        assert len(out.stderr.strip().splitlines()) == 1, out.stderr
