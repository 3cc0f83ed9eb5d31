"""Draining without a cluster: which nodes a matrix names, and Slurm's commands against a stand-in.

The stand-in is a small program installed as ``scontrol``, ``sinfo`` (and ``sacctmgr``) on
PATH: it keeps the nodes' states and reasons in a JSON file, logs every argument list it is
given and answers as Slurm 22.05 does (``sinfo -h -N -o %N|%T|%E``, ``scontrol ping``,
``scontrol update NodeName=X State=DRAIN|RESUME [Reason=...]``). The real Slurm is
tests/cluster/test_drain_slurm.py's.
"""

from __future__ import annotations

import json
import os
import pwd
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from commscope import status
from commscope.analysis import confirm
from commscope.analysis import drain as drain_analysis
from commscope.analysis import matrix as mx
from commscope.data.store import Store
from commscope.errors import LaunchError
from commscope.jobs import drain
from commscope.measure import slurm_nodes
from commscope.measure.slurm import slurm_text
from tests.unit.test_matrix import point, store_run

NODES = ("csnode1", "csnode2", "csnode3", "csnode4")

FAKE = r"""
import json, os, sys
state_path = os.environ["FAKE_SLURM"]
with open(state_path) as f:
    state = json.load(f)
name, args = os.path.basename(sys.argv[0]), sys.argv[1:]
state["log"].append([name, *args])
def save():
    with open(state_path, "w") as f:
        json.dump(state, f)
save()
if name == "sacctmgr":
    print(state.get("adminlevel", "None"))
    sys.exit(0)
if name == "sinfo":
    for node, (st, why) in state["nodes"].items():
        for _ in range(state.get("partitions", 1)):
            print(f"{node}|{st}|{why or 'none'}")
    sys.exit(0)
if args == ["ping"]:
    up = state.get("up", True)
    print(f"Slurmctld(primary) at head is {'UP' if up else 'DOWN'}")
    sys.exit(0 if up else 1)
if args[:2] == ["show", "config"]:
    print(f"SlurmUser               = {state.get('slurm_user', 'slurm(64030)')}")
    sys.exit(0)
if args[:1] == ["update"]:
    if state.get("refuse"):
        print("slurm_update error: Invalid user id", file=sys.stderr)
        sys.exit(1)
    fields = dict(a.split("=", 1) for a in args[1:])
    node = fields["NodeName"]
    if node not in state["nodes"]:
        print(f"slurm_update error: Invalid node name specified", file=sys.stderr)
        sys.exit(1)
    if fields["State"] == "DRAIN":
        state["nodes"][node] = ["drained", fields["Reason"]]
    elif fields["State"] == "RESUME":
        state["nodes"][node] = ["idle", ""]
    save()
    sys.exit(0)
reservations = state.setdefault("reservations", {})
if args == ["-o", "show", "reservation"]:
    for name, nodes in reservations.items():
        print(f"ReservationName={name} StartTime=now Nodes={nodes} Flags=MAINT State=ACTIVE")
    if not reservations:
        print("No reservations in the system")
    sys.exit(0)
if args[:2] == ["show", "hostnames"]:
    print("\n".join(args[2].split(",")))
    sys.exit(0)
if args[:2] == ["create", "reservation"]:
    fields = dict(a.split("=", 1) for a in args[2:])
    if fields["ReservationName"] in reservations:
        print("Error creating the reservation: Duplicate reservation name", file=sys.stderr)
        sys.exit(1)
    reservations[fields["ReservationName"]] = fields["Nodes"]
    save()
    sys.exit(0)
if args[:1] == ["delete"]:
    name = args[1].split("=", 1)[1]
    if state.get("busy", 0) > 0:  # a job that just ended still holds it
        state["busy"] -= 1
        save()
        print("Error deleting the reservation: Requested operation is presently disabled",
              file=sys.stderr)
        sys.exit(1)
    reservations.pop(name)
    save()
    sys.exit(0)
print(f"fake slurm: unexpected {args}", file=sys.stderr)
sys.exit(1)
"""


class FakeSlurm:
    """The stand-in's state file and its log of argument lists."""

    def __init__(self, folder: Path, nodes: dict[str, tuple[str, str]], **extra: object) -> None:
        self.bin = folder / "bin"
        self.bin.mkdir(parents=True)
        self.path = folder / "slurm.json"
        self.path.write_text(json.dumps({"nodes": nodes, "log": [], **extra}))
        for tool in ("scontrol", "sinfo", "sacctmgr"):
            exe = self.bin / tool
            exe.write_text(f"#!{sys.executable}\n{FAKE}")
            exe.chmod(0o755)

    def state(self) -> dict[str, object]:
        return json.loads(self.path.read_text())

    def nodes(self) -> dict[str, list[str]]:
        return self.state()["nodes"]  # type: ignore[return-value]

    def changes(self) -> list[list[str]]:
        """Every command that changes Slurm: updates, reservations made and deleted."""
        verbs = (["update"], ["create"], ["delete"])
        return [c for c in self.state()["log"] if c[1:2] in verbs]  # type: ignore[union-attr]

    def updates(self) -> list[list[str]]:
        return [c for c in self.state()["log"] if c[1:2] == ["update"]]  # type: ignore[union-attr]

    def env(self) -> dict[str, str]:
        return {"PATH": f"{self.bin}:{os.environ['PATH']}", "FAKE_SLURM": str(self.path)}


@pytest.fixture
def slurm(tmp_path, monkeypatch):
    def make(nodes: dict[str, tuple[str, str]] | None = None, **extra: object) -> FakeSlurm:
        fake = FakeSlurm(tmp_path, nodes or {n: ("idle", "") for n in NODES}, **extra)
        for key, value in fake.env().items():
            monkeypatch.setenv(key, value)
        return fake

    return make


def bw(values: dict[tuple[int, int], float], n: int = 4, noise: float = 0.02) -> list:
    rng = np.random.default_rng(7)
    return [
        point("matrix_bw", a, b, values.get((a, b), 22e6) * (1 + noise * rng.standard_normal()))
        for a in range(n)
        for b in range(n)
        if a != b
    ]


def matrices(points, names=NODES) -> list[mx.Matrix]:
    return mx.matrices(points, names)


# ---------------------------------------------------------------- which nodes


def test_a_slow_node_is_a_suspect_with_one_reason_naming_figure_value_and_run():
    slow = {(a, b): 5e6 for a in range(4) for b in range(4) if 2 in (a, b)}
    decision = drain_analysis.decide(matrices(bw(slow)), run_id=42)
    (suspect,) = decision.suspects
    assert suspect.node == "csnode3" and decision.links == ()
    assert len(suspect.figures) == 2  # as sender and as receiver, drained once
    reason = suspect.reason
    assert reason.startswith("commscope: bandwidth as ") and reason.endswith(", run 42")
    assert "128 KiB" in reason and "MB/s against typical 2" in reason
    assert drain_analysis.ours(reason) and "\n" not in reason and "|" not in reason


def test_a_single_slow_link_drains_no_node_but_is_reported():
    decision = drain_analysis.decide(matrices(bw({(0, 3): 4e6})), run_id=7)
    assert decision.suspects == ()
    (line,) = decision.links
    assert "csnode1->csnode4" in line


def test_a_healthy_matrix_and_latency_outliers_name_nothing():
    lat = [point("matrix_lat", a, b, 900e-6 if 1 in (a, b) else 30e-6)
           for a in range(4) for b in range(4) if a != b]  # fmt: skip
    found = matrices(bw({}) + lat)
    assert any(m.outliers for m in found if m.op == "matrix_lat")
    assert drain_analysis.decide(found, run_id=1) == drain_analysis.Decision(1, (), ())


def test_sockets_and_ranks_of_one_node_drain_the_node():
    names = ("a/s0", "a/s1", "b/s0", "b/s1")
    slow = {(x, y): 4e6 for x in range(4) for y in range(4) if 3 in (x, y)}
    decision = drain_analysis.decide(matrices(bw(slow), names), run_id=3)
    assert [s.node for s in decision.suspects] == ["b"]
    assert drain_analysis.hosts(matrices(bw({}), names)) == ("a", "b")


def _verdict(where, name, verdict, again=5e6, nbytes=131072, op="matrix_bw"):
    return confirm.Confirmation(
        where=where, name=name, verdict=verdict, op=op, bytes=nbytes, typical=22e6,
        first=5.5e6, again=again, partners=("csnode1", "csnode2", "csnode4"), rounds=1,
        slow_pairs=6 if verdict == "bad" else 0, pairs=6, agreeing=1.0,
    )  # fmt: skip


def test_with_a_confirmation_only_nodes_it_judges_bad_are_drained():
    six = matrices(bw({(a, b): 5e6 for a in range(6) for b in range(6) if {a, b} & {1, 2}},
                      n=6), tuple(f"csnode{i}" for i in range(1, 7)))  # fmt: skip
    first = drain_analysis.decide(six, run_id=9)
    assert [s.node for s in first.suspects] == ["csnode2", "csnode3"]
    again = [_verdict("node", "csnode3", "bad", again=4.5e6),
             _verdict("node", "csnode2", "transient", again=21e6),
             _verdict("node", "csnode2", "bad", op="matrix_lat")]  # fmt: skip
    decision = drain_analysis.decide(six, run_id=9, confirmed=again)
    (suspect,) = decision.suspects
    assert suspect.node == "csnode3" and suspect.reason.endswith("6 of 6 pairs slow again, run 9")
    assert suspect.reason.startswith("commscope: bandwidth at 128 KiB: 4.5 MB/s against typical")
    assert any("TRANSIENT" in line and "csnode2" in line for line in decision.spared)
    # A suspect the confirmation did not measure is not drained either.
    unmeasured = drain_analysis.decide(six, run_id=9, confirmed=again[:1])
    assert [s.node for s in unmeasured.suspects] == ["csnode3"]
    assert any("csnode2: not measured again" in line for line in unmeasured.spared)


def test_a_link_the_confirmation_pins_on_a_node_drains_that_node():
    found = matrices(bw({(0, 3): 4e6}))
    link = [_verdict("node", "csnode4", "bad")]  # the link's end slow with healthy partners too
    decision = drain_analysis.decide(found, run_id=5, confirmed=link)
    assert [s.node for s in decision.suspects] == ["csnode4"] and decision.links
    transient = [_verdict("link", "csnode1->csnode4", "transient")]
    decision = drain_analysis.decide(found, run_id=5, confirmed=transient)
    assert decision.suspects == () and decision.links == ()
    assert "TRANSIENT" in decision.spared[0]


@pytest.mark.parametrize(
    ("reason", "mine"),
    [("commscope: bandwidth ...", True), ("commscope:x", True), ("maintenance", False),
     (" commscope: spaced", False), ("Commscope: case", False), ("", False)],
)  # fmt: skip
def test_only_reasons_with_the_prefix_are_ours(reason, mine):
    assert drain_analysis.ours(reason) is mine


# ---------------------------------------------------------------- Slurm's commands


def test_commands_are_argument_lists_and_refuse_what_is_not_a_node_name():
    reason = "commscope: bandwidth as sender at 128 KiB: 5.0 MB/s against typical 22.0 MB/s, run 4"
    assert slurm_nodes.drain_argv("csnode3", reason) == [
        "scontrol", "update", "NodeName=csnode3", "State=DRAIN", f"Reason={reason}",
    ]  # fmt: skip
    assert slurm_nodes.resume_argv("n1.example") == [
        "scontrol", "update", "NodeName=n1.example", "State=RESUME",
    ]  # fmt: skip
    for bad in ("csnode1 State=DOWN", "n1;reboot", "", "-x", "a" * 200):
        with pytest.raises(LaunchError, match="not a node name"):
            slurm_nodes.resume_argv(bad)
    with pytest.raises(LaunchError, match="one line"):
        slurm_nodes.drain_argv("csnode1", "commscope: a\nState=DOWN")


def test_outside_slurm_the_drain_names_the_fix(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))  # no scontrol, no sinfo
    with pytest.raises(LaunchError) as err:
        slurm_nodes.require("--drain")
    text = err.value.one_line()
    assert text.startswith("--drain: ") and "not a Slurm cluster" in text and "\n" not in text


def test_an_unreachable_slurmctld_is_named(slurm):
    slurm(up=False)
    with pytest.raises(LaunchError, match="scontrol ping") as err:
        slurm_nodes.require("--drain")
    assert "slurmctld" in err.value.one_line()


@pytest.mark.parametrize(
    ("extra", "allowed"),
    [({}, False), ({"adminlevel": "Operator"}, False), ({"adminlevel": "Administrator"}, True),
     ({"slurm_user": "tester(4242)"}, True), ({"adminlevel": "None"}, False)],
)  # fmt: skip
def test_who_may_change_node_states(slurm, monkeypatch, extra, allowed):
    slurm(**extra)
    monkeypatch.setattr(os, "geteuid", lambda: 4242)
    monkeypatch.setattr(pwd, "getpwuid", lambda uid: SimpleNamespace(pw_name="tester"))
    assert slurm_nodes.may_change_nodes() is allowed
    if not allowed:
        with pytest.raises(LaunchError, match="may not change node states") as err:
            slurm_nodes.require("--drain")
        assert "sudo" in err.value.one_line() and "adminlevel=administrator" in err.value.one_line()


def test_node_states_are_read_once_per_node_with_reasons(slurm):
    slurm({"csnode1": ("drained", "maintenance | cable"), "csnode2": ("idle", "")}, partitions=2)
    found = slurm_nodes.nodes()
    assert list(found) == ["csnode1", "csnode2"]
    assert found["csnode1"] == slurm_nodes.NodeState("csnode1", "drained", "maintenance | cable")
    assert found["csnode1"].drained and not found["csnode2"].drained
    assert found["csnode2"].reason == ""
    assert slurm_nodes.find("csnode2.cluster.example", found) == found["csnode2"]


def test_node_states_and_reasons_that_are_not_utf8_are_read_not_fatal():
    # An admin's reason typed in Latin-1 ("maintenance prevue" with an e-acute) and a
    # stray byte in a state: every node is still read, the bad bytes shown as U+FFFD.
    raw = (
        b"csnode1|drained|maintenance pr\xe9vue\n"
        b"csnode2|drained|commscope: slow \xff\n"
        b"csnode3|idl\x80e|none\n"
    )
    found = slurm_nodes.node_states(slurm_text(raw))
    assert list(found) == ["csnode1", "csnode2", "csnode3"]
    assert found["csnode1"].reason == "maintenance pr\ufffdvue"
    assert drain_analysis.ours(found["csnode2"].reason) and found["csnode2"].drained
    assert found["csnode3"].state == "idl\ufffde"


def test_slurm_commands_that_print_bytes_not_utf8_are_decoded_in_both_streams():
    # printf stands for sinfo here: the bytes reach _run as a real program's output.
    out = slurm_nodes._run(["printf", "csnode1|drained|pr\\351vue\\n"], "reading node states")
    assert slurm_nodes.node_states(out)["csnode1"].reason == "pr\ufffdvue"
    with pytest.raises(LaunchError, match="refus\ufffd") as err:
        slurm_nodes._run(["sh", "-c", "printf 'refus\\351\\n' >&2; exit 1"], "draining csnode1")
    assert "\n" not in err.value.one_line()


# ---------------------------------------------------------------- run matrix --drain


def _run(tmp_path, slow_nodes=(2,), slow_links=(), n=4):
    values = {(a, b): 5e6 for a in range(n) for b in range(n) if {a, b} & set(slow_nodes)}
    values.update({link: 4e6 for link in slow_links})
    path = tmp_path / "s.sqlite"
    run_id = store_run(path, bw(values, n), tuple(f"csnode{i}" for i in range(1, n + 1)))
    return path, run_id


def _after(path, run_id, apply):
    request = SimpleNamespace(benchmark="matrix", simulate=None)
    with Store.open(path) as store:
        return drain.after(store, run_id, request, apply)


def test_without_drain_the_commands_are_printed_and_nothing_runs(slurm, tmp_path):
    fake = slurm()
    path, run_id = _run(tmp_path)
    drained = _after(path, run_id, apply=False)
    assert [n["node"] for n in drained.nodes] == ["csnode3"]
    (entry,) = drained.nodes
    assert entry["action"] == "printed" and entry["command"][:4] == [
        "scontrol", "update", "NodeName=csnode3", "State=DRAIN",
    ]  # fmt: skip
    assert entry["command"][4] == f"Reason={entry['reason']}"
    assert fake.state()["log"] == []  # Slurm was not even asked


def test_drain_drains_the_slow_node_and_leaves_an_admins_node_alone(slurm, tmp_path):
    six = {f"csnode{i}": ("idle", "") for i in range(1, 7)}
    fake = slurm({**six, "csnode2": ("drained", "maintenance")})
    path, run_id = _run(tmp_path, slow_nodes=(1, 2), n=6)  # csnode2 and csnode3
    drained = _after(path, run_id, apply=True)
    actions = {n["node"]: n["action"] for n in drained.nodes}
    assert actions == {"csnode2": "left alone: drained for 'maintenance'", "csnode3": "drained"}
    assert drained.status == status.CRITICAL
    assert fake.nodes()["csnode2"] == ["drained", "maintenance"]
    state, reason = fake.nodes()["csnode3"]
    assert state == "drained" and reason.startswith("commscope: ") and f"run {run_id}" in reason
    assert [u[2] for u in fake.updates()] == ["NodeName=csnode3"]
    # Again: already drained by commscope, not drained twice.
    again = _after(path, run_id, apply=True)
    assert {n["action"] for n in again.nodes if n["node"] == "csnode3"} == {
        "already drained by commscope"
    }
    assert len(fake.updates()) == 1 and again.status == status.CRITICAL


def test_drain_exit_codes_ok_warning_and_unknown(slurm, tmp_path, monkeypatch):
    fake = slurm()
    healthy = store_run(tmp_path / "h.sqlite", bw({}), NODES)
    assert _after(tmp_path / "h.sqlite", healthy, apply=True).status == status.OK
    path, run_id = _run(tmp_path, slow_nodes=(), slow_links=[(0, 3)])
    link = _after(path, run_id, apply=True)
    assert link.status == status.WARNING and link.nodes == [] and link.links
    assert fake.updates() == []
    # A node Slurm does not know, or scontrol refusing: UNKNOWN, nothing drained.
    fake = FakeSlurm(tmp_path / "other", {"n1": ("idle", "")})
    for key, value in fake.env().items():
        monkeypatch.setenv(key, value)
    path, run_id = _run(tmp_path / "other")
    unknown = _after(path, run_id, apply=True)
    assert unknown.status == status.UNKNOWN and "not a node of this Slurm" in unknown.problems[0]
    refusing = FakeSlurm(tmp_path / "refusing", {n: ("idle", "") for n in NODES}, refuse=True)
    for key, value in refusing.env().items():
        monkeypatch.setenv(key, value)
    path, run_id = _run(tmp_path / "refusing")
    refused = _after(path, run_id, apply=True)
    assert refused.status == status.UNKNOWN and "Invalid user id" in refused.problems[0]
    assert "sudo" in refused.problems[0]
    assert all(state == "idle" for state, _ in refusing.nodes().values())


def test_drain_on_one_machine_is_refused_before_measuring(cli, tmp_path):
    # With --drain a usage error is UNKNOWN (3), not 2, which means "a node drained".
    out = cli("run", "matrix", "--np", "4", "--drain")
    assert out.returncode == 3 and "--drain on one machine" in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1
    out = cli("run", "p2p", "--np", "2", "--drain")  # run p2p has no --drain
    assert out.returncode == 3 and "--drain" in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1
    assert not cli.store.exists()  # nothing measured, nothing stored


def test_drain_outside_slurm_is_unknown_before_measuring(cli, tmp_path):
    cli.env["PATH"] = str(tmp_path)  # no scontrol: commscope itself runs from sys.executable
    out = cli("run", "matrix", "--hosts", "localhost:1,127.0.0.1:1", "--np", "2", "--drain")
    assert out.returncode == 3, out.stderr
    assert "--drain" in out.stderr and "not a Slurm cluster" in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1
    assert not cli.store.exists()


# ---------------------------------------------------------------- commscope undrain


def test_undrain_returns_only_commscopes_nodes(cli, tmp_path):
    fake = FakeSlurm(
        tmp_path,
        {
            "csnode1": ("drained", "maintenance"),
            "csnode2": ("idle", ""),
            "csnode3": ("drained", "commscope: bandwidth as receiver ..., run 4"),
            "csnode4": ("draining", "commscope: bandwidth as sender ..., run 4"),
        },
    )
    cli.env.update(fake.env())
    dry = cli("undrain", "--dry-run", "--no-recheck")
    assert dry.returncode == 0, dry.stderr
    assert "would run: scontrol update NodeName=csnode3 State=RESUME" in dry.stdout
    assert "left alone: csnode1" in dry.stdout and fake.updates() == []
    out = cli("undrain", "--json", "--no-recheck")
    assert out.returncode == 0, out.stderr
    shown = json.loads(out.stdout)
    assert [(n["node"], n["outcome"], n["rechecked"]) for n in shown["nodes"]] == [
        ("csnode3", "returned without a recheck", False),
        ("csnode4", "returned without a recheck", False),
    ]
    assert [entry["node"] for entry in shown["left"]] == ["csnode1"]
    assert fake.nodes()["csnode1"] == ["drained", "maintenance"]
    assert fake.nodes()["csnode3"] == fake.nodes()["csnode4"] == ["idle", ""]
    assert fake.updates() == [
        ["scontrol", "update", f"NodeName={n}", "State=RESUME"] for n in ("csnode3", "csnode4")
    ]
    # Named: an admin's node is left alone, a warning (1); nothing to do is 0.
    out = cli("undrain", "csnode1")
    assert out.returncode == 1 and "left alone: csnode1" in out.stdout
    assert fake.nodes()["csnode1"] == ["drained", "maintenance"]
    assert cli("undrain").returncode == 0  # nothing drained by commscope: nothing to recheck
    idle = cli("undrain", "csnode2")  # named but not drained: nothing to do
    assert idle.returncode == 0 and "csnode2, not drained (idle): nothing to do" in idle.stdout


@pytest.mark.parametrize(
    ("argv", "fragment"),
    [(["nosuch"], "not a node of this Slurm"), (["csnode1;reboot"], "not a node name"),
     (["--dry-run=yes"], "ignored explicit argument")],
)  # fmt: skip
def test_undrain_bad_input_is_unknown_in_one_line(cli, tmp_path, argv, fragment):
    fake = FakeSlurm(tmp_path, {"csnode1": ("drained", "commscope: x")})
    cli.env.update(fake.env())
    out = cli("undrain", *argv)
    assert out.returncode == 3 and fragment in out.stderr, out.stderr
    assert len(out.stderr.strip().splitlines()) == 1
    assert fake.updates() == []


def test_undrain_outside_slurm_is_unknown(cli, tmp_path):
    cli.env["PATH"] = str(tmp_path)
    out = cli("undrain")
    assert out.returncode == 3 and "not a Slurm cluster" in out.stderr
