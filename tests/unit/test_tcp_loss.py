"""TCP loss warnings read from the engine's per-namespace table."""

from __future__ import annotations

import json

import pytest

from commscope.analysis import tcp_loss
from commscope.data import record_parse


def end(*namespaces: dict) -> dict:
    return {"type": "end", "points": 1, "elapsed_s": 2.0, "tcp_loss": list(namespaces)}


def ns(nodes=("n0",), **counts: int) -> dict:
    return {"nodes": list(nodes), **counts}


def test_one_timeout_is_named_with_its_nodes_and_counts():
    record = end(ns(("csnode1",), out_segs=50, retrans_segs=1, timeouts=1), ns(("csnode2",)))
    assert tcp_loss.warnings([record]) == [
        "TCP on csnode1 sent 50 segments and resent 1 and timed out 1 time(s)"
        " (each stalls a connection >= 200 ms)"
    ]


@pytest.mark.parametrize(
    ("out", "resent", "warned"),
    [
        (100_000, 1000, False),  # 1 % exactly: not above the share
        (100_000, 1001, True),
        (999, 500, False),  # too few segments for a share to mean anything
        (1000, 11, True),
        (0, 0, False),
    ],
)
def test_resent_segments_warn_above_one_percent_of_at_least_a_thousand(out, resent, warned):
    record = end(ns(out_segs=out, retrans_segs=resent, timeouts=0))
    assert bool(tcp_loss.warnings([record])) is warned
    if warned:
        assert tcp_loss.warnings([record]) == [f"TCP on n0 sent {out} segments and resent {resent}"]


def test_unreadable_or_missing_counters_warn_of_nothing():
    assert tcp_loss.warnings([None, {"type": "end", "points": 0, "elapsed_s": 0.1}]) == []
    (only,) = tcp_loss.namespaces(end(ns(out_segs=10)))
    assert (only.retrans_segs, only.timeouts, only.resent_share) == (None, None, None)
    # Garbage in a stored record is not a count.
    (bad,) = tcp_loss.namespaces(end(ns(out_segs=-5, retrans_segs=True, timeouts=1.5)))
    assert (bad.out_segs, bad.retrans_segs, bad.timeouts) == (None, None, None)
    assert not bad.lossy


def test_a_timeout_without_readable_segment_counts_is_said_without_them():
    assert tcp_loss.warnings([end(ns(timeouts=2))]) == [
        "TCP on n0 timed out 2 time(s) (each stalls a connection >= 200 ms)"
    ]


def test_a_warning_repeated_by_several_launches_is_given_once():
    same = end(ns(out_segs=10, retrans_segs=1, timeouts=2))
    assert len(tcp_loss.warnings([same, same])) == 1


def test_the_schema_takes_the_engine_member_and_refuses_negative_counts():
    good = end(ns(("a", "b"), out_segs=3, retrans_segs=0, timeouts=0))
    record_parse.parse_record(json.dumps(good), "test")
    with pytest.raises(Exception, match="tcp_loss"):
        record_parse.parse_record(json.dumps(end(ns(out_segs=-1))), "test")


def cc(nodes, name) -> dict:
    return {"nodes": list(nodes), "congestion_control": name}


def test_congestion_controls_are_gathered_per_algorithm_with_their_nodes():
    first = end(cc(("csnode1",), "bbr"), cc(("csnode2",), "cubic"), cc(("csnode3",), "bbr"))
    again = end(cc(("csnode1",), "bbr"), cc(("csnode4",), "bbr"))
    found = tcp_loss.congestion_controls([first, None, again])
    assert found == {"bbr": ("csnode1", "csnode3", "csnode4"), "cubic": ("csnode2",)}
    assert tcp_loss.bbr_nodes([first, again]) == ("csnode1", "csnode3", "csnode4")
    assert tcp_loss.crossed_namespaces([first, again]) == 4


def test_bbr_on_one_node_alone_is_no_cross_node_concern():
    assert tcp_loss.bbr_nodes([end(cc(("here",), "bbr"))]) == ()
    assert tcp_loss.bbr_nodes([end(cc(("a",), "cubic"), cc(("b",), "cubic"))]) == ()


@pytest.mark.parametrize("name", ["BBR", "bbr; rm", "", 7, None, "x" * 17])
def test_a_congestion_control_that_is_no_kernel_name_is_not_recorded(name):
    (only,) = tcp_loss.namespaces(end(cc(("a",), name)))
    assert only.congestion_control == ""
    assert tcp_loss.congestion_controls([end(cc(("a",), name))]) == {}


def test_the_schema_takes_a_congestion_control_name_and_refuses_others():
    record_parse.parse_record(json.dumps(end(cc(("a",), "cubic"))), "test")
    with pytest.raises(Exception, match="tcp_loss"):
        record_parse.parse_record(json.dumps(end(cc(("a",), "cubic\nbbr"))), "test")


def test_every_node_is_said_only_when_every_namespace_recorded_one():
    both = end(cc(("a",), "cubic"), cc(("b",), "cubic"))
    assert tcp_loss.congestion_text([both]) == "cubic on every node"
    part = end(cc(("a",), "cubic"), ns(("b",), out_segs=5))  # b's engine recorded none
    assert tcp_loss.congestion_text([part]) == "cubic on a"
    assert tcp_loss.congestion_text([end(cc(("a",), "cubic"))]) == ""  # one node: no line


def limit(nodes, nbytes) -> dict:
    return {"nodes": list(nodes), "tcp_limit_output_bytes": nbytes}


def test_socket_queue_limits_are_gathered_per_size_with_their_nodes():
    first = end(limit(("a",), 32768), limit(("b",), 4194304), limit(("c",), 32768))
    found = tcp_loss.socket_queue_limits([first, None, end(limit(("d",), 32768))])
    assert found == {32768: ("a", "c", "d"), 4194304: ("b",)}
    assert tcp_loss.socket_queue_text([first]) == "32 KiB on a, c; 4 MiB on b"
    same = end(limit(("a",), 32768), limit(("b",), 32768))
    assert tcp_loss.socket_queue_text([same]) == "32 KiB on every node"
    # A size that is no whole KiB reads in bytes, not rounded into another limit.
    odd = end(limit(("a",), 5000), limit(("b",), 5000))
    assert tcp_loss.socket_queue_text([odd]) == "5000 B on every node"


def test_a_socket_queue_limit_is_said_only_across_nodes_and_only_when_recorded():
    assert tcp_loss.socket_queue_text([end(limit(("a",), 32768))]) == ""  # one node
    # Records written before the limit was read carry none: nothing is said, nothing guessed.
    older = end(cc(("a",), "cubic"), cc(("b",), "cubic"))
    assert tcp_loss.socket_queue_limits([older]) == {}
    assert tcp_loss.socket_queue_text([older]) == ""
    part = end(limit(("a",), 32768), cc(("b",), "cubic"))
    assert tcp_loss.socket_queue_text([part]) == "32 KiB on a"


@pytest.mark.parametrize("value", [-1, True, 1.5, "32768", None])
def test_a_socket_queue_limit_that_is_no_byte_count_is_not_recorded(value):
    (only,) = tcp_loss.namespaces(end(limit(("a",), value)))
    assert only.tcp_limit_output_bytes is None


def test_the_schema_takes_a_socket_queue_limit_and_refuses_a_negative_one():
    record_parse.parse_record(json.dumps(end(limit(("a",), 32768))), "test")
    with pytest.raises(Exception, match="tcp_loss"):
        record_parse.parse_record(json.dumps(end(limit(("a",), -1))), "test")


def restart(nodes, value, cc_name="cubic") -> dict:
    return {"nodes": list(nodes), "congestion_control": cc_name, "tcp_slow_start_after_idle": value}


def test_restart_after_idle_is_gathered_per_value_and_said_across_nodes():
    mixed = end(restart(("a",), 1), restart(("b",), 0), restart(("c",), 1))
    assert tcp_loss.idle_restarts([mixed, None]) == {1: ("a", "c"), 0: ("b",)}
    assert tcp_loss.idle_restart_text([mixed]) == "1 on a, c; 0 on b"
    same = end(restart(("a",), 1), restart(("b",), 1))
    assert tcp_loss.idle_restart_text([same]) == "1 on every node"
    assert tcp_loss.idle_restart_text([end(restart(("a",), 1))]) == ""  # one node: no line


def test_an_idle_connection_restarts_only_where_the_window_is_tcps_to_set():
    # The kernel skips the restart under a congestion control that sets the rate itself (BBR),
    # and where the setting is off; an unrecorded setting or algorithm claims nothing.
    run = end(
        restart(("cubic-on",), 1),
        restart(("cubic-off",), 0),
        restart(("bbr-on",), 1, "bbr"),
        restart(("reno-on",), 1, "reno"),
        restart(("unknown-cc",), 1, ""),
        cc(("older",), "cubic"),
    )
    assert tcp_loss.idle_restart_nodes([run]) == ("cubic-on", "reno-on")
    assert tcp_loss.idle_restart_nodes([end(restart(("a",), 1))]) == ()  # one node


@pytest.mark.parametrize("value", [-1, True, "1", None])
def test_a_restart_setting_that_is_no_count_is_not_recorded(value):
    (only,) = tcp_loss.namespaces(end(restart(("a",), value)))
    assert only.tcp_slow_start_after_idle is None and not only.restarts_after_idle


def test_the_schema_takes_a_restart_setting_and_refuses_a_negative_one():
    record_parse.parse_record(json.dumps(end(restart(("a",), 1))), "test")
    with pytest.raises(Exception, match="tcp_loss"):
        record_parse.parse_record(json.dumps(end(restart(("a",), -1))), "test")


def test_runs_under_other_tcp_settings_are_told_apart_setting_by_setting():
    tables = end(
        {**restart(("a",), 1), "tcp_limit_output_bytes": 32768},
        {**restart(("b",), 1), "tcp_limit_output_bytes": 32768},
    )
    same = end(
        {**restart(("a",), 1), "tcp_limit_output_bytes": 32768},
        {**restart(("c",), 1), "tcp_limit_output_bytes": 32768},
    )
    assert tcp_loss.setting_differences([tables], [same]) == []  # other nodes, same settings
    other = end(
        {**restart(("a",), 0, "bbr"), "tcp_limit_output_bytes": 32768},
        {**restart(("b",), 1), "tcp_limit_output_bytes": 32768},
    )
    assert tcp_loss.setting_differences([tables], [other]) == [
        "congestion control cubic against bbr/cubic",
        "slow start after idle 1 against 0/1",
    ]
    # A setting one run did not record (an older engine) is no difference.
    older = end(cc(("a",), "cubic"), cc(("b",), "cubic"))
    assert tcp_loss.setting_differences([tables], [older]) == []
    assert tcp_loss.setting_differences([older], [other]) == [
        "congestion control cubic against bbr/cubic"
    ]
