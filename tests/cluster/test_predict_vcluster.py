"""Placement predictions against the block All-to-all run on each placement (root).

Four nodes at 50 mbit, 4 ranks: 2x2 and 4x1. The t(m, cf) tables come from the same cluster.
At 200 mbit 4x1 moves more bytes between nodes than two shared cores can shape and copy: it
measured 44-48 % of its NICs' rate and fell behind 2x2, which the network alone would not do.
"""

from __future__ import annotations

import json

import pytest

from commscope.data.store import Store
from tests.conftest import have_mpi, need

NO_PUT = "btl_tcp_flags=send,inplace,need-ack,need-csum,hetero-rdma"

pytestmark = pytest.mark.cluster


@pytest.mark.parametrize("cluster", [(4, "50mbit")], indirect=True)
def test_predicted_order_of_placements_matches_the_measured_one(cli, cluster):
    need(have_mpi("openmpi"), "openmpi is not installed")
    sizes = "256KiB,1MiB"
    # Without the TCP BTL's PUT protocol a pair exchange moves both directions at once, as
    # the tables' t / 2 assumes; validate predict runs the placements with the same setting.
    tables = json.loads(
        cli(
            "run",
            "contention",
            "--vcluster",
            "--ranks-per-node",
            "2",
            "--sizes",
            sizes,
            "--mca",
            NO_PUT,
            "--json",
            "--quiet",
            timeout=900,
            check=True,
        ).stdout
    )["run"]
    # The two placements' times differ by 12-20 % here; as for the other timing-sensitive tests
    # on this shared VM, one of three independent validations must get the order right.
    good = None
    for _attempt in range(3):
        out = json.loads(
            cli(
                "validate",
                "predict",
                "--procs",
                "4",
                "--tables",
                str(tables),
                "--sizes",
                sizes,
                "--vcluster",
                "--json",
                timeout=1800,
                check=True,
            ).stdout
        )
        rows = out["placements"]
        assert {r["placement"] for r in rows} == {"2x2", "4x1"}
        for r in rows:
            print(
                f"\n{r['placement']} {r['bytes']} B: predicted {r['predicted_s'] * 1e3:.1f} ms,"
                f" measured {r['measured_s'] * 1e3:.1f} ms ({r['relative_error']:+.0%})",
                end="",
            )
        assert not any(v["unmeasured"] for v in out["sizes"]), out["sizes"]
        if all(v["kendall_tau"] == 1.0 for v in out["sizes"]):
            good = out
            break
    # The order holds (the aim of Peryshkova and Kurnosov 2018, contention-aware placement).
    assert good is not None, "no validation ordered 2x2 and 4x1 as measured"
    with Store.open(cli.store) as store:
        run = store.get_run(good["placements"][0]["run_id"])
    assert good["mca"] == run.request["mca"] == {"btl_tcp_flags": NO_PUT.split("=", 1)[1]}
    # Sanity, not the accuracy goal (bench/predict_vcluster.py measures that): a transfer
    # priced at half its exchange, as tables read the wrong way give, would be -50 %.
    assert all(v["median_relative_error"] <= 0.35 for v in good["sizes"]), good["sizes"]
