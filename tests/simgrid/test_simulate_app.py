"""`commscope simulate app` and `simulate hpl` under real SimGrid: programs built with
smpicc, run on a 2-node x 2-core model, stored as runs."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from commscope.data.store import Store
from tests.conftest import CLI, need
from tests.simgrid.conftest import model

pytestmark = pytest.mark.simgrid

# HPC Challenge's source (BSD-style licence), kept beside the repository for tests.
HPL_SOURCE = Path(
    os.environ.get("COMMSCOPE_HPL_SOURCE")
    or next(
        (
            str(p)
            for p in (
                Path(__file__).resolve().parents[3] / "shared/hpl/hpcc_1.5.0.orig.tar.gz",
                Path("/work/shared/hpl/hpcc_1.5.0.orig.tar.gz"),
            )
            if p.is_file()
        ),
        "/work/shared/hpl/hpcc_1.5.0.orig.tar.gz",
    )
)
ROUNDS = 4
# Each round every rank sends one message to the next rank: on 2 nodes x 2 cores (block
# order) ranks 1 -> 2 and 3 -> 0 cross the switch, so 2 messages per round do.
RING = r"""
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
int main(int argc, char **argv) {
  int rank, size;
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int bytes = atoi(argv[1]);
  char *out = calloc(bytes, 1), *in = calloc(bytes, 1);
  for (int round = 0; round < ROUNDS; round++)
    MPI_Sendrecv(out, bytes, MPI_CHAR, (rank + 1) % size, 0, in, bytes, MPI_CHAR,
                 (rank + size - 1) % size, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  if (rank == 0) printf("ring of %d ranks moved %d bytes per rank\n", size, ROUNDS * bytes);
  MPI_Finalize();
  return 0;
}
""".replace("ROUNDS", str(ROUNDS))
TWO_BY_TWO = (
    "nodes: 2\nsockets: 1\ncores: 2\nchannels: {nic: {bandwidth: 125MB/s, latency: 40us}}\n"
)


def _runs(cli: CLI) -> list[int]:
    if not cli.store.exists():  # a refusal before anything was stored: no store was made
        return []
    return [r["id"] for r in json.loads(cli("runs", "--json", check=True).stdout)]


def test_app_runs_a_ring_slower_on_half_the_bandwidth(cli: CLI, tmp_path: Path) -> None:
    source = tmp_path / "ring.c"
    source.write_text(RING)
    path = model(tmp_path, TWO_BY_TWO)
    size = 1 << 20
    out = cli(
        "simulate",
        "app",
        str(source),
        "--cluster",
        str(path),
        "--sweep",
        "nic-bandwidth=125MB/s,62.5MB/s",
        "--netload",
        "--json",
        "--",
        str(size),
        check=True,
    )
    rows = json.loads(out.stdout)["runs"]
    assert [r["sweep"] for r in rows] == ["nic_bandwidth=125MB/s", "nic_bandwidth=62.5MB/s"]
    with Store.open(cli.store) as store:
        stored = [store.run_data(r["run"], "app") for r in rows]
        kinds = [store.get_run(r["run"]).kind for r in rows]
    assert kinds == ["app", "app"]
    full, half = stored
    for data in stored:
        assert data["simulated_s"] > 0 and data["wall_s"] > 0
        assert f"ring of 4 ranks moved {ROUNDS * size} bytes" in data["output"]
        switch = data["netload"]["switch"]
        assert switch["messages"] == 2 * ROUNDS
        assert switch["mean_message_bytes"] == size
    # 1 MiB takes 8.4 ms at 125 MB/s against 80 us of route latency: transfers dominate,
    # so halving the NIC rate must nearly double the time (and surely add half of it).
    assert half["simulated_s"] > 1.5 * full["simulated_s"]
    # Each round's two inter-node messages use different NICs, so they overlap.
    assert full["simulated_s"] > ROUNDS * size / 125e6


def test_app_refuses_bad_input_in_one_line_and_stores_nothing(cli: CLI, tmp_path: Path) -> None:
    path = model(tmp_path, TWO_BY_TWO)
    broken = tmp_path / "broken.c"
    broken.write_text("int main(void) { return undefined_name; }\n")
    failing = tmp_path / "failing.c"
    failing.write_text(
        "#include <mpi.h>\n#include <stdio.h>\nint main(int c, char **v) { MPI_Init(&c, &v);"
        ' puts("about to fail"); MPI_Finalize(); return 3; }\n'
    )
    cases = [
        (["app", str(tmp_path / "missing.c"), "--cluster", str(path)], 2, "missing.c"),
        (["app", str(broken), "--cluster", str(path)], 2, "broken.c"),
        (["app", str(broken), "--cluster", str(path), "--np", "5"], 2, "--np 5"),
        (["app", str(failing), "--cluster", str(path)], 1, "status"),
    ]
    for argv, code, named in cases:
        out = cli("simulate", *argv)
        assert out.returncode == code, out.stderr
        lines = out.stderr.strip().splitlines()
        assert len(lines) == 1 and named in lines[0], out.stderr
    build_log = re.search(r"full log in (\S+)$", cli("simulate", *cases[1][0]).stderr.strip())
    assert build_log and "undefined_name" in Path(build_log.group(1)).read_text()
    assert _runs(cli) == []


def test_hpl_solves_on_a_2x2_grid(cli: CLI, tmp_path: Path) -> None:
    need(HPL_SOURCE.is_file(), f"HPC Challenge's source at {HPL_SOURCE} (apt-get source hpcc)")
    path = model(tmp_path, TWO_BY_TWO)
    out = cli(
        "simulate",
        "hpl",
        "--matrix-order",
        "400",
        "--nb",
        "64",
        "--grid",
        "2x2",
        "--cluster",
        str(path),
        "--source",
        str(HPL_SOURCE),
        "--json",
        check=True,
    )
    (row,) = json.loads(out.stdout)["runs"]
    assert (row["n"], row["nb"], row["p"], row["q"]) == (400, 64, 2, 2)
    assert row["passed"] and row["residual"] < 16.0
    assert row["gflops"] > 0 and row["simulated_s"] >= row["hpl_time_s"] > 0
    with Store.open(cli.store) as store:
        assert store.get_run(row["run"]).kind == "hpl"
        assert store.run_data(row["run"], "hpl")["passed"] is True


def test_hpl_refuses_bad_input_in_one_line(cli: CLI, tmp_path: Path) -> None:
    path = model(tmp_path, TWO_BY_TWO)
    base = ["simulate", "hpl", "--matrix-order", "400", "--cluster", str(path)]
    cases = [
        ([*base, "--source", str(tmp_path / "nowhere.tar.gz")], "nowhere.tar.gz"),
        ([*base, "--source", str(HPL_SOURCE), "--grid", "2x2", "--np", "3"], "--grid 2x2"),
        ([*base, "--source", str(HPL_SOURCE), "--grid", "2x4"], "--grid 2x4"),
        ([*base, "--source", str(HPL_SOURCE), "--grid", "2by2"], "--grid 2by2"),
    ]
    for argv, named in cases:
        out = cli(*argv)
        assert out.returncode == 2, out.stderr
        lines = out.stderr.strip().splitlines()
        assert len(lines) == 1 and named in lines[0], out.stderr
    assert _runs(cli) == []
