"""Allgather over process counts on the virtual cluster against the link-bound model (root).

Each rank must receive the p - 1 blocks of the others through its own shaped link, whatever
the algorithm, so T(p) >= ((p - 1) * m - bucket) / rate (the shaper lets its bucket through at
once): at p = 2 that is one block across one link, which the measurement must match, and above
it a bound no launch may beat. (Open MPI 4.1.4 here, fastest launches: 51.9 ms at p = 2 against
52.4 ms for one block, 113.6 ms at p = 3 and 248.7 ms at p = 4, 1.1 and 1.6 times the bound:
with four nodes its allgather stays well short of the link rate.)
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from commscope.analysis import coll_scaling
from commscope.data.store import Store
from commscope.measure import vcluster
from tests.conftest import have_mpi, need

pytestmark = pytest.mark.cluster
SIZE = 64 << 10
RATE_BPS = 10e6 / 8  # 10 mbit: 52 ms per block, so the link, not the two shared cores, limits


@pytest.mark.parametrize("cluster", [(4, "10mbit")], indirect=True)
def test_allgather_time_grows_with_p_at_least_as_the_link_bound_model_says(cli, cluster):
    need(have_mpi("openmpi"), "openmpi is not installed")
    out = cli(
        "run", "coll", "--vcluster", "--ranks-per-node", "1", "--mpi", "openmpi",
        "--procs", "2,3,4", "--ops", "allgather", "--sizes", str(SIZE),
        "--coll-budget", "6", "--json", timeout=900,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    with Store.open(cli.store) as store:
        colls = store.colls(json.loads(out.stdout)["run"])
    assert sorted(c.nranks for c in colls) == [2, 3, 4]
    times = {c.nranks: np.array(c.times_s) for c in colls}
    # p = 2 leaves two cores to two ranks: enough launches start on time to judge it by its
    # valid ones. With 3 and 4 ranks on the 2 shared cores most start late; a late launch's
    # time still holds the whole operation (scheduled start to last end), so the fastest
    # launch is an upper bound of the operation's time and must obey the link bound too.
    two = np.array(next(c for c in colls if c.nranks == 2).valid_times_s)
    assert len(two) >= 3
    median2 = float(np.median(two))
    noise = float(np.subtract(*np.percentile(two, [75, 25]))) / median2  # this run's spread
    burst = vcluster.model.burst_bytes(int(RATE_BPS * 8))  # the shaper lets this through at once
    bound = {p: ((p - 1) * SIZE - burst) / RATE_BPS for p in (2, 3, 4)}
    fastest = {p: float(t.min()) for p, t in times.items()}
    print(f"allgather {SIZE} B: p=2 median {median2 * 1e3:.1f} ms (noise {noise:.1%})")
    for p in (2, 3, 4):
        print(
            f"allgather {SIZE} B, p={p}: fastest {fastest[p] * 1e3:.1f} ms, link bound"
            f" {bound[p] * 1e3:.1f} ms, fastest / T(2) {fastest[p] / median2:.2f}"
            f" (model {coll_scaling.link_bound_ratio(2, p):.2f})"
        )
        assert fastest[p] >= bound[p] * (1 - 2 * noise)
    # Two ranks exchange one block each way over their links: the bound itself (plus the
    # per-message latency and the scheduler's clock reads, a few per cent).
    assert median2 == pytest.approx(SIZE / RATE_BPS, rel=0.05 + 2 * noise)
    assert fastest[2] < fastest[3] < fastest[4]


@pytest.mark.parametrize("cluster", [(2, "100mbit")], indirect=True)
def test_an_np_the_vcluster_cannot_take_is_refused_before_anything_runs(cli, cluster):
    """A vcluster run takes every node: an --np that disagrees would be dropped silently."""
    need(have_mpi("openmpi"), "openmpi is not installed")
    out = cli(
        "run", "coll", "--vcluster", "--np", "3", "--ranks-per-node", "1", "--mpi", "openmpi",
        "--ops", "barrier", timeout=120,
    )  # fmt: skip
    assert out.returncode == 2, out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1, lines
    assert "--np 3" in lines[0] and "2 nodes x 1 ranks per node = 2 ranks" in lines[0], lines
    if cli.store.exists():  # nothing was stored
        with Store.open(cli.store) as store:
            assert store.list_runs() == []
