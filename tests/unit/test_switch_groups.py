"""Switches grouped from a measured matrix, Slurm's topology.conf and a cluster model."""

from __future__ import annotations

import json

import numpy as np
import pytest

from commscope.analysis import switch_groups
from commscope.predict.model_yaml import load_model
from tests.unit.test_matrix import point, store_run

NAMES = ("csnode1", "csnode2", "csnode3", "csnode4", "csnode5", "csnode6")


def rates(n: int, groups, within: float, across, noise: float = 0.03, seed: int = 3):
    rng = np.random.default_rng(seed)
    out = np.full((n, n), np.nan)
    for i in range(n):
        for j in range(n):
            if i != j:
                rate = within if groups(i) == groups(j) else across(i, j)
                out[i, j] = rate * np.exp(rng.normal(0, noise))
    return out


def test_two_leaves_under_one_top_switch():
    bw = rates(8, lambda i: i // 4, 100e6, lambda i, j: 30e6)
    tree = switch_groups.infer([f"n{i}" for i in range(8)], bw, None)
    assert switch_groups.slurm_topology(tree).splitlines() == [
        "SwitchName=s0_0 Nodes=n0,n1,n2,n3",
        "SwitchName=s0_1 Nodes=n4,n5,n6,n7",
        "SwitchName=top Switches=s0_0,s0_1",
    ]
    top = tree.switches[-1]
    assert top.bandwidth_Bps == pytest.approx(30e6, rel=0.05)  # the uplink, not the leaves
    assert tree.switches[0].bandwidth_Bps == pytest.approx(100e6, rel=0.05)


def test_three_levels_are_found_level_by_level():
    def across(i: int, j: int) -> float:
        return 40e6 if i // 6 == j // 6 else 10e6

    bw = rates(12, lambda i: i // 3, 100e6, across)
    tree = switch_groups.infer([f"n{i}" for i in range(12)], bw, None)
    lines = switch_groups.slurm_topology(tree).splitlines()
    assert lines[:4] == [f"SwitchName=s0_{k} Nodes=" + ",".join(f"n{i}" for i in range(3 * k,
                         3 * k + 3)) for k in range(4)]  # fmt: skip
    assert lines[4:] == [
        "SwitchName=s1_0 Switches=s0_0,s0_1",
        "SwitchName=s1_1 Switches=s0_2,s0_3",
        "SwitchName=top Switches=s1_0,s1_1",
    ]


@pytest.mark.parametrize("noise", [0.0, 0.05, 0.15])
def test_one_switch_when_every_link_is_alike(noise):
    bw = rates(8, lambda i: 0, 100e6, lambda i, j: 0, noise=noise)
    tree = switch_groups.infer([f"n{i}" for i in range(8)], bw, None)
    assert len(tree.switches) == 1 and len(tree.switches[0].nodes) == 8


def test_latency_alone_groups_too():
    lat = rates(6, lambda i: i // 3, 10e-6, lambda i, j: 40e-6)
    tree = switch_groups.infer(NAMES, None, lat)
    assert tree.source == "latency"
    assert [s.nodes for s in tree.leaves] == [NAMES[:3], NAMES[3:]]


def test_the_cli_writes_slurms_file_and_a_model_predict_reads(cli, tmp_path):
    bw = rates(6, lambda i: i // 3, 100e6, lambda i, j: 25e6)
    points = [point("matrix_bw", a, b, bw[a, b]) for a in range(6) for b in range(6) if a != b]
    points += [point("matrix_lat", a, b, 20e-6) for a in range(6) for b in range(6) if a != b]
    run = store_run(cli.store, points, NAMES)
    conf, model = tmp_path / "topology.conf", tmp_path / "cluster.yaml"
    out = cli("topology", str(run), "-o", str(conf), "--model", str(model), "--partial")
    assert out.returncode == 0, out.stderr
    assert [line for line in conf.read_text().splitlines() if not line.startswith("#")] == [
        "SwitchName=s0_0 Nodes=csnode1,csnode2,csnode3",
        "SwitchName=s0_1 Nodes=csnode4,csnode5,csnode6",
        "SwitchName=top Switches=s0_0,s0_1",
    ]
    cluster = load_model(model)
    assert [s.name for s in cluster.switches] == ["s0_0", "s0_1"]
    assert cluster.switches[0].uplink.bandwidth_Bps == pytest.approx(25e6, rel=0.1)
    assert cluster.nic.bandwidth_Bps == pytest.approx(100e6, rel=0.1)
    shown = json.loads(cli("topology", str(run), "--json", check=True).stdout)
    assert shown["source"] == "bandwidth" and len(shown["switches"]) == 3


def test_the_cli_refuses_runs_without_a_matrix_or_with_one_node(cli, tmp_path):
    from tests import synthetic_runs

    p2p = synthetic_runs.store_run(cli.store, "p2p")
    out = cli("topology", str(p2p), "-o", str(tmp_path / "t.conf"))
    assert out.returncode == 2 and "no all-pairs matrix" in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1
    one = store_run(cli.store, [point("matrix_lat", 0, 1, 2e-5)], ("solo", "solo"))
    out = cli("topology", str(one), "-o", str(tmp_path / "t.conf"))
    assert out.returncode == 2 and "needs 2 or more" in out.stderr
    assert not (tmp_path / "t.conf").exists()  # nothing half-written


def test_topology_writes_both_files_or_neither(tmp_path):
    from tests.fuzz.harness import assert_one_line_refusal, call

    # cs_node2 suits Slurm's topology.conf but not a cluster model (RFC 1123 host names): the
    # model cannot be made, so topology.conf must not be written either.
    names = ("csnode1", "cs_node2", *NAMES[2:])
    bw = rates(6, lambda i: i // 3, 100e6, lambda i, j: 25e6)
    store = tmp_path / "s.sqlite"
    run = store_run(store, [point("matrix_bw", a, b, bw[a, b]) for a in range(6)
                            for b in range(6) if a != b], names)  # fmt: skip
    conf, model = tmp_path / "topology.conf", tmp_path / "cluster.yaml"
    conf.write_text("# the site's own\n")
    argv = ("topology", str(run), "-o", str(conf), "--model", str(model), "--partial")
    out = call(None, store, *argv)
    assert_one_line_refusal(out)
    assert "'cs_node2' is not a host name" in out.err, out
    assert conf.read_text() == "# the site's own\n" and not model.exists()
    # Two outputs naming one file: refused before the store is read, nothing written.
    same = call(
        None, store, "topology", str(run), "-o", str(conf), "--model", f"{tmp_path}/./topology.conf"
    )
    assert_one_line_refusal(same)
    assert "name the same file" in same.err and conf.read_text() == "# the site's own\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.sqlite", "topology.conf"]


def test_a_node_name_with_a_line_break_never_reaches_topology_conf(tmp_path):
    from tests.fuzz.harness import assert_one_line_refusal, call

    names = ("csnode1", "cs\nnode2", "cs\x1bnode3", *NAMES[3:])
    bw = rates(6, lambda i: i // 3, 100e6, lambda i, j: 25e6)
    store = tmp_path / "s.sqlite"
    run = store_run(store, [point("matrix_bw", a, b, bw[a, b]) for a in range(6)
                            for b in range(6) if a != b], names)  # fmt: skip
    conf = tmp_path / "topology.conf"
    out = call(None, store, "topology", str(run), "-o", str(conf))
    assert_one_line_refusal(out)
    assert "'cs\\nnode2'" in out.err and "topology.conf cannot hold" in out.err, out
    assert not conf.exists()
    shown = call(None, store, "topology", str(run))  # printed, escaped: one line a switch
    assert shown.code == 0 and "Nodes=csnode1,cs\\x0anode2,cs\\x1bnode3\n" in shown.out, shown
