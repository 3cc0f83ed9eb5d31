"""Node names of cluster models are host names: they are written into hostfiles and rankfiles."""

from __future__ import annotations

import json
from pathlib import Path
from unittest import mock

import pytest

from commscope.predict import model_sources
from commscope.predict.model import host_name_problem
from tests.fuzz.harness import assert_one_line_refusal, call

# Names that would reach a launcher's command line, a shell or a hostfile parser as
# something other than one host.
BAD = [
    "a;rm -rf ~",
    "-oProxyCommand=x",
    "two words",
    "a\nb",
    "a\rb",
    "tab\there",
    "esc\x1b[2J",
    "",
    " ",
    "n0.",
    ".n0",
    "n0..n1",
    "under_score",
    "end-",
    "x" * 64,
    ("a" * 60 + ".") * 4 + "a" * 14,  # 254 characters in labels of 60
    "n\u00f8de",
    "$(id)",
    "`id`",
    "n0,n1",
    "n0:4",
    "[/]",
]
GOOD = ["n0", "node-12", "0", "42", "c1.cluster.example.org", "A" * 63, ("a" * 62 + ".") * 4 + "a"]


@pytest.mark.parametrize("name", GOOD)
def test_host_names_pass(name):
    assert host_name_problem(name) is None


@pytest.mark.parametrize("name", BAD)
def test_anything_else_is_refused(name):
    assert host_name_problem(name)


def _predict(tmp_path: Path, *where: str, write: bool = True):
    out = [] if not write else ["--write-hostfile", str(tmp_path / "hosts")]
    out += ["--write-rankfile", str(tmp_path / "ranks")] if write else []
    return call(
        None, tmp_path / "s.sqlite", "predict", "alltoall", "--np", "2", *where, *out, "--json"
    )


def _yaml(tmp_path: Path, names: list[str]) -> Path:
    model = tmp_path / "m.yaml"
    doc = {"nodes": names, "sockets": 1, "cores": 2, "channels": {"nic": {"bandwidth": "1e9"}}}
    model.write_text(json.dumps(doc))  # JSON is YAML, and it escapes every character
    return model


@pytest.mark.parametrize("name", BAD)
def test_yaml_models_refuse_them_naming_the_file_and_the_name(tmp_path, name):
    model = _yaml(tmp_path, ["n1", name])
    outcome = _predict(tmp_path, "--cluster", str(model))
    assert_one_line_refusal(outcome)
    assert f"{model}: nodes[1]: node name " in outcome.err
    assert "is not a host name" in outcome.err or "characters" in outcome.err
    assert not (tmp_path / "hosts").exists() and not (tmp_path / "ranks").exists()


def test_yaml_numbers_as_names_are_host_names_a_negative_one_is_not(tmp_path):
    model = tmp_path / "m.yaml"
    model.write_text("nodes: [1, 2]\nsockets: 1\ncores: 1\nchannels: {nic: {bandwidth: 1e9}}\n")
    assert _predict(tmp_path, "--cluster", str(model)).code == 0
    assert (tmp_path / "hosts").read_text().split() == ["1", "slots=1", "2", "slots=1"]
    model.write_text("nodes: [1, -2]\nsockets: 1\ncores: 1\n")
    outcome = _predict(tmp_path, "--cluster", str(model), write=False)
    assert_one_line_refusal(outcome)
    assert "nodes[1]: node name '-2' is not a host name" in outcome.err


def test_good_names_reach_the_written_files_unchanged(tmp_path):
    model = _yaml(tmp_path, ["c1.rack-2.example.org", "c2.rack-2.example.org"])
    assert _predict(tmp_path, "--cluster", str(model)).code == 0
    hosts = (tmp_path / "hosts").read_text()
    assert hosts.startswith("c1.rack-2.example.org slots=")
    assert "=c1.rack-2.example.org slot=" in (tmp_path / "ranks").read_text()


HWLOC = """<?xml version="1.0"?><topology version="2.0">
<object type="Machine"><info name="HostName" value="{}"/>
  <object type="Package"><object type="Core"/><object type="Core"/></object>
</object></topology>"""


@pytest.mark.parametrize("name", ["a;rm -rf ~", "-oProxyCommand=x", "two words", "a&#10;b"])
@pytest.mark.parametrize("nodes", ["1", "2"])
def test_hwloc_host_names_are_checked_too(tmp_path, name, nodes):
    xml = tmp_path / "topo.xml"
    xml.write_text(HWLOC.format(name))
    outcome = _predict(tmp_path, "--hwloc", str(xml), "--hwloc-nodes", nodes)
    assert_one_line_refusal(outcome)
    assert f"{xml}" in outcome.err and "is not a host name" in outcome.err
    assert not (tmp_path / "hosts").exists()


def test_a_good_hwloc_host_name_passes(tmp_path):
    xml = tmp_path / "topo.xml"
    xml.write_text(HWLOC.format("head-1"))
    model = model_sources.model_from_hwloc_file(xml, nodes=2)
    assert model.node_names == ("head-10", "head-11")


def _scontrol(*names: str) -> str:
    return "".join(
        f"NodeName={n} Arch=x86_64 CoresPerSocket=2 Sockets=1 State=IDLE\n" for n in names
    )


@pytest.mark.parametrize("name", ["-oProxyCommand=x", "a;rm", "n`id`", "x" * 300])
def test_slurm_node_names_are_checked_too(tmp_path, name):
    with (
        mock.patch("commscope.measure.slurm.show_nodes", lambda: _scontrol("n0", name)),
        mock.patch("commscope.measure.slurm.show_topology", lambda: None),
    ):
        outcome = _predict(tmp_path, "--cluster", "slurm")
    assert_one_line_refusal(outcome)
    assert "scontrol show nodes: node name " in outcome.err
    assert not (tmp_path / "hosts").exists()


def test_good_slurm_node_names_pass(tmp_path):
    with (
        mock.patch("commscope.measure.slurm.show_nodes", lambda: _scontrol("n0", "n1")),
        mock.patch("commscope.measure.slurm.show_topology", lambda: None),
    ):
        outcome = _predict(tmp_path, "--cluster", "slurm", "--nic-rate", "10gbit")
    assert outcome.code == 0, outcome
    assert (tmp_path / "hosts").read_text().split()[::2] in (["n0"], ["n0", "n1"])
