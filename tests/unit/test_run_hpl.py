"""`run hpl`'s pure parts: where ranks go, its refusals, measured runs shown, and the
simulated-against-measured comparison of grids."""

from __future__ import annotations

import json

import pytest

from commscope.errors import UsageError
from commscope.kinds import program as program_kind
from commscope.measure import launch, program
from commscope.measure.mpi import MPIInstall
from commscope.simulate import hpl_agreement
from tests.conftest import CLI

OPENMPI = MPIInstall("openmpi", "openmpi", "4.1.4", "/usr/bin/mpicc", "/usr/bin/mpirun")


def test_agreement_gives_ratio_noise_and_the_order_of_grids() -> None:
    a = hpl_agreement.compare(
        {"1x2": [1.0, 1.1], "2x1": [2.0, 2.0], "2x2": [1.9, 2.0]},
        {"1x2": 1.5, "2x1": 1.8, "2x2": 2.2},
    )
    by = {g.grid: g for g in a.grids}
    assert by["1x2"].measured_gflops == pytest.approx(1.05)
    assert by["1x2"].spread == pytest.approx(0.1 / 1.05)
    assert by["2x1"].ratio == pytest.approx(0.9)
    assert a.noise == pytest.approx(0.1 / 1.05)
    assert a.measured_order() == ["2x1", "2x2", "1x2"]
    assert a.simulated_order() == ["2x2", "2x1", "1x2"]
    # 2x1 and 2x2 differ by less than the noise: their swapped order is no disagreement.
    assert {(x.grid, y.grid) for x, y in a.resolved_pairs()} == {("1x2", "2x1"), ("1x2", "2x2")}
    assert a.disagreeing_pairs() == []
    data = a.to_json()
    assert data["same_order"] is False and data["disagreeing_pairs"] == []
    json.dumps(data)  # plain JSON


def test_agreement_names_a_resolved_pair_the_simulation_orders_wrongly() -> None:
    a = hpl_agreement.compare({"1x4": [1.0], "4x1": [3.0]}, {"1x4": 2.0, "4x1": 1.0})
    assert a.noise == 0.0 and a.disagreeing_pairs() == [("1x4", "4x1")]
    with pytest.raises(ValueError, match="grids differ"):
        hpl_agreement.compare({"1x4": [1.0]}, {"4x1": 1.0})
    with pytest.raises(ValueError, match="at least one measured solve"):
        hpl_agreement.compare({"1x4": []}, {"1x4": 1.0})


def test_ranks_go_to_the_vcluster_nodes_they_need_or_to_named_hosts() -> None:
    on_vc = program.Where(vcluster_ranks_per_node=1)
    assert on_vc.nodes_for(4) == 4 and on_vc.nodes_for(2) == 2
    assert program.Where(vcluster_ranks_per_node=2).nodes_for(3) == 2
    assert on_vc.to_json(2) == {"vcluster_nodes": 2, "ranks_per_node": 1}
    placement = launch.Placement((("n1", 1), ("n2", 1)), (2, 2))
    hosts = program.Where(placement=placement)
    assert hosts.nodes_for(2) == 2 and program.Where().nodes_for(4) == 1
    assert hosts.to_json(2)["placement"]["hosts"] == [["n1", 1], ["n2", 1]]
    job = program.job(OPENMPI, 2, ["/x/program"], hosts)
    assert job.argv[:3] == ["/usr/bin/mpirun", "-np", "2"] and job.argv[-1] == "/x/program"
    assert "n1:1,n2:1" in job.argv
    with pytest.raises(UsageError, match=r"--hosts: the hosts hold 2 ranks but this grid needs 4"):
        program.job(OPENMPI, 4, ["/x/program"], hosts)
    local = program.job(OPENMPI, 4, ["/x/program"], program.Where(), cores=2)
    assert "--oversubscribe" in local.argv  # 4 ranks on 2 cores cannot be bound


def test_under_slurm_each_grid_is_an_srun_step_on_the_allocations_first_nodes() -> None:
    allocation = {"job": "7", "nodes": ["a", "b", "c"], "ntasks": 6, "own": True, "plugin": "pmi2"}
    where = program.Where(slurm=program.SlurmSteps(allocation, 2))
    assert where.nodes_for(3) == 2 and where.hosts(3) == ["a", "b"]
    assert where.to_json(4) == {"slurm": allocation, "slurm_nodes": 2, "ranks_per_node": 2}
    job = program.job(OPENMPI, 4, ["/x/program"], where)
    assert job.argv[:4] == ["srun", "-n", "4", "--mpi=pmi2"] and job.argv[-1] == "/x/program"
    assert "--nodes=2" in job.argv and "--ntasks-per-node=2" in job.argv
    assert job.env["SLURM_JOB_ID"] == "7"  # steps of the allocation commscope made
    inside = program.Where(slurm=program.SlurmSteps({**allocation, "own": False}, 2))
    assert "SLURM_JOB_ID" not in program.job(OPENMPI, 2, ["/x/program"], inside).env
    with pytest.raises(UsageError, match="allocation holds 6 tasks"):
        program.job(OPENMPI, 8, ["/x/program"], where)


def test_a_stopped_run_says_which_solves_are_stored_and_which_grids_to_run_again() -> None:
    from commscope.errors import Interrupted, LaunchError
    from commscope.measure import hpl

    rows = [{"run": 4, "grid": "1x2"}, {"run": 5, "grid": "1x2"}, {"run": 6, "grid": "2x1"}]
    err = Interrupted(15)
    hpl.add_what_was_lost(err, rows, [(1, 2), (2, 1), (4, 1)], 2)
    assert str(err) == (
        "interrupted by SIGTERM; 3 solves stored (runs 4, 5, 6); not measured: 2x1, 4x1"
        " (run again with --grid 2x1,4x1)"
    )
    failed = LaunchError("HPL on 1x2 exited with status 1; its output is in /x.log")
    hpl.add_what_was_lost(failed, [], [(1, 2)], 1)
    assert failed.one_line() == (
        "HPL on 1x2 exited with status 1; its output is in /x.log; no solve stored;"
        " not measured: 1x2 (run again with --grid 1x2)"
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--grid", "2x2"), "--source: missing; give the HPC Challenge"),
        (("--grid", "2by2", "--source", "x.tgz"), "--grid 2by2: give PxQ"),
        (
            ("--matrix-order", "100", "--nb", "128", "--source", "x.tgz"),
            "--nb 128: larger than --matrix-order 100",
        ),
        (("--grid", "2x2", "--np", "2", "--source", "x.tgz"), "--grid 2x2: P x Q = 4 ranks"),
        (("--resume", "latest", "--source", "x.tgz"), "--resume: run hpl does not take it"),
        (("--vcluster", "--hosts", "a,b", "--source", "x.tgz"), "choose one place to run"),
    ],
)
def test_bad_input_is_one_line_exit_2_and_nothing_stored(
    cli: CLI, args: tuple[str, ...], message: str
) -> None:
    out = cli("run", "hpl", *args)
    assert out.returncode == 2, out.stderr
    assert message in out.stderr and len(out.stderr.strip().splitlines()) == 1, out.stderr
    assert not cli.store.exists() or json.loads(cli("runs", "--json", check=True).stdout) == []


def test_a_measured_hpl_run_shows_its_mpi_and_hosts_not_simulated_figures() -> None:
    data = {
        "kind": "hpl",
        "grid": "2x2",
        "measured": True,
        "n": 2000,
        "nb": 64,
        "p": 2,
        "q": 2,
        "hpl_time_s": 4.1,
        "gflops": 1.3,
        "residual": 0.004,
        "passed": True,
        "wall_s": 5.0,
        "mpi": "openmpi-4.1.4",
        "hosts": ["csnode1", "csnode2", "csnode3", "csnode4"],
    }
    shown = dict(program_kind.rows(data))
    assert shown["GFLOPS"] == "1.3" and shown["MPI"] == "openmpi-4.1.4"
    assert shown["hosts"] == "csnode1, csnode2, csnode3, csnode4"
    assert "simulated time (s)" not in shown and "model core flop/s" not in shown
    assert program_kind.report(data)["how"] == "Measured"
    assert program_kind.terminal(data)[0].title == "measured hpl: 2x2"
    assert program_kind.report({**data, "measured": False})["how"] == "Simulated"


def test_a_failed_residual_check_is_told_and_fails_the_runs_but_stays_listed() -> None:
    from commscope.jobs import programs

    ok = programs.ProgramRun(3, "", {"grid": "1x2", "passed": True})
    bad = programs.ProgramRun(4, "switch_latency=1us", {"grid": "2x1", "passed": False})
    heard: list[str] = []
    for run in (ok, bad):
        programs.note_failed_check(run, heard.append)
    assert heard == ["run 4: HPL's residual check FAILED on 2x1"]
    assert programs.ProgramRuns((ok,)).passed and not programs.ProgramRuns((ok, bad)).passed
    assert programs.ProgramRuns((programs.ProgramRun(5, "", {"kind": "app"}),)).passed
    assert programs.ProgramRuns((ok, bad)).rows()[1] == {
        "run": 4,
        "sweep": "switch_latency=1us",
        "grid": "2x1",
        "passed": False,
    }
