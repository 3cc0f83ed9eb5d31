"""topology.conf for the whole cluster: a measured part merged into the site's file, or partial.

The site's file is a real topology/tree file, read back with the parser the virtual cluster
checks files with; the cluster's node list is given (as Slurm's sinfo would give it) or
Slurm is out of reach (no sinfo on PATH).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from commscope.data import topology_conf
from commscope.errors import UsageError
from commscope.jobs import topology
from tests.unit.test_matrix import point, store_run
from tests.unit.test_switch_groups import NAMES, rates

SITE = """\
# the site's topology: three leaves, two spines, one core
SwitchName=leaf1 Nodes=csnode[1-3] LinkSpeed=100
SwitchName=leaf2 Nodes=csnode[4-6]
SwitchName=leaf3 Nodes=csnode[7-9]   # the new rack
SwitchName=spine1 Switches=leaf[1-2]
SwitchName=spine2 Switches=leaf3
SwitchName=top Switches=spine[1-2]
"""
CLUSTER = tuple(f"csnode{i}" for i in range(1, 10))


@pytest.fixture
def matrix(tmp_path: Path) -> tuple[Path, int]:
    """A store with a matrix run of csnode1-6: two leaves of three under one top switch."""
    bw = rates(6, lambda i: i // 3, 100e6, lambda i, j: 25e6)
    store = tmp_path / "s.sqlite"
    points = [point("matrix_bw", a, b, bw[a, b]) for a in range(6) for b in range(6) if a != b]
    return store, store_run(store, points, NAMES)


def job(matrix: tuple[Path, int], conf: Path, **kw: object) -> topology.TopologyJob:
    store, run = matrix
    return topology.TopologyJob(str(store), str(run), conf=str(conf), **kw)  # type: ignore[arg-type]


def tree_of(text: str) -> tuple[dict[str, str], dict[str, str]]:
    """Node -> leaf and switch -> the switch above, of a topology.conf read back."""
    switches = topology_conf.parse(text, "written")
    leaf = {n: s.name for s in switches for n in s.nodes}
    above = {b: s.name for s in switches for b in s.switches}
    return leaf, above


def test_the_site_file_reads_as_a_tree() -> None:
    switches = topology_conf.parse(SITE, "site.conf")
    assert [s.name for s in switches] == ["leaf1", "leaf2", "leaf3", "spine1", "spine2", "top"]
    assert switches[0].nodes == ("csnode1", "csnode2", "csnode3")
    assert switches[0].link_speed == "100" and switches[2].line == 4
    assert topology_conf.render(switches).splitlines()[0] == (
        "SwitchName=leaf1 Nodes=csnode1,csnode2,csnode3 LinkSpeed=100"
    )


@pytest.mark.parametrize(
    ("text", "said"),
    [
        (SITE + "SwitchName=leaf4 Nodes=csnode3\n", "line 8: node csnode3 is under switch leaf1"),
        (SITE + "SwitchName=leaf1 Nodes=csnode10\n", "line 8: switch leaf1 is defined on line 2"),
        (SITE + "SwitchName=core Switches=spine1\n", "switch spine1 is under switch top"),
        ("SwitchName=top Switches=spine9\n", "switch spine9 is not defined"),
    ],
)
def test_a_file_that_is_no_tree_is_refused_in_one_line(text: str, said: str) -> None:
    with pytest.raises(topology_conf.TopologyConfError, match=said) as err:
        topology_conf.parse(text, "site.conf")
    assert "\n" not in str(err.value) and str(err.value).startswith("site.conf line")


def test_host_lists_compress_and_expand_back() -> None:
    names = ["csnode3", "csnode1", "csnode2", "csnode5", "n08", "n09", "n10", "login", "csnode1"]
    text = topology_conf.compress_hostlist(names)
    assert text == "csnode[1-3,5],n[08-10],login"
    assert sorted(topology_conf.expand_hostlist(text)) == sorted(set(names))


def test_a_merge_replaces_the_measured_switches_and_keeps_the_others(matrix, tmp_path) -> None:
    site, out = tmp_path / "site.conf", tmp_path / "new.conf"
    site.write_text(SITE)
    found = topology.infer(job(matrix, out, merge=str(site), cluster_nodes=CLUSTER))
    text = out.read_text()
    leaf, above = tree_of(text)
    assert sorted(leaf) == sorted(CLUSTER)  # every node once
    assert leaf["csnode1"] == leaf["csnode3"] != leaf["csnode4"] == leaf["csnode6"]
    assert leaf["csnode7"] == "leaf3" and above["leaf3"] == "spine2"  # the rack not measured
    lines = [line for line in text.splitlines() if not line.startswith("#")]
    assert not any("leaf1" in line or "spine1" in line for line in lines)  # replaced; left empty
    # the measured top ('top', taken by the site's core) renamed, and put under that core
    assert above[leaf["csnode1"]] == "measured_top" and above["measured_top"] == "top"
    assert found.left_out == () and "leaf1, leaf2, spine1 replaced" in found.notes[0]
    assert site.read_text() == SITE


def test_a_node_that_would_sit_under_two_switches_is_refused(matrix, tmp_path) -> None:
    site, out = tmp_path / "site.conf", tmp_path / "new.conf"
    site.write_text(SITE.replace("csnode[4-6]", "csnode[4-6],csnode10"))
    with pytest.raises(UsageError) as err:
        topology.infer(job(matrix, out, merge=str(site), cluster_nodes=CLUSTER))
    said = err.value.one_line()
    assert "node csnode4 would sit under two switches: leaf2 (line 3)" in said, said
    assert "csnode10" in said and "s0_1" in said and "\n" not in said
    assert not out.exists()


def test_nodes_left_out_refuse_the_file_unless_partial(matrix, tmp_path) -> None:
    out = tmp_path / "t.conf"
    with pytest.raises(UsageError) as err:
        topology.infer(job(matrix, out, cluster_nodes=CLUSTER))
    said = err.value.one_line()
    assert "3 of Slurm's 9 nodes are in no switch" in said and "csnode[7-9]" in said, said
    assert "--partial" in said and "--merge" in said and not out.exists()
    found = topology.infer(job(matrix, out, partial=True, cluster_nodes=CLUSTER))
    text = out.read_text()
    assert "# partial: 3 of Slurm's 9 nodes are in no switch here: csnode[7-9]\n" in text
    assert sorted(tree_of(text)[0]) == list(NAMES) and found.left_out == CLUSTER[6:]


def test_without_slurm_the_file_needs_partial_or_merge(matrix, tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # no sinfo, no scontrol: Slurm is not here
    out, site = tmp_path / "t.conf", tmp_path / "site.conf"
    with pytest.raises(UsageError, match="Slurm's node list could not be read"):
        topology.infer(job(matrix, out))
    assert not out.exists()
    topology.infer(job(matrix, out, partial=True))
    assert "nodes left out are not known" in out.read_text()
    site.write_text(SITE)
    topology.infer(job(matrix, out, merge=str(site)))
    assert sorted(tree_of(out.read_text())[0]) == sorted(CLUSTER)


def test_partial_and_merge_need_an_output(matrix, tmp_path) -> None:
    store, run = matrix
    with pytest.raises(UsageError, match="give -o FILE"):
        topology.infer(topology.TopologyJob(str(store), str(run), partial=True))
    site = tmp_path / "site.conf"
    site.write_text("SwitchName=s1 Nodes=csnode1 Color=red\n")
    with pytest.raises(UsageError, match=r"site.conf line 1: 'Color=red' is not one of"):
        topology.infer(job(matrix, tmp_path / "t.conf", merge=str(site)))
