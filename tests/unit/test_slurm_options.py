"""Where `run --slurm` asks Slurm to run, as salloc's argument list; node states read as Slurm
prints them.

tests/cluster/test_check_where_slurm.py runs the same against the virtual cluster's real Slurm.
"""

from __future__ import annotations

import pytest

from commscope.cli import render
from commscope.errors import UsageError
from commscope.measure import slurm, slurm_nodes
from commscope.measure.slurm_nodes import NodeState, Reservation

# `scontrol -o show reservation` of Slurm 22.05 in the virtual cluster, one line each.
RESERVATIONS = (
    "ReservationName=maint1 StartTime=2026-12-06T03:46:19 EndTime=2026-12-06T04:46:19"
    " Duration=01:00:00 Nodes=csnode[2-3] NodeCnt=2 CoreCnt=2 Features=(null)"
    " PartitionName=(null) Flags=MAINT,SPEC_NODES TRES=cpu=2 Users=root Groups=(null)"
    " Accounts=(null) Licenses=(null) State=ACTIVE BurstBuffer=(null) Watts=n/a"
    " MaxStartDelay=(null)\n"
    "ReservationName=later StartTime=2026-12-06T03:57:40 EndTime=2026-12-06T04:57:40"
    " Duration=01:00:00 Nodes=csnode1 NodeCnt=1 CoreCnt=2 Features=(null)"
    " PartitionName=(null) Flags=SPEC_NODES TRES=cpu=2 Users=root Groups=(null)"
    " Accounts=(null) Licenses=(null) State=INACTIVE BurstBuffer=(null) Watts=n/a"
    " MaxStartDelay=(null)\n"
)


def test_every_option_is_one_element_of_sallocs_argument_list():
    asked = slurm.AllocationRequest(
        nodes=2,
        ntasks_per_node=4,
        partition="debug,long",
        reservation="maint_0412",
        account="proj-42",
        qos="high",
        constraint="ib&[rack1|rack2]",
        nodelist="node[01-02]",
        time="2-12:00:00",
        exclusive=True,
        wait_s=30,
    )
    assert asked.argv() == [
        "salloc", "--no-shell", "--job-name=commscope", "--nodes=2", "--ntasks-per-node=4",
        "--immediate=30", "--partition=debug,long", "--reservation=maint_0412",
        "--account=proj-42", "--qos=high", "--constraint=ib&[rack1|rack2]",
        "--nodelist=node[01-02]", "--time=2-12:00:00", "--exclusive",
    ]  # fmt: skip
    bare = slurm.AllocationRequest(nodes=3, ntasks_per_node=1).argv()
    assert bare == [
        "salloc", "--no-shell", "--job-name=commscope", "--nodes=3", "--ntasks-per-node=1",
        f"--immediate={slurm.ALLOC_TIMEOUT_S}",
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("partition", "debug; rm -rf ~"),
        ("partition", "-p"),
        ("reservation", "a b"),
        ("account", "proj\x00"),
        ("qos", ""),
        ("nodelist", "/etc/hosts"),
        ("nodelist", "node[1-2] node3"),
        ("constraint", "$(reboot)"),
        ("time", "5x"),
        ("time", "1:2:3:4"),
        ("time", "-5"),
    ],
)
def test_a_value_salloc_would_read_another_way_is_refused_naming_the_flag(key, value):
    with pytest.raises(UsageError, match=f"^{slurm.NAMED[key]} .*: not one; give ") as err:
        slurm.check_option(key, value)
    assert "\x00" not in str(err.value) and "\n" not in str(err.value)
    with pytest.raises(UsageError):
        slurm.AllocationRequest(nodes=1, ntasks_per_node=1, **{key: value})


@pytest.mark.parametrize("value", ["30", "45:00", "2:00:00", "1-0", "1-12:30", "UNLIMITED"])
def test_slurm_times_are_taken(value):
    assert slurm.check_option("time", value) == value


def test_a_stored_run_is_asked_for_again_on_its_nodes_as_it_was_asked():
    stored = {
        "job": "41", "nodes": ["csnode1", "csnode2", "csnode3"], "ntasks": 6, "own": True,
        "plugin": "pmix_v4", "partition": "batch", "reservation": None, "account": "ops",
        "qos": "normal", "constraint": "ib", "nodelist": "csnode[1-3]", "time": "30",
        "exclusive": True, "wait_s": 120,
    }  # fmt: skip
    again = slurm.AllocationRequest.again(stored, ["csnode1", "csnode3"], 2)
    assert again.argv() == [
        "salloc", "--no-shell", "--job-name=commscope", "--nodes=2", "--ntasks-per-node=2",
        "--immediate=120", "--partition=batch", "--account=ops", "--qos=normal",
        "--constraint=ib", "--nodelist=csnode1,csnode3", "--time=30", "--exclusive",
    ]  # fmt: skip
    # A run stored before these options: Slurm's defaults and the default wait.
    old = slurm.AllocationRequest.again({"job": "3", "nodes": ["a"], "ntasks": 1}, ["a"], 1)
    assert old.argv()[-2:] == [f"--immediate={slurm.ALLOC_TIMEOUT_S}", "--nodelist=a"]


def test_inside_an_allocation_where_it_was_granted_comes_from_slurms_environment(monkeypatch):
    monkeypatch.setenv("SLURM_JOB_PARTITION", "batch")
    monkeypatch.setenv("SLURM_JOB_ACCOUNT", "(null)")
    monkeypatch.setenv("SLURM_JOB_QOS", "bad qos\n")
    monkeypatch.delenv("SLURM_JOB_RESERVATION", raising=False)
    assert slurm.current_options() == {"partition": "batch"}


def test_reservations_are_read_from_scontrols_lines():
    found = slurm_nodes.parse_reservations(RESERVATIONS)
    assert found == [
        Reservation("maint1", "csnode[2-3]", ("MAINT", "SPEC_NODES"), True),
        Reservation("later", "csnode1", ("SPEC_NODES",), False),
    ]
    assert found[0].maintenance and not found[1].maintenance
    assert slurm_nodes.parse_reservations("No reservations in the system\n") == []


MAINT = Reservation("maint1", "csnode2", ("MAINT",), True)
PLAIN = Reservation("ops", "csnode2", (), True)


@pytest.mark.parametrize(
    ("state", "holding", "own", "why"),
    [
        (NodeState("n1", "idle", ""), [], None, None),
        (NodeState("n1", "mixed", ""), [], None, None),
        (NodeState("n1", "drained", "cable swap"), [], None, "drained (cable swap)"),
        (NodeState("n1", "draining", "bad dimm"), [], None, "draining (bad dimm)"),
        (NodeState("n1", "down*", "Not responding"), [], None, "down* (Not responding)"),
        (NodeState("n1", "drained", "x"), [MAINT], "maint1", "drained (x)"),  # closed anyway
        (NodeState("n1", "maint", ""), [MAINT], None, "in maintenance reservation maint1"),
        (NodeState("n1", "idle", ""), [MAINT], None, "in maintenance reservation maint1"),
        (NodeState("n1", "idle", ""), [PLAIN], None, "in reservation ops"),
        (NodeState("n1", "maint", ""), [MAINT], "maint1", None),  # the run asks for it
        (NodeState("n1", "idle", ""), [PLAIN], "ops", None),
        (NodeState("n1", "maint", ""), [PLAIN, MAINT], "ops", "in maintenance reservation maint1"),
        (NodeState("n1", "maint", ""), [], None, "maint"),
        (NodeState("n1", "reserved", ""), [], None, "reserved"),
    ],
)
def test_a_node_is_closed_to_a_run_when_drained_down_or_reserved_for_others(
    state, holding, own, why
):
    assert slurm_nodes.closed(state, holding, own) == why


def test_show_names_where_a_slurm_run_ran():
    part = {
        "job": "41", "nodes": ["csnode2", "csnode3"], "plugin": "pmix_v4", "partition": None,
        "reservation": "ops", "account": "proj", "qos": None, "constraint": "ib",
    }  # fmt: skip
    assert render.where_text({"slurm": part}) == (
        ", in Slurm job 41 on csnode2,csnode3 (reservation ops, account proj, constraint ib,"
        " srun --mpi=pmix_v4)"
    )


@pytest.mark.parametrize(
    ("argv", "ranks"),
    [(["--slurm", "--nodes", "4"], 4), (["--slurm"], 2),
     (["--slurm", "--nodes", "3", "--ranks-per-node", "2"], 6)],
)  # fmt: skip
def test_a_matrix_under_slurm_counts_nodes_times_ranks_per_node(argv, ranks):
    # The help's `run matrix --slurm --nodes 16 --drain` once stopped at "--np 1: matrix
    # pairs ranks": a paired kind took one rank per node as the whole run's.
    from commscope.cli import build_parser, run_request

    args = build_parser().parse_args(["run", "matrix", *argv])
    assert run_request.build_request(args).np == ranks
