"""HPL across two Open MPI ranks through Debian's hpcc, imported into a node run."""

from __future__ import annotations

import json
import shutil

import pytest

from tests.conftest import need

pytestmark = pytest.mark.mpi


def test_hpcc_run_end_to_end(cli):
    need(
        shutil.which("hpcc") is not None and shutil.which("mpirun.openmpi") is not None,
        "hpcc or Open MPI is not installed",
    )
    out = cli("run", "node", "--grid", "1x2", "--matrix-order", "500,1000", "--json", check=True)
    node = json.loads(out.stdout)["node"]
    assert [p["n"] for p in node["points"]] == [500, 1000]
    assert node["figures"][0]["cores"] == 2 and 0 < node["figures"][0]["efficiency"] < 1
