"""The placement hand-off Slurm really follows, and validate predict on an allocation."""

from __future__ import annotations

import json
import shlex
import subprocess
import time

import pytest

from commscope.data.store import Store
from tests.conftest import have_mpi, need

pytestmark = pytest.mark.cluster
FOUR = (4, "200mbit", ("slurm",))


def wait_gone(job: str, timeout_s: float = 300) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        out = subprocess.run(["squeue", "-h", "-j", job], capture_output=True, text=True)
        if job not in out.stdout:
            return
        time.sleep(1)
    raise AssertionError(f"job {job} still queued or running after {timeout_s} s")


def run_id(out: subprocess.CompletedProcess[str]) -> int:
    assert out.returncode == 0, out.stdout + out.stderr
    return int(json.loads(out.stdout)["run"])


@pytest.mark.parametrize("cluster", [FOUR], indirect=True)
def test_submitted_jobs_land_where_the_prediction_placed_them(cli, cluster, tmp_path):
    need(have_mpi("openmpi"), "openmpi is not installed")
    p2p = run_id(
        cli(
            "run",
            "p2p",
            "--slurm",
            "-N",
            "2",
            "--ranks-per-node",
            "2",
            "--sizes",
            "8,65536,1MiB",
            "--ops",
            "pingpong",
            "--json",
            timeout=600,
        )
    )
    for label, nodes, per_node in (("2x2", 2, 2), ("4x1", 4, 1)):
        script = tmp_path / f"job-{label}.sh"
        script.write_text(
            "#!/bin/sh\nexec "
            + shlex.join(
                cli.argv(
                    "--store",
                    str(cli.store),
                    "run",
                    "coll",
                    "--ops",
                    "alltoall",
                    "--sizes",
                    "8",
                    "--json",
                    "--quiet",
                    "--label",
                    f"submitted {label}",
                )
            )
            + "\n"
        )
        out = cli(
            "predict",
            "alltoall",
            "--np",
            "4",
            "--cluster",
            "slurm",
            "--p2p",
            str(p2p),
            "--nic-rate",
            "200mbit",
            "--choose",
            label,
            "--submit",
            str(script),
            "--json",
            cwd=str(tmp_path),
        )
        assert out.returncode == 0, out.stderr
        made = json.loads(out.stdout)
        options = made["handoff"]["slurm"]
        assert options[:4] == ["-N", str(nodes), "--ntasks-per-node", str(per_node)]
        assert "--switches=1" in options  # the vcluster's one switch, from Slurm's topology
        wait_gone(made["submitted"])
        with Store.open(cli.store) as store:
            (run,) = [r for r in store.list_runs() if r.label == f"submitted {label}"]
            info = store.get_run(run.id)
        assert info.status == "complete", tmp_path / f"slurm-{made['submitted']}.out"
        expected = [host for host in made["handoff"]["nodes"] for _ in range(per_node)]
        assert [r["node"] for r in info.header["ranks"]] == expected
        assert info.request["slurm"]["job"] == made["submitted"]


@pytest.mark.parametrize("cluster", [FOUR], indirect=True)
def test_validate_predict_runs_on_an_allocation_single_node_placements_included(cli, cluster):
    need(have_mpi("openmpi"), "openmpi is not installed")
    salloc = ["salloc", "-N", "2", "--ntasks-per-node", "2"]
    tables = subprocess.run(
        [
            *salloc,
            *cli.argv(
                "run",
                "contention",
                "--sizes",
                "256K",
                "--repeats",
                "3",
                "--iterations",
                "4",
                "--json",
            ),
        ],
        capture_output=True,
        text=True,
        env=cli.env,
        timeout=900,
    )
    tables_run = run_id(tables)
    out = subprocess.run(
        [
            *salloc,
            *cli.argv(
                "validate",
                "predict",
                "--np",
                "2",
                "--sizes",
                "256K",
                "--tables",
                str(tables_run),
                "--json",
            ),
        ],
        capture_output=True,
        text=True,
        env=cli.env,
        timeout=900,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    checks = {c["placement"]: c for c in json.loads(out.stdout)["placements"]}
    assert set(checks) == {"1x2", "2x1"}
    with Store.open(cli.store) as store:
        for label, distinct in (("1x2", 1), ("2x1", 2)):
            measured = checks[label]["measured_s"]
            assert measured == measured and measured > 0, checks[label]
            info = store.get_run(checks[label]["run_id"])
            assert info.request["launcher"] == "srun"
            assert len({r["node"] for r in info.header["ranks"]}) == distinct
