"""MPICH control variables from --cvar, and the eager limits read from each MPI's own tools.

The tool outputs in fixtures/ were captured on Debian's Open MPI 4.1.4 and MPICH 4.0.2
(ch4:ucx): ``ompi_info --parsable --level 9 --param btl all`` and ``--param pml all`` (only
the value, source, level and version lines kept), ``mpichversion``, and ``mpivars`` (the
eager, cell-size and bcast lines kept).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from commscope.data.request import RunRequest
from commscope.errors import UsageError
from commscope.measure import cvars, launch
from commscope.measure import protocol_limits as pl
from commscope.measure.mpi import MPIInstall

FIXTURES = Path(__file__).parent / "fixtures"
OMPI = MPIInstall("openmpi", "openmpi", "4.1.4", "/usr/bin/mpicc", "/usr/bin/mpirun")
MPICH = MPIInstall("mpich", "mpich", "4.0.2", "/usr/bin/mpicc", "/usr/bin/mpiexec")


def test_cvar_names_get_their_prefix_and_later_settings_win():
    got = cvars.parse(["CH4_OFI_EAGER_MAX_MSG_SIZE=1", "MPIR_CVAR_CH4_OFI_EAGER_MAX_MSG_SIZE=2"])
    assert got == {"MPIR_CVAR_CH4_OFI_EAGER_MAX_MSG_SIZE": "2"}
    assert cvars.parse(["MPIR_CVAR_X=a=b"]) == {"MPIR_CVAR_X": "a=b"}


@pytest.mark.parametrize(
    "item, says",
    [
        ("CH4_EAGER", "give NAME=VALUE"),
        ("ch4_eager=1", "give NAME=VALUE"),
        ("MPIR_CVAR_=1", "give NAME=VALUE"),
        ("=1", "give NAME=VALUE"),
        ("MPIR_CVAR_A-B=1", "give NAME=VALUE"),
        ("X=", "has no value"),
        ("X=a\x1b[2Jb", "control character \\x1b"),
        ("X=a\nb", "control character \\x0a"),
        ("X=" + "9" * 1025, "1025 characters"),
    ],
)
def test_bad_cvars_are_refused_in_one_line_naming_the_input(item, says):
    with pytest.raises(UsageError) as err:
        cvars.parse([item])
    text = err.value.one_line()
    assert text.startswith("--cvar ") and says in text and "\n" not in text, text
    assert "\x1b" not in text


def test_inherited_cvars_are_the_well_formed_mpir_cvar_variables():
    env = {
        "MPIR_CVAR_A": "1",
        "MPIR_CVAR_B": "",
        "MPIR_CVAR_C": "x\x07",
        "MPICH_D": "1",
        "mpir_cvar_e": "1",
        "PATH": "/bin",
    }
    assert cvars.from_environment(env) == {"MPIR_CVAR_A": "1"}


def test_each_mpi_refuses_the_other_ones_settings_pointing_to_its_own():
    with pytest.raises(UsageError, match="give Open MPI parameters with --mca"):
        cvars.check(OMPI, {"MPIR_CVAR_A": "1"})
    with pytest.raises(UsageError, match="give MPICH settings with --cvar"):
        launch.check_mca(MPICH, {"btl": "self"})
    with pytest.raises(UsageError, match="--mca"):
        launch.build_job(OMPI, 2, ["engine"], cvars={"MPIR_CVAR_A": "1"})


def test_cvars_reach_the_ranks_environment_and_are_stored_with_the_request():
    job = launch.build_job(MPICH, 2, ["engine"], cvars={"MPIR_CVAR_A": "1"})
    assert job.env["MPIR_CVAR_A"] == "1" and "MPIR_CVAR_A" not in " ".join(job.argv)
    request = RunRequest("p2p", 2, cvar={"MPIR_CVAR_A": "1"})
    stored = request.to_json()
    assert stored["cvar"] == {"MPIR_CVAR_A": "1"}
    assert RunRequest.from_json(stored) == request
    assert "cvar" not in RunRequest("p2p", 2).to_json()


def test_ompi_info_gives_the_btl_limits_ob1_uses():
    params = pl.parse_ompi_info((FIXTURES / "ompi_info_btl_pml.txt").read_text())
    assert params["pml"][0] == "^ucx"  # Debian excludes the UCX PML: ob1 carries messages
    assert params["btl_vader_eager_limit"] == ("4096", "default")
    limits = pl.openmpi_limits(params, {})
    assert [(x.scope, x.path, x.setting, x.bytes, x.set_by) for x in limits.limits] == [
        ("intra-node", "vader", "btl_vader_eager_limit", 4096, "default"),
        ("inter-node", "tcp", "btl_tcp_eager_limit", 65536, "default"),
    ]
    assert limits.settings["btl_vader_max_send_size"] == "32768"
    assert limits.settings["btl_tcp_rndv_eager_limit"] == "65536"
    assert not any("openib" in k for k in limits.settings)  # excluded by the btl list
    assert not limits.unknown


def test_ompi_info_override_and_btl_and_pml_choices():
    params = pl.parse_ompi_info((FIXTURES / "ompi_info_btl_pml.txt").read_text())
    given = {**params, "btl_vader_eager_limit": ("8192", "environment")}
    (vader, _) = pl.openmpi_limits(given, {"btl_vader_eager_limit": "8192"}).limits
    assert (vader.bytes, vader.set_by) == (8192, "--mca")
    only_tcp = pl.openmpi_limits({**params, "btl": ("self,tcp", "--mca")}, {})
    assert [x.path for x in only_tcp.limits] == ["tcp"] and only_tcp.unknown
    ucx = pl.openmpi_limits({**params, "pml": ("ucx", "--mca")}, {})
    assert not ucx.limits and "UCX" in ucx.unknown[0]


def test_mpich_ch4_ucx_leaves_the_limits_to_ucx():
    device, shm = pl.mpich_device((FIXTURES / "mpichversion.txt").read_text())
    assert (device, shm) == ("ch4:ucx", False)  # MPICH's configure: no shm modules with UCX
    values = pl.parse_mpivars((FIXTURES / "mpivars.txt").read_text())
    assert values["MPIR_CVAR_CH4_SHM_POSIX_IQUEUE_CELL_SIZE"] == "69632"
    assert values["MPIR_CVAR_CH4_OFI_EAGER_MAX_MSG_SIZE"] == "-1"
    limits = pl.mpich_limits(device, shm, values, {})
    assert not limits.limits and "UCX_RNDV_THRESH" in limits.unknown[0]


def test_mpich_builds_with_shared_memory_or_ofi_read_their_cvars():
    values = pl.parse_mpivars((FIXTURES / "mpivars.txt").read_text())
    given = {"MPIR_CVAR_CH4_SHM_POSIX_IQUEUE_CELL_SIZE": "16384"}
    values = {**values, **given, "MPIR_CVAR_CH4_OFI_EAGER_MAX_MSG_SIZE": "-1"}
    limits = pl.mpich_limits("ch4:ofi", True, values, given)
    (shm,) = limits.limits
    assert (shm.scope, shm.bytes, shm.set_by) == ("intra-node", 16384, "--cvar")
    assert "MPIR_CVAR_CH4_OFI_EAGER_MAX_MSG_SIZE=-1" in limits.unknown[0]  # the provider decides
    ch3 = pl.mpich_limits("ch3:nemesis", False, values, {})
    assert [(x.setting, x.bytes) for x in ch3.limits] == [
        ("MPIR_CVAR_CH3_EAGER_MAX_MSG_SIZE", 131072)
    ]


def test_missing_or_failing_tools_leave_the_limits_unknown(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))  # no ompi_info, mpichversion or mpivars
    for family, tool in (("openmpi", "ompi_info"), ("mpich", "mpichversion")):
        mpi = MPIInstall("x", family, "1", str(tmp_path / "mpicc"), str(tmp_path / "mpiexec"))
        found = pl.read(mpi, {}, {})
        assert not found.limits and found.unknown == (f"eager limits unknown: {tool} did not run",)
    failing = tmp_path / "ompi_info"
    failing.write_text("#!/bin/sh\nexit 3\n")
    failing.chmod(0o755)
    mpi = MPIInstall("x", "openmpi", "1", str(tmp_path / "mpicc"), str(tmp_path / "mpirun"))
    assert pl.read(mpi, {}, {}).unknown == ("eager limits unknown: ompi_info did not run",)


def test_cli_refuses_cvars_for_open_mpi_before_storing_a_run(cli):
    out = cli("run", "p2p", "--mpi", "openmpi", "--cvar", "CH4_OFI_EAGER_MAX_MSG_SIZE=1")
    assert out.returncode == 2, out.stderr
    (line,) = [ln for ln in out.stderr.splitlines() if ln.strip()]
    assert "--cvar MPIR_CVAR_CH4_OFI_EAGER_MAX_MSG_SIZE" in line and "--mca" in line, line
    assert not cli.store.exists()  # nothing stored
