"""The stored network load as the report shows it: split into the measured operation and
commscope's own traffic, or all traffic with the reason it is not split (runs stored before
the split). The parsing of real traces is in tests/simgrid/test_netload.py."""

from __future__ import annotations

from typing import Any

from commscope.report.html import environment
from commscope.simulate import netload


def link(name: str, nbytes: int, messages: int) -> dict[str, Any]:
    return netload.LinkLoad(name, nbytes, messages).to_json(0.5)


def render(load: dict[str, Any]) -> str:
    row = {
        "name": "run 7",
        "model": "m",
        "placement": "2x2",
        "np": 4,
        "nic": {"bandwidth_Bps": 125e6, "latency_s": 1e-5},
        "memory": {"bandwidth_Bps": 1e10, "latency_s": 1e-7},
        "switch_latency_s": 0.0,
        "factors": "neutral",
        "simgrid": "3.32",
        "wall_s": 1.0,
        "netload": netload.stored_view(load),
    }
    template = environment().get_template("simulation_section.html.j2")
    return template.render(simulation={"runs": [row], "sweeps": []})


def test_link_load_gives_mean_size_and_average_rate() -> None:
    x = link("node0-nic-up", 524288, 8)
    assert x["mean_message_bytes"] == 65536 and x["mbit_per_s"] == 524288 * 8 / 0.5 / 1e6
    assert link("idle", 0, 0)["mean_message_bytes"] is None


def test_split_load_has_a_table_per_phase_with_names_escaped() -> None:
    load = {
        "duration_s": 0.5,
        "split": True,
        "unsplit": None,
        "benchmark": [link("<b>node0-nic-up", 524288, 8)],
        "sync": [link("<b>node0-nic-up", 6688, 826)],
        "all": [link("<b>node0-nic-up", 530976, 834)],
    }
    assert netload.stored_view(load) is load
    html = render(load)
    bench = html.split('class="sim-netload"')[1].split("</table>")[0]
    sync = html.split('class="sim-netload-sync"')[1].split("</table>")[0]
    assert "<td>8</td>" in bench and "65536 B" in bench
    assert "<td>826</td>" in sync and "<td>834</td>" not in html
    assert "&lt;b&gt;node0-nic-up" in bench and "<b>node0" not in html


def test_load_stored_before_the_split_is_all_traffic_with_the_reason() -> None:
    legacy = {"duration_s": 0.5, "links": [link("node0-nic-up", 530976, 834)]}
    view = netload.stored_view(legacy)
    assert view["split"] is False and view["benchmark"] == [] and view["sync"] == []
    assert view["all"] == legacy["links"]
    html = render(legacy)
    assert "Not split into the measured operation" in html and view["unsplit"] in html
    assert 'class="sim-netload"' not in html and 'class="sim-netload-sync"' not in html
    assert "<td>834</td>" in html.split('class="sim-netload-all"')[1]
