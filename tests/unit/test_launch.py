"""Launcher argument lists: Open MPI parameters (--mca) reach mpirun or srun, never MPICH."""

from __future__ import annotations

import pytest

from commscope.errors import UsageError
from commscope.measure import launch
from commscope.measure.mpi import MPIInstall

OPENMPI = MPIInstall("openmpi", "openmpi", "4.1.4", "/usr/bin/mpicc", "/usr/bin/mpirun")
MPICH = MPIInstall("mpich", "mpich", "4.0.2", "/usr/bin/mpicc.mpich", "/usr/bin/mpiexec.mpich")
FLAGS = "send,inplace,need-ack,need-csum,hetero-rdma"


def test_mca_options_are_parsed_and_the_last_one_of_a_name_wins():
    mca = launch.parse_mca(
        [
            f"btl_tcp_flags={FLAGS}",
            "btl=self,tcp",
            "btl=self,vader,tcp",
            "coll_tuned_use_dynamic_rules=1",
        ]
    )
    assert mca == {
        "btl_tcp_flags": FLAGS,
        "btl": "self,vader,tcp",
        "coll_tuned_use_dynamic_rules": "1",
    }


@pytest.mark.parametrize("item", ["btl", "btl=", "=tcp", "BTL=tcp", "btl tcp=1", "-btl=tcp"])
def test_malformed_mca_options_are_refused_with_an_example(item):
    with pytest.raises(UsageError, match=r"--mca .*NAME=VALUE, e\.g\. --mca btl_tcp_flags="):
        launch.parse_mca([item])


def test_mpirun_gets_each_parameter_as_one_mca_option_before_the_program():
    job = launch.build_job(
        OPENMPI,
        2,
        ["engine", "--ops", "bw"],
        cores=2,
        mca={"btl_tcp_flags": FLAGS, "btl": "self,tcp"},
    )
    argv = job.argv
    assert argv[:3] == ["/usr/bin/mpirun", "-np", "2"]
    assert argv[3:9] == ["--mca", "btl_tcp_flags", FLAGS, "--mca", "btl", "self,tcp"]
    assert argv[-3:] == ["engine", "--ops", "bw"]
    assert not any(k.startswith("OMPI_MCA_") for k in job.env)


def test_srun_passes_the_parameters_as_environment():
    job = launch.build_job(OPENMPI, 4, ["engine"], launcher="srun", mca={"btl": "self,tcp"})
    assert job.argv[0] == "srun" and "--mca" not in job.argv
    assert job.env["OMPI_MCA_btl"] == "self,tcp"


def test_mca_parameters_for_mpich_are_refused_not_dropped():
    with pytest.raises(UsageError, match="--mca btl: MCA parameters are Open MPI's.*MPIR_CVAR_"):
        launch.build_job(MPICH, 2, ["engine"], mca={"btl": "self,tcp"})
    assert launch.build_job(MPICH, 2, ["engine"], mca={}).argv[0] == "/usr/bin/mpiexec.mpich"
