"""Open MPI one-sided runs across hosts take osc/ucx unless the user named a component."""

from __future__ import annotations

import pytest

from commscope.data.request import RunRequest
from commscope.jobs.where import host_count, one_sided_component
from commscope.measure.mpi import MPIInstall

OPENMPI = MPIInstall("openmpi", "openmpi", "4.1.4", "mpicc", "mpirun")
MPICH = MPIInstall("mpich", "mpich", "4.0.2", "mpicc", "mpiexec")
TWO_NODES = {"nodes": 2, "ranks_per_node": 1, "rate": "100mbit", "subnet": "10.0.0.0/24"}


def test_across_nodes_under_open_mpi_ucx_is_added_and_recorded():
    request = RunRequest("rma", 2, vcluster=TWO_NODES, mca={"btl": "tcp,self"})
    assert one_sided_component(request, OPENMPI).mca == {"btl": "tcp,self", "osc": "ucx"}


@pytest.mark.parametrize(
    ("request_", "mpi"),
    [
        (RunRequest("rma", 2), OPENMPI),  # one host: Open MPI's own components work
        (RunRequest("rma", 2, vcluster=TWO_NODES), MPICH),  # MCA is Open MPI's
        (RunRequest("p2p", 2, vcluster=TWO_NODES), OPENMPI),  # two-sided
        (RunRequest("rma", 2, vcluster=TWO_NODES, mca={"osc": "rdma"}), OPENMPI),  # user's
    ],
)
def test_otherwise_the_request_is_left_as_it_is(request_, mpi):
    assert one_sided_component(request_, mpi) == request_


def test_hosts_are_counted_from_wherever_the_run_is_placed():
    assert host_count(RunRequest("rma", 2)) == 1
    assert host_count(RunRequest("rma", 4, vcluster={**TWO_NODES, "nodes": 4})) == 4
    placed = {"hosts": [["a", 1], ["b", 1], ["c", 2]], "cores": []}
    assert host_count(RunRequest("rma", 4, placement=placed)) == 3
    slurm = {"job": "7", "nodes": ["n1", "n2"], "ntasks": 2, "own": True, "plugin": "pmix"}
    assert host_count(RunRequest("rma", 2, slurm=slurm)) == 2
