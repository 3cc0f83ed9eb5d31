"""Hosts of a run: hostfile and --hosts parsing, checks, placement and launcher arguments."""

from __future__ import annotations

import pytest

from commscope.errors import UsageError
from commscope.measure import hosts, launch
from commscope.measure.mpi import MPIInstall

OPENMPI = MPIInstall("openmpi", "openmpi", "4.1.4", "/usr/bin/mpicc", "/usr/bin/mpirun")
MPICH = MPIInstall("mpich", "mpich", "4.0.2", "/usr/bin/mpicc", "/usr/bin/mpiexec.mpich")


def test_both_hostfile_forms_comments_and_bare_names(tmp_path):
    path = tmp_path / "hosts"
    path.write_text("# cluster\nn1 slots=4\nn2:2   # second rack\n\nn3\nn4 max_slots=8\n")
    assert hosts.read_hostfile(path) == [
        hosts.Host("n1", 4),
        hosts.Host("n2", 2),
        hosts.Host("n3", None),
        hosts.Host("n4", 8),
    ]
    assert hosts.parse_hosts("a:2,b, c:1") == [
        hosts.Host("a", 2),
        hosts.Host("b"),
        hosts.Host("c", 1),
    ]


@pytest.mark.parametrize(
    "text, fragment",
    [
        ("n1\nn1 slots=2\n", "listed twice"),
        ("N1\nn1\n", "listed twice"),
        ("n1 slots=0\n", "slots '0'"),
        ("n1:-1\n", "slots '-1'"),
        ("n1 slots=²\n", "slots '²'"),
        ("n1 slots=99999999999999999999\n", "slots '99999999999999999999'"),
        ("a;rm -rf ~\n", "not a host name"),
        ("$(reboot)\n", "not a host name"),
        ("-oProxyCommand=x\n", "not a host name"),
        ("n1 slots=2 extra\n", "expected 'NAME'"),
        ("# nothing\n\n", "no hosts"),
    ],
)
def test_bad_hostfiles_name_the_line_and_the_fix(tmp_path, text, fragment):
    path = tmp_path / "hosts"
    path.write_text(text)
    with pytest.raises(UsageError, match="--hostfile") as err:
        hosts.read_hostfile(path)
    assert fragment in str(err.value) and "\n" not in str(err.value)


def test_a_line_is_named_by_its_number(tmp_path):
    path = tmp_path / "hosts"
    path.write_text("n1\n\nn2 slots=x\n")
    with pytest.raises(UsageError, match="line 3"):
        hosts.read_hostfile(path)


def test_unreadable_hostfile_and_unknown_host(tmp_path):
    with pytest.raises(UsageError, match="cannot read"):
        hosts.read_hostfile(tmp_path / "missing")
    with pytest.raises(UsageError, match="unknown host 'no-such-host.invalid'"):
        hosts.check_resolvable(
            [hosts.Host("localhost"), hosts.Host("no-such-host.invalid")], "--hosts x"
        )


def test_placement_takes_ranks_per_node_then_slots_then_cores():
    named = [hosts.Host("a", 2), hosts.Host("b")]
    cores = {"a": 8, "b": 4}
    assert hosts.place(named, cores, None, None, "w").hosts == (("a", 2), ("b", 4))
    assert hosts.place(named, cores, 1, None, "w").hosts == (("a", 1), ("b", 1))
    first = hosts.place(named, cores, None, 3, "w")
    assert first.hosts == (("a", 2), ("b", 1)) and first.cores == (8, 4)
    with pytest.raises(UsageError, match="2 slots"):
        hosts.place(named, cores, 3, None, "w")
    with pytest.raises(UsageError, match="room for 6 ranks"):
        hosts.place(named, cores, None, 7, "w")


def test_launcher_arguments_bind_unless_a_host_is_oversubscribed():
    fits = launch.Placement((("a", 2), ("b", 2)), (2, 4))
    job = launch.build_job(OPENMPI, 99, ["engine"], placement=fits)
    assert job.argv == [
        "/usr/bin/mpirun",
        "-np",
        "4",
        "-H",
        "a:2,b:2",
        "--bind-to",
        "core",
        "--map-by",
        "core",
        "engine",
    ]
    job = launch.build_job(MPICH, 99, ["engine"], placement=fits)
    assert job.argv == [
        "/usr/bin/mpiexec.mpich",
        "-n",
        "4",
        "-hosts",
        "a:2,b:2",
        "-bind-to",
        "core",
        "engine",
    ]
    over = launch.Placement((("a", 3),), (2,))
    assert "--oversubscribe" in launch.build_job(OPENMPI, 3, ["e"], placement=over).argv
    assert "-bind-to" not in launch.build_job(MPICH, 3, ["e"], placement=over).argv
    assert launch.Placement.from_json(fits.to_json()) == fits


def test_srun_gets_the_mpi_plugin_and_nodes():
    fits = launch.Placement((("a", 1), ("b", 1)), (2, 2))
    job = launch.build_job(
        OPENMPI, 2, ["engine"], launcher="srun", srun_mpi="pmix_v4", placement=fits
    )
    assert job.argv == [
        "srun",
        "-n",
        "2",
        "--mpi=pmix_v4",
        "--nodes=2",
        "--nodelist",
        "a,b",
        "--ntasks-per-node=1",
        "--cpu-bind=cores",
        "engine",
    ]


def test_the_probe_runs_one_unbound_process_per_host_from_an_argument_list():
    named = [hosts.Host("a", 4), hosts.Host("b")]
    job = hosts.probe_job(OPENMPI, named)
    assert job.argv[:6] == ["/usr/bin/mpirun", "-np", "2", "-H", "a:1,b:1", "--bind-to"]
    assert job.argv[-3:] == ["sh", "-c", hosts.PROBE_SCRIPT]
    assert hosts.probe_job(MPICH, named).argv[:5] == [
        "/usr/bin/mpiexec.mpich",
        "-n",
        "2",
        "-hosts",
        "a:1,b:1",
    ]


@pytest.mark.parametrize(
    "text, fragment",
    [
        ("csnode-none.invalid\n", "unknown host 'csnode-none.invalid'"),
        ("localhost\nlocalhost:2\n", "listed twice"),
        ("localhost;reboot\n", "not a host name"),
        ("localhost slots=0\n", "slots '0'"),
    ],
)
def test_run_refuses_a_bad_hostfile_in_one_line_with_exit_2(cli, tmp_path, text, fragment):
    hostfile = tmp_path / "hosts"
    hostfile.write_text(text)
    out = cli("run", "p2p", "--hostfile", str(hostfile), "--sizes", "8")
    assert out.returncode == 2, out.stderr
    assert fragment in out.stderr and len(out.stderr.strip().splitlines()) == 1, out.stderr
    assert not cli.store.exists()  # nothing was stored, not even an empty run


def test_slurm_option_where_slurm_is_not_installed(cli, tmp_path):
    empty = tmp_path / "bin"
    empty.mkdir()
    cli.env["PATH"] = str(empty)  # no salloc, srun, ... (nor an MPI: it is not reached)
    out = cli("run", "p2p", "--slurm", "-N", "2", "--sizes", "8")
    assert out.returncode == 2
    assert out.stderr.count("\n") == 1 and "Slurm is not installed" in out.stderr
    assert "slurm-client" in out.stderr and not cli.store.exists()


def test_choices_that_contradict_are_refused(cli, tmp_path):
    out = cli("run", "p2p", "--hosts", "localhost", "--slurm")
    assert out.returncode == 2 and "choose one place to run" in out.stderr
    out = cli("run", "p2p", "--nodes", "2")
    assert out.returncode == 2 and "only with --slurm" in out.stderr
    out = cli("run", "tcp", "--hosts", "localhost")
    assert out.returncode == 2 and "only MPI runs" in out.stderr
