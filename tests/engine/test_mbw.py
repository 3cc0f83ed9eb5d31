"""mbw (osu_mbw_mr's method) under real Open MPI and MPICH, 4 ranks on this node."""

from __future__ import annotations

import json

import pytest

from commscope.analysis import mbw
from commscope.data.run_data import read_run
from commscope.data.store import Store
from tests.conftest import have_mpi, need

pytestmark = pytest.mark.mpi
SIZES = (1, 64, 4096, 65536)


@pytest.mark.parametrize("family", ["openmpi", "mpich"])
def test_every_size_has_one_and_two_pairs_and_rates_agree(cli, family):
    need(have_mpi(family), f"{family} is not installed")
    sizes = ",".join(map(str, SIZES))
    out = cli(
        "run", "mbw", "--mpi", family, "--np", "4", "--sizes", sizes, "--window", "16",
        "--point-budget", "0.1", "--json", check=True,
    )  # fmt: skip
    result = json.loads(out.stdout)
    assert result["status"] == "complete"
    with Store.open(cli.store) as store:
        run = read_run(store, result["run"])
    assert run.points == []  # nothing pair-by-pair
    assert run.info.header["options"]["mbw_pairs"] == "auto"
    # auto on 4 ranks of one node: k = 1 and 2 (first half sends to the second half).
    assert sorted(p.key for p in run.family("mbw")) == sorted(
        (f"mbw_k{k}", "intra-node", s) for k in (1, 2) for s in SIZES
    )
    for p in run.family("mbw"):
        k = int(p.op.removeprefix("mbw_k"))
        assert p.raw["pairs"] == [[i, 2 + i] for i in range(k)] and p.ranks == (0, 2)
        assert p.window == 16 and p.bytes_per_sample == k * 16 * p.bytes
        assert p.stop in ("rse", "budget", "max_samples") and p.n_samples >= 2
        assert min(p.samples_s) > 0

    (summary,) = mbw.summarize(run.family("mbw"))
    assert [s.pairs for s in summary.steps] == [1, 2]
    for step in summary.steps:
        assert [r.bytes for r in step.rows] == list(SIZES)
        for r in step.rows:
            # osu_mbw_mr's relation holds exactly: messages/s = bandwidth / size.
            assert r.message_rate_per_s == pytest.approx(r.aggregate_Bps / r.bytes, rel=1e-12)
            assert r.aggregate_Bps > 0
        # A window of 64 KiB messages moves more bytes per second than one of 1-byte ones.
        assert step.rows[-1].aggregate_Bps > step.rows[0].aggregate_Bps
        print(f"{family} k={step.pairs}: peak {step.peak_Bps / 1e6:.0f} MB/s,"
              f" {step.peak_rate_per_s:.3g} messages/s")  # fmt: skip

    shown = json.loads(cli("show", str(result["run"]), "--json", check=True).stdout)
    assert [s["pairs"] for s in shown["mbw"][0]["steps"]] == [1, 2]


def test_resume_skips_the_stored_points(cli):
    need(have_mpi("openmpi"), "openmpi is not installed")
    base = ("run", "mbw", "--mpi", "openmpi", "--np", "4", "--sizes", "8,1024",
            "--pairs-per-step", "2", "--point-budget", "0.05", "--json")  # fmt: skip
    first = json.loads(cli(*base, check=True).stdout)
    assert first["new_points"] == 2
    with Store.open(cli.store) as store:
        keys = store.measured_keys(first["run"])
        assert keys == {("mbw_k2", "intra-node", 8), ("mbw_k2", "intra-node", 1024)}
        # As if the run had stopped after its last point: resuming passes both keys as --skip.
        store.set_run_status(first["run"], "incomplete")
    again = json.loads(cli("run", "--resume", str(first["run"]), "--json", check=True).stdout)
    assert again["new_points"] == 0 and again["points"] == 2
