"""Placement predictions against the block All-to-all run on each placement (root).

Four nodes at 200 mbit, 4 ranks: 2x2 and 4x1. The t(m, cf) tables come from the same cluster.
"""

from __future__ import annotations

import json

import pytest

from tests.conftest import have_mpi, need

pytestmark = pytest.mark.cluster


@pytest.mark.parametrize("cluster", [(4, "200mbit")], indirect=True)
def test_predicted_order_of_placements_matches_the_measured_one(cli, cluster):
    need(have_mpi("openmpi"), "openmpi is not installed")
    sizes = "256KiB,1MiB"
    tables = json.loads(cli("run", "contention", "--vcluster", "--ranks-per-node", "2",
                            "--sizes", sizes, "--json", "--quiet", timeout=900,
                            check=True).stdout)["run"]
    # The two placements' times differ by 7-20 % here; as for the other timing-sensitive tests
    # on this shared VM, one of three independent validations must get the order right.
    taus = []
    for _attempt in range(3):
        out = json.loads(cli("validate", "predict", "--procs", "4", "--tables", str(tables),
                             "--sizes", sizes, "--vcluster", "--json", timeout=1800,
                             check=True).stdout)
        rows = out["placements"]
        assert {r["placement"] for r in rows} == {"2x2", "4x1"}
        for r in rows:
            print(f"\n{r['placement']} {r['bytes']} B: predicted {r['predicted_s'] * 1e3:.1f} ms,"
                  f" measured {r['measured_s'] * 1e3:.1f} ms ({r['relative_error']:+.0%})",
                  end="")
            # The prediction is floored at k m / B: no placement beats its NICs' nominal rate.
            assert r["measured_s"] >= 0.95 * r["predicted_s"], r
        assert not any(v["unmeasured"] for v in out["sizes"]), out["sizes"]
        taus.append([v["kendall_tau"] for v in out["sizes"]])
        if all(t == 1.0 for t in taus[-1]):
            break
    # The order holds (seed 001's aim); the errors are what this cluster's TCP loses under
    # converging flows (12-34 % here), printed above and left to the goal of <= 15 %.
    assert any(all(t == 1.0 for t in ts) for ts in taus), taus
