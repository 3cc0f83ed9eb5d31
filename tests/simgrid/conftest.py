"""Shared parts of the SimGrid tests: every test needs smpicc and smpirun."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from commscope.data.store import Store
from tests.conftest import CLI, need

GIGE = 125e6
LINK_S = 40e-6  # one NIC link of the homogeneous models below
ROUTE_S = 2 * LINK_S  # node to node on a flat model: the sender's NIC up, the receiver's down


@pytest.fixture(autouse=True)
def simgrid() -> None:
    need(
        shutil.which("smpicc") is not None and shutil.which("smpirun") is not None,
        "SimGrid's smpicc and smpirun (apt-get install libsimgrid-dev)",
    )


def model(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "cluster.yaml"
    path.write_text(text)
    return path


def flat_model(tmp_path: Path, nodes: int, cores: int = 1) -> Path:
    """A homogeneous flat model: every NIC link 40 us and 125 MB/s, memory links free.

    Between two nodes a message crosses the sender's NIC link up and the receiver's down
    (ROUTE_S, bandwidth GIGE: the fabric never limits); between two ranks of a node it
    crosses the node's memory link, which takes no time here.
    """
    return model(
        tmp_path,
        f"nodes: {nodes}\nsockets: 1\ncores: {cores}\nchannels: {{nic: {{bandwidth: 125MB/s,"
        f" latency: {LINK_S * 1e6:g}us}}, memory: {{bandwidth: 1e15, latency: 0us}}}}\n",
    )


def one_way(cli: CLI, run: int) -> dict[tuple[str, int], float]:
    with Store.open(cli.store) as store:
        return {(p.pair, p.bytes): p.median_s for p in store.points(run) if p.op == "pingpong"}
