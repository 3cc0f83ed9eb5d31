"""The virtual cluster's shape and faults without root: switches, uplinks, nodes' own rates.

Planned, validated and written to the state file here; built for real in
tests/cluster/test_switches_vcluster.py.
"""

from __future__ import annotations

import argparse

import pytest

from commscope.cli import OneLineParser, vcluster_cmd
from commscope.errors import ClusterError, UsageError
from commscope.measure import vcluster
from commscope.measure.vcluster import model
from commscope.measure.vcluster import slurm as vslurm


def test_one_switch_is_the_bridge_alone_as_before():
    state = vcluster.plan(4)
    assert state.switches == 1 and state.uplink_rate == "" and state.leaves == ()
    assert state.uplinks == () and {n.switch for n in state.nodes} == {"csbr0"}
    assert all(n.rate == "" and state.node_rate(n) == "1gbit" for n in state.nodes)


@pytest.mark.parametrize(
    ("nodes", "switches", "leaves"),
    [
        (4, 2, [1, 1, 2, 2]),
        (5, 2, [1, 1, 1, 2, 2]),
        (6, 3, [1, 1, 2, 2, 3, 3]),
        (7, 3, [1, 1, 1, 2, 2, 3, 3]),
        (3, 3, [1, 2, 3]),
        (8, 4, [1, 1, 2, 2, 3, 3, 4, 4]),
    ],
)
def test_node_i_of_n_sits_on_leaf_i_k_over_n_plus_1(nodes, switches, leaves):
    state = vcluster.plan(nodes, "200mbit", switches=switches, uplink_rate="50MBit")
    assert [n.switch for n in state.nodes] == [f"csbr{k}" for k in leaves]
    assert state.leaves == tuple(f"csbr{k}" for k in range(1, switches + 1))
    assert state.uplinks == tuple(
        vcluster.Uplink(f"csbr{k}", f"csup{k}", f"csupl{k}") for k in range(1, switches + 1)
    )
    assert state.bridge == "csbr0" and state.bridge_address == "10.77.0.1"  # the core
    assert state.uplink_rate == "50mbit"
    assert all(len(name) <= 15 for u in state.uplinks for name in u.__dict__.values())


def test_the_uplink_rate_defaults_to_the_links_rate():
    assert vcluster.plan(4, "200mbit", switches=2).uplink_rate == "200mbit"


@pytest.mark.parametrize(
    ("switches", "uplink", "fragment"),
    [
        (0, "", "--switches 0: give a whole number"),
        (-1, "", "--switches -1"),
        (True, "", "--switches True"),
        (5, "", "--switches 5 is more than the 4 node(s)"),
        (1, "100mbit", "--uplink-rate '100mbit' with one switch"),
        (2, "fast", "--uplink-rate: bad rate 'fast'"),
        (2, "0mbit", "--uplink-rate: rate '0mbit' is out of range"),
    ],
)
def test_bad_switch_counts_and_uplink_rates_are_refused_in_one_line(switches, uplink, fragment):
    with pytest.raises(ClusterError) as err:
        vcluster.plan(4, switches=switches, uplink_rate=uplink)
    text = err.value.one_line()
    assert fragment in text and "\n" not in text
    assert any(fix in text for fix in ("give", "use", "drop"))


def test_nodes_have_their_own_rates_after_the_clusters():
    state = vcluster.plan(4, "200MBit, csnode3=50mbit ,csnode1=1gbit")
    assert state.rate == "200mbit"
    assert [n.rate for n in state.nodes] == ["1gbit", "", "50mbit", ""]
    assert [state.node_rate(n) for n in state.nodes] == ["1gbit", "200mbit", "50mbit", "200mbit"]
    only = vcluster.plan(2, "csnode2=100mbit")
    assert only.rate == vcluster.DEFAULT_RATE and only.nodes[1].rate == "100mbit"
    assert vcluster.parse_rates("1gbit,csnode2=10mbit", 2) == ("1gbit", {"csnode2": "10mbit"})


@pytest.mark.parametrize(
    ("rate", "fragment"),
    [
        ("1gbit,2gbit", "two rates for every link"),
        ("1gbit,csnode9=1gbit", "'csnode9' is not a node of this cluster (csnode1 .. csnode4)"),
        ("1gbit,csnode2=1gbit,csnode2=2gbit", "gives csnode2 twice"),
        ("1gbit,csnode2=fast", "bad rate 'fast'"),
        ("1gbit,=1gbit", "'' is not a node"),
        ("1gbit,", "bad rate ''"),
        ("csnode1=1gbit;reboot", "bad rate"),
    ],
)
def test_bad_node_rates_are_refused_in_one_line(rate, fragment):
    with pytest.raises(ClusterError) as err:
        vcluster.plan(4, rate)
    assert fragment in err.value.one_line() and "\n" not in err.value.one_line()


def test_switches_uplinks_and_own_rates_are_in_the_state_file_and_the_layout():
    state = vcluster.plan(4, "200mbit,csnode4=20mbit", switches=2, uplink_rate="50mbit")
    data = state.to_json()
    assert data["switches"] == 2 and data["uplink_rate"] == "50mbit"
    assert [(n["name"], n["switch"], n["rate"], n["own_rate"]) for n in data["nodes"]] == [
        ("csnode1", "csbr1", "200mbit", False),
        ("csnode2", "csbr1", "200mbit", False),
        ("csnode3", "csbr2", "200mbit", False),
        ("csnode4", "csbr2", "20mbit", True),
    ]
    assert vcluster.ClusterState.from_json(data) == state
    flat = vcluster.plan(4, "200mbit")
    assert not model.same_layout(state, flat)
    assert not model.same_layout(state, vcluster.plan(4, "200mbit", switches=2))  # uplink
    assert not model.same_layout(
        state, vcluster.plan(4, "200mbit", switches=2, uplink_rate="50mbit")
    )  # csnode4's own rate
    assert model.same_layout(
        state, vcluster.plan(4, "0.2gbit,csnode4=20mbit", switches=2, uplink_rate="50000kbit")
    )


def test_a_state_file_from_before_switches_reads_as_one_switch():
    old = vcluster.plan(3).to_json()
    del old["switches"], old["uplink_rate"]
    for node in old["nodes"]:
        del node["switch"], node["rate"], node["own_rate"]
    assert vcluster.ClusterState.from_json(old) == vcluster.plan(3)


def test_down_finds_bridges_and_uplinks_by_name():
    assert model.BRIDGE_RE.fullmatch("csbr0") and model.BRIDGE_RE.fullmatch("csbr12")
    assert model.UPLINK_RE.fullmatch("csup1") and model.UPLINK_RE.fullmatch("csupl3")
    for other in ("csbr", "csbrx", "csupx1", "eth0", "csveth1"):
        assert not (model.BRIDGE_RE.fullmatch(other) or model.UPLINK_RE.fullmatch(other))


# ---------------------------------------------------------------- Slurm's topology


def test_slurms_topology_follows_the_switches():
    assert vslurm.topology_conf(vcluster.plan(2)) == "SwitchName=csbr0 Nodes=csnode1,csnode2\n"
    state = vcluster.plan(4, switches=2)
    assert vslurm.topology_conf(state).splitlines() == [
        "SwitchName=csbr1 Nodes=csnode1,csnode2",
        "SwitchName=csbr2 Nodes=csnode3,csnode4",
        "SwitchName=csbr0 Switches=csbr1,csbr2",
    ]
    assert vslurm.check_topology(vslurm.topology_conf(state), state, "t.conf")


@pytest.mark.parametrize(
    ("text", "names"),
    [
        ("csnode1,csnode2", ["csnode1", "csnode2"]),
        ("csnode[1-3]", ["csnode1", "csnode2", "csnode3"]),
        ("csnode[1-2,4],x", ["csnode1", "csnode2", "csnode4", "x"]),
        ("n[08-10]", ["n08", "n09", "n10"]),
        ("s[1-2]a", ["s1a", "s2a"]),
    ],
)
def test_slurm_host_lists_are_expanded(text, names):
    assert vslurm.expand_hostlist(text) == names


def test_a_measured_topology_passes_without_its_comments():
    state = vcluster.plan(4, switches=2)
    text = (
        "# commscope topology of run 3\n"
        "SwitchName=s0_0 Nodes=csnode1,csnode2\n\n"
        "SwitchName=s0_1 Nodes=csnode[3-4]   # the other leaf\n"
        "SwitchName=top Switches=s0_0,s0_1 LinkSpeed=1\n"
    )
    assert vslurm.check_topology(text, state, "t.conf").splitlines() == [
        "SwitchName=s0_0 Nodes=csnode1,csnode2",
        "SwitchName=s0_1 Nodes=csnode[3-4]",
        "SwitchName=top Switches=s0_0,s0_1 LinkSpeed=1",
    ]


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("", "defines no switch"),
        ("# nothing\n", "defines no switch"),
        ("SwitchName=s1 Nodes=csnode9", "t.conf line 1: csnode9 is not a node of this vcluster"),
        ("SwitchName=s1 Nodes=csnode1\nSwitchName=top Switches=s1,s2", "switch s2 is not defined"),
        ("SwitchName=s1", "either Nodes=LIST or Switches=LIST"),
        ("SwitchName=s1 Nodes=csnode1 Switches=s1", "either Nodes=LIST or Switches=LIST"),
        ("Switch=s1 Nodes=csnode1", "'Switch=s1' is not one of"),
        ("SwitchName=s1 Nodes=csnode1 Nodes=csnode2", "once each"),
        ("SwitchName=s1 Nodes=csnode[2-1]", "range that is not one"),
        ("SwitchName=s1 Nodes=csnode1;reboot", "is not a node or switch name"),
        ("SwitchName=../x Nodes=csnode1", "give SwitchName=NAME"),
    ],
)
def test_bad_topologies_are_refused_in_one_line(text, fragment):
    with pytest.raises(ClusterError) as err:
        vslurm.check_topology(text, vcluster.plan(2), "t.conf")
    assert fragment in err.value.one_line() and "\n" not in err.value.one_line()
    assert "t.conf" in err.value.one_line()


def test_a_topology_needs_the_clusters_slurm(tmp_path):
    with pytest.raises(ClusterError, match="runs no Slurm.*--slurm"):
        vslurm.use_topology(vcluster.plan(2), "SwitchName=s Nodes=csnode1", "t.conf")


# ---------------------------------------------------------------- the command line


@pytest.mark.parametrize(
    ("argv", "fragment"),
    [
        (["--nodes", "4", "--switches", "0"], "--switches"),
        (["--nodes", "4", "--switches", "two"], "--switches"),
        (["--nodes", "4", "--switches", "5"], "--switches 5 is more than the 4 node(s)"),
        (["--nodes", "4", "--uplink-rate", "100mbit"], "give --switches 2 or more"),
        (["--nodes", "4", "--switches", "2", "--uplink-rate", "fast"], "--uplink-rate"),
        (["--nodes", "4", "--rate", "1gbit,csnode7=1gbit"], "is not a node of this cluster"),
        (["--nodes", "2", "--slurm-topology", "/nonexistent/t.conf", "--slurm"], "cannot read"),
        (["--nodes", "2", "--slurm-topology", "TOPOLOGY"], "without --slurm"),
        (["--nodes", "2", "--slurm", "--slurm-topology", "BAD"], "csnode5 is not a node"),
    ],
)
def test_cli_bad_shapes_exit_2_in_one_line_before_anything_is_built(cli, tmp_path, argv, fragment):
    good, bad = tmp_path / "t.conf", tmp_path / "bad.conf"
    good.write_text("SwitchName=s Nodes=csnode1,csnode2\n")
    bad.write_text("SwitchName=s Nodes=csnode5\n")
    argv = [str(good) if a == "TOPOLOGY" else str(bad) if a == "BAD" else a for a in argv]
    out = cli("vcluster", "up", *argv)
    assert out.returncode == 2, out.stderr
    assert fragment in out.stderr and len(out.stderr.strip().splitlines()) == 1


def _cli_args(*argv: str) -> argparse.Namespace:
    parser = OneLineParser(prog="commscope vcluster")
    vcluster_cmd.setup_parser(parser)
    return parser.parse_args(argv)


def test_cli_slurm_topology_needs_a_cluster_with_slurm_and_a_topology_of_its_nodes(
    monkeypatch, tmp_path
):
    conf = tmp_path / "t.conf"
    conf.write_text("SwitchName=s Nodes=csnode1,csnode3\n")
    args = _cli_args("slurm-topology", str(conf))
    monkeypatch.setattr(vcluster, "status", lambda: None)
    with pytest.raises(UsageError, match="no vcluster is up"):
        vcluster_cmd.run(args)
    monkeypatch.setattr(vcluster, "status", lambda: vcluster.plan(2, services=("slurm",)))
    monkeypatch.setattr(vslurm, "use_topology", lambda *a: pytest.fail("must not be used"))
    with pytest.raises(UsageError, match="csnode3 is not a node of this vcluster"):
        vcluster_cmd.run(args)


def test_cli_up_passes_the_shape_on(monkeypatch, capsys):
    seen = {}

    def up(nodes, **options):
        seen.update(options, nodes=nodes)
        return vcluster.plan(nodes, options["rate"], switches=options["switches"],
                             uplink_rate=options["uplink_rate"])  # fmt: skip

    monkeypatch.setattr(vcluster, "up", up)
    args = _cli_args(
        "up", "--nodes", "4", "--rate", "200mbit,csnode2=50mbit", "--switches", "2",
        "--uplink-rate", "100mbit",
    )  # fmt: skip
    assert vcluster_cmd.run(args) == 0
    assert (seen["nodes"], seen["switches"], seen["uplink_rate"]) == (4, 2, "100mbit")
    shown = capsys.readouterr().out
    assert "2 switches (csbr1, csbr2) joined by 100mbit uplinks to the core csbr0" in shown
    assert "csnode2    10.77.0.3  switch csbr1  link 50mbit" in shown
    assert "csnode3    10.77.0.4  switch csbr2\n" in shown
