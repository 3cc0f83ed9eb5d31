"""Virtual cluster without root: input validation, state format, launch arguments, agents."""

from __future__ import annotations

import argparse
import os
import subprocess

import pytest

from commscope.cli import OneLineParser, vcluster_cmd
from commscope.errors import ClusterError, UsageError
from commscope.measure import vcluster
from commscope.measure.vcluster import launch, model, system

AGENT_NAMES = ("ompi-rsh-agent", "hydra-ssh-agent", "vcluster-node-exec")


@pytest.mark.parametrize(
    ("text", "bps"),
    [
        ("100mbit", 100_000_000),
        ("1gbit", 1_000_000_000),
        ("10gbit", 10_000_000_000),
        ("1.5gbit", 1_500_000_000),
        ("1Gbit", 1_000_000_000),
        ("125mbps", 1_000_000_000),
        ("1000000bit", 1_000_000),
        ("1mibit", 1_048_576),
        (" 1gbit ", 1_000_000_000),
    ],
)
def test_rates_in_tc_syntax_are_read(text, bps):
    assert vcluster.parse_rate(text) == bps


@pytest.mark.parametrize(
    "text", ["fast", "1gb", "1 gbit", "", "gbit", "-1gbit", "1,5gbit", "0mbit", "999kbit", "2tbit"]
)
def test_bad_rates_are_refused_in_one_line(text):
    with pytest.raises(ClusterError) as err:
        vcluster.parse_rate(text)
    assert "\n" not in err.value.one_line()
    assert repr(text) in err.value.one_line()


def test_burst_is_128_us_of_sending_with_a_floor():
    assert vcluster.burst_bytes(1_000_000_000) == 16_000
    assert vcluster.burst_bytes(10_000_000_000) == 160_000
    assert vcluster.burst_bytes(100_000_000) == vcluster.MIN_BURST_BYTES


def test_queue_is_10_ms_of_sending_but_at_least_256_kib():
    assert vcluster.queue_bytes(10_000_000_000) == 12_500_000
    assert vcluster.queue_bytes(1_000_000_000) == 1_250_000
    assert vcluster.queue_bytes(50_000_000) == vcluster.MIN_QUEUE_BYTES == 256 << 10
    assert vcluster.queue_bytes(200_000_000) == 256 << 10  # above 10 ms at 200 mbit: 250 kB


def test_plan_names_and_numbers_nodes_after_the_bridge():
    state = vcluster.plan(3, "1GBit", "10.77.0.0/24")
    assert [n.name for n in state.nodes] == ["csnode1", "csnode2", "csnode3"]
    assert [n.address for n in state.nodes] == ["10.77.0.2", "10.77.0.3", "10.77.0.4"]
    assert [n.veth for n in state.nodes] == ["csveth1", "csveth2", "csveth3"]
    assert state.bridge == "csbr0" and state.bridge_address == "10.77.0.1"
    assert state.rate == "1gbit" and state.burst_bytes == 16_000
    assert state.prefixlen == 24 and not state.complete


def test_plan_accepts_larger_subnets_and_the_extremes_of_node_counts():
    assert len(vcluster.plan(1).nodes) == 1
    big = vcluster.plan(64, subnet="10.80.0.0/16")
    assert big.nodes[-1].address == "10.80.0.65" and big.prefixlen == 16


@pytest.mark.parametrize("nodes", [0, -1, 65, 1000, True, "2", 2.0])
def test_bad_node_counts_are_refused(nodes):
    with pytest.raises(ClusterError, match="node count"):
        vcluster.plan(nodes)


@pytest.mark.parametrize(
    "subnet", ["10.77.0.1/24", "10.77.0.0/25", "10.77.0.0/30", "fe80::/64", "nonsense", ""]
)
def test_bad_subnets_are_refused_in_one_line(subnet):
    with pytest.raises(ClusterError, match="subnet") as err:
        vcluster.plan(2, subnet=subnet)
    assert "\n" not in err.value.one_line()


def test_state_survives_a_json_round_trip_without_its_health():
    state = vcluster.plan(2)
    sick = vcluster.ClusterState(**{**state.__dict__, "complete": True, "problems": ("x",)})
    data = sick.to_json()
    assert "problems" not in data and data["format"] == vcluster.STATE_FORMAT
    back = vcluster.ClusterState.from_json(data)
    assert back == sick and back.problems == () and back.healthy


def test_congestion_control_is_part_of_the_layout_and_of_the_state_file():
    cubic = vcluster.plan(2, tcp_cc="cubic")
    assert cubic.tcp_cc == "cubic" and vcluster.plan(2).tcp_cc == ""
    assert not model.same_layout(cubic, vcluster.plan(2))
    widened = vcluster.ClusterState(**{**cubic.__dict__, "restore_allowed_cc": "reno bbr"})
    assert vcluster.ClusterState.from_json(widened.to_json()) == widened
    # A state file written before the option existed reads as the host's default.
    old = vcluster.plan(2).to_json()
    del old["tcp_cc"], old["restore_allowed_cc"]
    assert vcluster.ClusterState.from_json(old) == vcluster.plan(2)


def test_socket_queue_limit_is_32_kib_by_default_and_part_of_the_layout():
    default = vcluster.plan(2)
    assert default.tcp_limit_output == vcluster.MIN_QUEUE_BYTES // 8 == 32768
    kernel = vcluster.plan(2, tcp_limit_output=0)
    assert kernel.tcp_limit_output == 0 and not model.same_layout(default, kernel)
    wide = vcluster.plan(2, tcp_limit_output=1 << 20)
    assert vcluster.ClusterState.from_json(wide.to_json()) == wide
    # A state file written before the limit existed left the kernel's default in every node.
    old = default.to_json()
    del old["tcp_limit_output"]
    assert vcluster.ClusterState.from_json(old) == kernel


@pytest.mark.parametrize("limit", [1, 4095, (64 << 20) + 1, -32768])
def test_socket_queue_limits_out_of_range_are_refused_in_one_line(limit):
    with pytest.raises(ClusterError, match="tcp-limit-output") as err:
        vcluster.plan(2, tcp_limit_output=limit)
    assert "\n" not in err.value.one_line()


@pytest.mark.parametrize(
    ("text", "limit"), [("32K", 32768), ("32768", 32768), ("1MiB", 1 << 20), ("Kernel", 0)]
)
def test_cli_reads_the_socket_queue_limit_as_a_size_or_kernel(text, limit):
    assert _cli_args("up", "--nodes", "2", "--tcp-limit-output", text).tcp_limit_output == limit


@pytest.mark.parametrize(
    ("option", "text"),
    [("--tcp-limit-output", t) for t in ("0", "0K", "lots", "", "32K;reboot")]
    + [("--tcp-slow-start-after-idle", t) for t in ("2", "on", "", "1;reboot")],
)
def test_cli_refuses_bad_tcp_settings_while_parsing(option, text, capsys):
    with pytest.raises(SystemExit) as done:
        _cli_args("up", "--nodes", "2", option, text)
    assert done.value.code == 2
    err = capsys.readouterr().err.strip()
    assert option in err and "kernel" in err and "\n" not in err


def test_slow_start_after_idle_is_left_to_the_kernel_unless_set_and_part_of_the_layout():
    default = vcluster.plan(2)
    assert default.slow_start_after_idle == -1
    off = vcluster.plan(2, slow_start_after_idle=0)
    assert off.slow_start_after_idle == 0 and not model.same_layout(default, off)
    assert vcluster.ClusterState.from_json(off.to_json()) == off
    # A state file written before the setting existed left the kernel's in every node.
    old = off.to_json()
    del old["slow_start_after_idle"]
    assert vcluster.ClusterState.from_json(old) == default
    with pytest.raises(ClusterError, match="tcp-slow-start-after-idle") as err:
        vcluster.plan(2, slow_start_after_idle=2)
    assert "\n" not in err.value.one_line()


@pytest.mark.parametrize(("text", "value"), [("0", 0), ("1", 1), ("Kernel", -1)])
def test_cli_reads_slow_start_after_idle_as_0_1_or_kernel(text, value):
    args = _cli_args("up", "--nodes", "2", "--tcp-slow-start-after-idle", text)
    assert args.tcp_slow_start_after_idle == value


@pytest.mark.parametrize("name", ["Cubic", "cubic bbr", "a" * 17, "../x", "1cc"])
def test_congestion_control_names_are_checked_before_the_machine_is_read(name):
    with pytest.raises(ClusterError, match="not a congestion control name") as err:
        vcluster.plan(2, tcp_cc=name)
    assert "\n" not in err.value.one_line()


def _drop_rate(data):
    del data["rate"]


@pytest.mark.parametrize(
    "spoil",
    [lambda d: d.update(format=99), lambda d: d.update(nodes=None), _drop_rate],
)
def test_foreign_state_is_refused_with_the_fix(spoil):
    data = vcluster.plan(2).to_json()
    spoil(data)
    with pytest.raises(ClusterError, match="vcluster down"):
        vcluster.ClusterState.from_json(data)


def _mca(args: list[str]) -> dict[str, str]:
    pairs = [(args[i + 1], args[i + 2]) for i, a in enumerate(args) if a == "--mca"]
    keys = [key for key, _ in pairs]
    assert len(keys) == len(set(keys)), "Open MPI refuses an MCA key given twice"
    return dict(pairs)


def test_openmpi_args_cross_nodes_over_the_subnet_only():
    state = vcluster.plan(3, subnet="10.78.0.0/24")
    args, env = vcluster.openmpi_args(state, 2)
    assert args[args.index("-H") + 1] == "csnode1:2,csnode2:2,csnode3:2"
    mca = _mca(args)
    assert mca["oob_tcp_if_include"] == mca["btl_tcp_if_include"] == "10.78.0.0/24"
    assert mca["btl"] == "self,vader,tcp" and mca["pml"] == "ob1"
    assert mca["mpi_yield_when_idle"] == "1"
    assert mca["plm_rsh_agent"].endswith("/ompi-rsh-agent")
    assert os.access(mca["plm_rsh_agent"], os.X_OK)
    assert "--oversubscribe" in args
    assert args[args.index("--bind-to") + 1] == "none"
    assert env == {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}


def test_mpich_args_launch_through_the_agent_and_call_back_to_the_bridge():
    state = vcluster.plan(2, subnet="10.79.0.0/16")
    args, env = vcluster.mpich_args(state, 1)
    assert args[args.index("-launcher") + 1] == "ssh"
    agent = args[args.index("-launcher-exec") + 1]
    assert agent.endswith("/hydra-ssh-agent") and os.access(agent, os.X_OK)
    assert args[args.index("-hosts") + 1] == "csnode1:1,csnode2:1"
    assert args[args.index("-localhost") + 1] == "10.79.0.1"
    assert env == {"UCX_TLS": "sm,tcp,self"}


@pytest.mark.parametrize("builder", [vcluster.openmpi_args, vcluster.mpich_args])
@pytest.mark.parametrize("ranks", [0, -2, True])
def test_bad_ranks_per_node_are_refused(builder, ranks):
    with pytest.raises(ClusterError, match="ranks per node"):
        builder(vcluster.plan(2), ranks)


def test_a_missing_agent_names_the_fix(monkeypatch, tmp_path):
    monkeypatch.setattr(launch, "AGENTS_DIR", tmp_path)  # where agent_path reads it
    with pytest.raises(ClusterError, match="chmod"):
        vcluster.openmpi_args(vcluster.plan(2), 1)


@pytest.mark.parametrize("name", AGENT_NAMES)
def test_agents_are_shipped_executable_and_fail_with_usage(name):
    path = vcluster.AGENTS_DIR / name
    assert os.access(path, os.X_OK), f"{path} lost its executable bit"
    out = subprocess.run([str(path)], capture_output=True, text=True, timeout=10)
    assert out.returncode == 2 and "usage:" in out.stderr
    out = subprocess.run([str(path), "-x", "-p", "22"], capture_output=True, text=True, timeout=10)
    assert out.returncode == 2 and "usage:" in out.stderr


@pytest.mark.parametrize(
    ("argv", "code", "text"),
    [
        (["csnode1; reboot", "true"], 2, "bad node name"),
        (["-o", "BatchMode=yes", "nosuchnode4242", "true"], 255, "no vcluster node"),
        (["-x", "root@nosuchnode4242", "echo", "hi"], 255, "no vcluster node"),
    ],
)
def test_agents_refuse_bad_and_unknown_nodes(argv, code, text):
    agent = vcluster.AGENTS_DIR / "ompi-rsh-agent"
    out = subprocess.run([str(agent), *argv], capture_output=True, text=True, timeout=10)
    assert out.returncode == code and text in out.stderr


def test_up_and_down_need_root_and_say_so(monkeypatch):
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    for action in (lambda: vcluster.up(2), vcluster.down):
        with pytest.raises(ClusterError, match="needs root") as err:
            action()
        assert "\n" not in err.value.one_line()


def test_a_missing_tool_is_named(monkeypatch):
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    monkeypatch.setattr(system, "TOOLS", ("ip", "no-such-tool-4242"))
    with pytest.raises(ClusterError, match="no-such-tool-4242"):
        vcluster.up(2)


def _cli_args(*argv: str) -> argparse.Namespace:
    parser = OneLineParser(prog="commscope vcluster")
    vcluster_cmd.setup_parser(parser)
    return parser.parse_args(argv)


@pytest.mark.parametrize(
    "argv",
    [
        ["up", "--nodes", "2", "--rate", "fast"],
        ["up", "--nodes", "2", "--subnet", "10.0.0.0/28"],
        ["up", "--nodes", "2", "--tcp-cc", "cubic;reboot"],
        ["up", "--nodes", "2", "--tcp-cc", "no_such_cc_4242"],
    ],
)
def test_cli_bad_input_is_a_usage_error_before_anything_is_built(argv, monkeypatch):
    monkeypatch.setattr(vcluster, "up", lambda *a, **k: pytest.fail("up() must not run"))
    with pytest.raises(UsageError):
        vcluster_cmd.run(_cli_args(*argv))


@pytest.mark.parametrize("text", ["100", "4095", "65MiB"])
def test_cli_socket_queue_limit_out_of_range_names_the_range(text, monkeypatch):
    monkeypatch.setattr(vcluster, "up", lambda *a, **k: pytest.fail("up() must not run"))
    with pytest.raises(UsageError) as err:
        vcluster_cmd.run(_cli_args("up", "--nodes", "2", "--tcp-limit-output", text))
    message = err.value.one_line()
    assert "--tcp-limit-output" in message and "4096 .. 67108864" in message
    assert "kernel" in message and "\n" not in message


@pytest.mark.parametrize("nodes", ["0", "65", "2\u00b2", "9" * 5000])
def test_cli_node_counts_out_of_bounds_are_refused_while_parsing(nodes, monkeypatch):
    monkeypatch.setattr(vcluster, "up", lambda *a, **k: pytest.fail("up() must not run"))
    with pytest.raises(SystemExit) as done:
        _cli_args("up", "--nodes", nodes)
    assert done.value.code == 2


def test_cli_declares_its_actions():
    assert vcluster_cmd.NAME == "vcluster"
    args = _cli_args("up", "--nodes", "3")
    assert (args.nodes, args.rate, args.subnet) == (3, "1gbit", "10.77.0.0/24")
    assert args.tcp_limit_output == vcluster.DEFAULT_TCP_LIMIT_OUTPUT
    assert _cli_args("status", "--json").json is True
    assert _cli_args("down").action == "down"


def test_user_mca_parameters_join_and_override_the_vclusters_own_once_each():
    state = vcluster.plan(2)
    args, _ = vcluster.openmpi_args(state, 1, {"btl_tcp_flags": "send,inplace", "btl": "self,tcp"})
    mca = _mca(args)  # also checks that no key is given twice
    assert mca["btl_tcp_flags"] == "send,inplace"
    assert mca["btl"] == "self,tcp"
    assert mca["pml"] == "ob1"


@pytest.mark.parametrize("rate", ["fast", "0mbit", "2tbit"])
def test_vcluster_set_refuses_a_bad_rate_before_touching_anything(cli, rate):
    out = cli("vcluster", "set", "csnode1", "--rate", rate)
    assert out.returncode == 2 and len(out.stderr.strip().splitlines()) == 1
    assert "rate" in out.stderr and "Traceback" not in out.stderr
