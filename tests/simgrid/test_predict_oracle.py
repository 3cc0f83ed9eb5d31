"""Counting oracle: predicted block All-to-all times against SimGrid SMPI's.

With NIC contention only and t(m, cf) = cf * m / B, the prediction must equal what SMPI
simulates on a platform of full-duplex (SPLITDUPLEX) NICs of bandwidth B and no latency, with
free communication inside a node, for MPI_Alltoall as one batch of Isend/Irecv
(smpi/alltoall:basic_linear, i.e. block = p). The tables hold what the contention benchmark
measures on such NICs: half of each pair exchange, cf * m / (2 B).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from commscope.analysis.contention import tables
from commscope.predict import build, rank_placements
from commscope.predict.cost import TableCost
from commscope.predict.model import ClusterModel, Link, Switch
from commscope.predict.placement import regular
from commscope.simulate import probe
from commscope.simulate.params import SimParams
from commscope.simulate.predict_cost import STAMPEDE_BW_FACTOR, STAMPEDE_LAT_FACTOR, smpi_cost
from tests.conftest import need
from tests.synthetic_contention import as_measured, records

pytestmark = pytest.mark.simgrid

B = 1e9  # bytes/s of each NIC side
M = 1 << 20  # bytes per pair
TABLE_SIZES = [M // 4, M, 4 * M]
TABLE_CFS = [1, 2, 4, 8]  # larger counts use the linear-in-cf rule beyond the table


# One multi-core host per node; its private link is the NIC (SPLITDUPLEX: up and down apart),
# the backbone and the loopback between ranks of one host are free.
PLATFORM = """<?xml version='1.0'?>
<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">
<platform version="4.1">
  <zone id="world" routing="Full">
    <cluster id="nodes" prefix="node" suffix="" radical="0-{last}" core="{cores}" speed="1Gf"
             bw="{bw:.0f}Bps" lat="0s" sharing_policy="SPLITDUPLEX"
             bb_bw="1e18Bps" bb_lat="0s" bb_sharing_policy="FATPIPE"
             loopback_bw="1e18Bps" loopback_lat="0s"/>
  </zone>
</platform>
"""

SMPI_CFG = [
    "smpi/bw-factor:0:1",
    "smpi/lat-factor:0:1",
    "network/crosstraffic:0",
    "smpi/alltoall:basic_linear",
    "smpi/simulate-computation:no",
    # Shared buffers are mapped block by block; big blocks keep 192 ranks under the
    # kernel's map count limit.
    "smpi/shared-malloc-blocksize:268435456",
]


@pytest.fixture(scope="module")
def program(tmp_path_factory: pytest.TempPathFactory) -> Path:
    need(
        shutil.which("smpicc") is not None and shutil.which("smpirun") is not None,
        "SimGrid's smpicc and smpirun (apt-get install libsimgrid-dev)",
    )
    return probe.build(tmp_path_factory.mktemp("smpi"))


def smpi_time(program: Path, nodes: int, cores: int) -> float:
    where = program.parent / f"run{nodes}x{cores}"
    where.mkdir()
    job = probe.job(
        program,
        "alltoall",
        M,
        nodes * cores,
        SMPI_CFG,
        where,
        PLATFORM.format(last=nodes - 1, cores=cores, bw=B),
        "".join(f"node{i}:{cores}\n" for i in range(nodes)),
    )
    out = subprocess.run(
        job.argv,
        capture_output=True,
        text=True,
        timeout=500,
        env=dict(os.environ, **job.env),
        cwd=where,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    return probe.simulated_s(out.stdout)


def predicted(nodes: int, cores: int) -> float:
    model = ClusterModel("oracle", tuple(f"node{i}" for i in range(nodes)), 1, cores)
    recs = (
        records("nic", as_measured(lambda m, cf: cf * m / B), TABLE_SIZES, TABLE_CFS)
        # Inside a node: nothing costs (1e-9 of the NIC's time, never the slowest).
        + records("memory", as_measured(lambda m, cf: cf * m / B * 1e-9), TABLE_SIZES, TABLE_CFS)
    )
    cost = TableCost.from_tables(tables(recs), "oracle")
    p = nodes * cores
    pattern = build("alltoall", p, M, "block", block=p)
    [pr] = rank_placements(model, pattern, cost, [regular(model, nodes, cores)])
    return pr.time_s


@pytest.mark.parametrize(("nodes", "cores"), [(2, 4), (4, 2), (8, 1), (16, 12)])
def test_block_alltoall_matches_smpi(program: Path, nodes: int, cores: int) -> None:
    want = smpi_time(program, nodes, cores)
    got = predicted(nodes, cores)
    print(
        f"{nodes}x{cores}: predicted {got:.9f} s, SMPI {want:.9f} s,"
        f" {100 * (got - want) / want:+.4f} %"
    )
    assert got == pytest.approx(want, rel=0.01)


def leaf_model() -> ClusterModel:
    # 8 nodes of 4 cores under 2 leaves; each uplink carries 2 NICs' rate (2:1 oversubscribed).
    return ClusterModel(
        "leaves",
        tuple(f"node{i}" for i in range(8)),
        1,
        4,
        nic=Link(B),
        switches=(
            Switch("leaf0", (0, 1, 2, 3), Link(2 * B)),
            Switch("leaf1", (4, 5, 6, 7), Link(2 * B)),
        ),
    )


LEAF_PARAMS = SimParams(
    nic_bw_Bps=B,
    nic_lat_s=2e-6,
    memory_bw_Bps=8 * B,
    memory_lat_s=0.3e-6,
    lat_factor=STAMPEDE_LAT_FACTOR,
    bw_factor=STAMPEDE_BW_FACTOR,
    calibrated_from="SimGrid's defaults",
)


@pytest.mark.parametrize(
    ("op", "algorithm", "smpi_algorithm"),
    [
        ("alltoall", "block", "basic_linear"),
        ("bcast", "binomial-halving", "binomial_tree"),
        ("allreduce", "recursive-doubling", "rdb"),
    ],
)
def test_collectives_on_leaf_switches_match_smpi(
    program: Path, op: str, algorithm: str, smpi_algorithm: str
) -> None:
    # The platform commscope writes, SMPI's factors on both sides: the predictor priced with
    # the platform's own figures must give SMPI's times and order for the same algorithm.
    model = leaf_model()
    placements = [regular(model, 4, 4), regular(model, 8, 2), regular(model, 8, 2, "cyclic")]
    pattern = build(op, 16, M, algorithm, block=16)
    got = {
        pr.placement.label: pr.time_s
        for pr in rank_placements(model, pattern, smpi_cost(LEAF_PARAMS), placements)
    }
    want = {}
    for pl in placements:
        where = program.parent / f"{op}-{pl.label.replace(' ', '-')}"
        where.mkdir()
        job = probe.model_job(
            program, model, LEAF_PARAMS, pl, op, M, where, [f"smpi/{op}:{smpi_algorithm}"]
        )
        out = subprocess.run(
            job.argv,
            capture_output=True,
            text=True,
            timeout=300,
            env=dict(os.environ, **job.env),
            cwd=where,
        )
        assert out.returncode == 0, out.stderr[-2000:]
        want[pl.label] = probe.simulated_s(out.stdout)
        print(f"{op} {pl.label}: predicted {got[pl.label]:.6g} s, SMPI {want[pl.label]:.6g} s")
    for label, t in want.items():
        assert got[label] == pytest.approx(t, rel=0.02)
    # Placements the prediction tells apart (by more than the tolerance) keep its order.
    for a in got:
        for b in got:
            if got[a] < got[b] * 0.98:
                assert want[a] < want[b], (a, b)
    assert max(got.values()) > min(got.values()) * 1.02  # the placements differ at all
