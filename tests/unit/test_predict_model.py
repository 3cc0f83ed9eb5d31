"""Cluster models: YAML (and its one-line errors), hwloc XML, the virtual cluster."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from commscope.errors import PredictError
from commscope.measure import vcluster
from commscope.predict import model_sources
from commscope.predict.model_yaml import load_model, parse_bandwidth, parse_latency
from tests.conftest import need

GOOD = """\
name: rack1
nodes: [a0, a1, a2, a3]
sockets: 2
cores: 6
channels:
  memory: {bandwidth: 10GB/s, latency: 0.3us}
  socket: {bandwidth: 1e10}
  nic: {bandwidth: 40Gbit/s, latency: 1.5us}
switches:
  - name: leaf0
    nodes: 0-1
    uplink: {bandwidth: 5GB/s}
  - {name: leaf1, nodes: [a2, 3], uplink: {bandwidth: 10Gbit/s}}
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "cluster.yaml"
    path.write_text(text)
    return path


def test_good_model(tmp_path: Path) -> None:
    m = load_model(write(tmp_path, GOOD))
    assert m.name == "rack1" and m.node_names == ("a0", "a1", "a2", "a3")
    assert (m.nodes, m.sockets, m.cores, m.cores_per_node) == (4, 2, 6, 12)
    assert m.memory.bandwidth_Bps == 10e9 and m.memory.latency_s == pytest.approx(0.3e-6)
    assert m.socket_link.bandwidth_Bps == 1e10 and m.socket_link.latency_s is None
    assert m.nic.bandwidth_Bps == 5e9
    assert [s.nodes for s in m.switches] == [(0, 1), (2, 3)]
    assert m.switch_of.tolist() == [0, 0, 1, 1]
    assert m.uplink_ratios().tolist() == [1.0, 4.0]


def test_minimal_model_names_nodes(tmp_path: Path) -> None:
    m = load_model(write(tmp_path, "nodes: 3\nsockets: 1\ncores: 4\n"))
    assert m.node_names == ("node0", "node1", "node2") and m.name == "cluster"
    assert m.nic.bandwidth_Bps is None and not m.switches


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("12.5GB/s", 12.5e9),
        ("40Gbit/s", 5e9),
        ("1GBps", 1e9),
        ("8Gbps", 1e9),
        ("100MiB/s", 100 * 2**20),
        ("1e9", 1e9),
        ("800 kB/s", 8e5),
        ("10 bit/s", 1.25),
    ],
)
def test_bandwidth_units(text: str, value: float) -> None:
    assert parse_bandwidth(text) == pytest.approx(value)


@pytest.mark.parametrize("text", ["fast", "10 GHz", "-1", "0", "10Gb"])
def test_bad_bandwidths(text: str) -> None:
    assert parse_bandwidth(text) is None


def test_latency_units() -> None:
    assert parse_latency("1.5us") == pytest.approx(1.5e-6)
    assert parse_latency("2 ms") == pytest.approx(2e-3)
    assert parse_latency(0) == 0.0 and parse_latency("soon") is None


BAD = [
    ("sockets: 2\ncores: 4\n", "nodes: missing"),
    ("nodes: 2\nsockets: 2\n", "cores: missing"),
    ("nodes: 2\nsockets: 0\ncores: 4\n", "sockets: 0 is out of range"),
    ("nodes: two\nsockets: 1\ncores: 4\n", "nodes: 'two' is not a whole number"),
    ("nodes: 2\nsockets: 1\ncores: 4\nchanels: {}\n", "chanels: unknown field"),
    ("nodes: 2\nsockets: 1\ncores: 4\nchannels: {qpi: {}}\n", "channels.qpi: unknown field"),
    (
        "nodes: 2\nsockets: 1\ncores: 4\nchannels: {nic: {bandwidth: fast}}\n",
        "channels.nic.bandwidth: 'fast' is not a bandwidth",
    ),
    (
        "nodes: 2\nsockets: 1\ncores: 4\nchannels: {nic: {latency: soon}}\n",
        "channels.nic.latency: 'soon' is not a latency",
    ),
    ("nodes: 2\nsockets: 1\ncores: 4\nchannels: {nic: 5}\n", "channels.nic: expected a mapping"),
    ("nodes: [a, a]\nsockets: 1\ncores: 4\n", "nodes: host names must be distinct"),
    (
        "nodes: 2\nsockets: 1\ncores: 4\nchannels: {nic: {bandwidth: 1e9}}\n"
        "switches: [{nodes: 0-2, uplink: {bandwidth: 1e9}}]\n",
        "switches[0].nodes: '0-2': give indices A-B with A <= B <= 1",
    ),
    (
        "nodes: 2\nsockets: 1\ncores: 4\nchannels: {nic: {bandwidth: 1e9}}\n"
        "switches: [{nodes: [0, 2], uplink: {bandwidth: 1e9}}]\n",
        "switches[0].nodes: 2 is not a node of this model",
    ),
    # Numbers beyond the stated bounds, or no numbers at all, each refused before any work.
    (
        "nodes: 99999999999999999999\nsockets: 1\ncores: 4\n",
        "nodes: 99999999999999999999 is out of range; give a whole number from 1 to 65536",
    ),
    ("nodes: 2\nsockets: 65\ncores: 4\n", "sockets: 65 is out of range"),
    ("nodes: 2\nsockets: 1\ncores: 1.5\n", "cores: 1.5 is not a whole number"),
    (
        "nodes: 2\nsockets: 1\ncores: 4\nchannels: {nic: {bandwidth: .inf}}\n",
        "channels.nic.bandwidth: inf is not a bandwidth",
    ),
    (
        "nodes: 2\nsockets: 1\ncores: 4\nchannels: {nic: {bandwidth: .nan}}\n",
        "channels.nic.bandwidth: nan is not a bandwidth",
    ),
    (
        "nodes: 2\nsockets: 1\ncores: 4\nchannels: {nic: {bandwidth: 1e999GB/s}}\n",
        "channels.nic.bandwidth: '1e999GB/s' is not a bandwidth",
    ),
    (
        "nodes: 2\nsockets: 1\ncores: 4\nchannels: {nic: {bandwidth: 1e-300}}\n",
        "from 1 to 1e+15 bytes/s",
    ),
    (
        "nodes: 2\nsockets: 1\ncores: 4\nchannels: {memory: {latency: .inf}}\n",
        "channels.memory.latency: inf is not a latency",
    ),
    ("nodes: 2\nsockets: 1\ncores: 4\nchannels: {memory: {latency: 2s}}\n", "from 0 to 1 s"),
    (
        "nodes: 2\nsockets: 1\ncores: 4\nchannels: {nic: {bandwidth: 1e9}}\n"
        "switches: [{nodes: 0-99999999999999999999, uplink: {bandwidth: 1e9}}]\n",
        "give indices A-B",
    ),
    ('nodes: 2\nsockets: 1\ncores: 4\nname: "a\\x1bb"\n', "name: 'a\\x1bb': give a name"),
    ("nodes: 2\nsockets: 1\ncores: 4\nname: 2001-13-45\n", "a value YAML cannot build"),
    (
        "nodes: 2\nsockets: 1\ncores: 4\nchannels: {nic: {bandwidth: 1e9}}\n"
        "switches: [{nodes: [0, 1], uplink: {bandwidth: 1e9}},"
        " {nodes: [1], uplink: {bandwidth: 1}}]"
        "\n",
        "switches[1].nodes: node node1 is behind switch switch0 already",
    ),
    (
        "nodes: 2\nsockets: 1\ncores: 4\nchannels: {nic: {bandwidth: 1e9}}\n"
        "switches: [{nodes: [0], uplink: {bandwidth: 1e9}}]\n",
        "switches: node node1 is behind no switch",
    ),
    (
        "nodes: 2\nsockets: 1\ncores: 4\nswitches: [{nodes: 0-1, uplink: {bandwidth: 1e9}}]\n",
        "channels.nic.bandwidth: missing",
    ),
    (
        "nodes: 2\nsockets: 1\ncores: 4\nchannels: {nic: {bandwidth: 1e9}}\n"
        "switches: [{nodes: 0-1, uplink: {latency: 1us}}]\n",
        "switches[0].uplink.bandwidth",
    ),
    ("nodes: 2\nsockets: 1\ncores: 4\nswitches: {a: 1}\n", "switches: expected a list"),
    ("- 1\n- 2\n", "(top): expected a mapping"),
    ("nodes: [2\n", "line 2"),
]


@pytest.mark.parametrize(("text", "message"), BAD)
def test_yaml_errors_are_one_line_naming_file_and_field(
    tmp_path: Path, text: str, message: str
) -> None:
    path = write(tmp_path, text)
    with pytest.raises(PredictError) as err:
        load_model(path)
    line = err.value.one_line()
    assert line.startswith(f"{path}:") and message in line and "\n" not in line


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(PredictError, match="cannot read the cluster model"):
        load_model(tmp_path / "nope.yaml")


TWO_PACKAGES = """<?xml version="1.0"?><topology version="2.0">
<object type="Machine"><info name="HostName" value="big"/>
  <object type="Package"><object type="Core"/><object type="Core"/><object type="Core"/></object>
  <object type="Package"><object type="Core"/><object type="Core"/><object type="Core"/></object>
</object></topology>"""


def test_hwloc_xml() -> None:
    m = model_sources.model_from_hwloc(TWO_PACKAGES, nodes=4)
    assert (m.nodes, m.sockets, m.cores) == (4, 2, 3) and m.node_names[0] == "big0"
    one = model_sources.model_from_hwloc(TWO_PACKAGES)
    assert one.node_names == ("big",)


def test_hwloc_errors() -> None:
    with pytest.raises(PredictError, match="not hwloc XML"):
        model_sources.model_from_hwloc("<x/>")
    uneven = TWO_PACKAGES.replace('<object type="Core"/></object>', "</object>", 1)
    with pytest.raises(PredictError, match="different core counts"):
        model_sources.model_from_hwloc(uneven)


def test_hwloc_on_this_machine() -> None:
    need(
        shutil.which("hwloc-ls") is not None or shutil.which("lstopo") is not None,
        "hwloc tools are not installed",
    )
    m = model_sources.model_from_hwloc()
    assert m.nodes == 1 and m.cores_per_node >= 1


def test_vcluster_model() -> None:
    state = vcluster.plan(3, rate="100mbit")
    m = model_sources.model_from_vcluster([n.name for n in state.nodes], state.rate, TWO_PACKAGES)
    assert m.node_names == tuple(n.name for n in state.nodes) and m.nodes == 3
    assert m.nic.bandwidth_Bps == pytest.approx(12.5e6) and (m.sockets, m.cores) == (2, 3)
