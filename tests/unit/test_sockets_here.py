"""The socket count a matrix of sockets launches by, read from sysfs as the engine reads it."""

from __future__ import annotations

from commscope.measure.runner import sockets_here


def test_sockets_are_distinct_package_ids(tmp_path):
    for cpu, package in enumerate([0, 0, 1, 1, 3]):
        topo = tmp_path / f"cpu{cpu}" / "topology"
        topo.mkdir(parents=True)
        (topo / "physical_package_id").write_text(f"{package}\n")
    (tmp_path / "cpufreq").mkdir()  # not a cpu
    assert sockets_here(tmp_path) == 3


def test_unreadable_topology_counts_as_one_socket(tmp_path):
    assert sockets_here(tmp_path) == 1
