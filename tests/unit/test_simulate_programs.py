"""The pure parts of `simulate app` and `simulate hpl`: core speed, HPL's input and output."""

from __future__ import annotations

import pytest

from commscope.errors import InputError
from commscope.measure import hpl
from commscope.predict.model_yaml import model_from_dict
from commscope.simulate import platform
from commscope.simulate.params import params_for, parse_speed

MODEL = {"nodes": 2, "sockets": 1, "cores": 2}
# HPL's result block as it prints it (a 2x2 solve of order 400).
OUTPUT = """
================================================================================
T/V                N    NB     P     Q               Time                 Gflops
--------------------------------------------------------------------------------
WR11C2R4         400    64     2     2               0.09              4.640e-01
--------------------------------------------------------------------------------
||Ax-b||_oo/(eps*(||A||_oo*||x||_oo+||b||_oo)*N)=        0.0085776 ...... PASSED
================================================================================
"""


def test_core_speed_is_read_written_back_and_sets_the_hosts_speed() -> None:
    model = model_from_dict(MODEL, "m.yaml")
    params = params_for(model, {"core_speed": "10.6Gf"}, "m.yaml")
    assert params.core_flops == pytest.approx(10.6e9)
    again = params_for(model, params.to_yaml(), "m.yaml")
    assert again.core_flops == pytest.approx(params.core_flops)
    assert params_for(model, {}, "m.yaml").core_flops is None
    xml = platform.platform_xml(model, params, params.core_flops or 1e9)
    assert xml.count('speed="1.06e+10f"') == 2


@pytest.mark.parametrize("text", ["fast", "10G", "0Gf", "-1Gf", "1e30f"])
def test_core_speed_that_is_not_a_flop_rate_is_refused_naming_the_field(text: str) -> None:
    assert parse_speed(text) is None
    with pytest.raises(InputError, match=r"m\.yaml: simulation\.core_speed: .* 12Gf"):
        params_for(model_from_dict(MODEL, "m.yaml"), {"core_speed": text}, "m.yaml")


def test_hpl_output_gives_the_solve_and_its_residual_check() -> None:
    r = hpl.parse_output(OUTPUT)
    assert r is not None
    assert (r.n, r.nb, r.p, r.q) == (400, 64, 2, 2)
    assert r.time_s == 0.09 and r.gflops == pytest.approx(0.464)
    assert r.residual == pytest.approx(0.0085776) and r.passed
    failed = hpl.parse_output(OUTPUT.replace("PASSED", "FAILED"))
    assert failed is not None and not failed.passed
    assert hpl.parse_output("HPL ERROR: cannot open file\n") is None


def test_hpl_input_holds_the_order_block_and_grid() -> None:
    lines = hpl.input_file(4000, 128, 6, 32).splitlines()
    assert [line.split()[0] for line in lines[4:12]] == [
        "1",
        "4000",
        "1",
        "128",
        "0",
        "1",
        "6",
        "32",
    ]


def test_grids_are_parsed_and_bad_ones_named() -> None:
    assert hpl.parse_grids("1x192,6x32,16X12") == [(1, 192), (6, 32), (16, 12)]
    for text in ("6x", "0x4", "2by2", "2x2,"):
        with pytest.raises(InputError, match=f"--grid {text}: give PxQ"):
            hpl.parse_grids(text)


def test_program_kind_shows_hpl_figures_and_keeps_its_json_key() -> None:
    from commscope.kinds import program

    data = {
        "kind": "hpl",
        "grid": "2x2",
        **hpl.parse_output(OUTPUT).to_json(),  # type: ignore[union-attr]
        "simulated_s": 0.1,
        "wall_s": 0.2,
        "netload": {"switch": {"messages": 57, "mean_message_bytes": 1126.0, "mbit_per_s": 5.05}},
    }
    assert program.to_json(None) == {"program": None}
    shown = dict(program.rows(data))
    assert shown["grid"] == "2x2" and shown["GFLOPS"] == "0.464"
    assert shown["residual"].endswith("PASSED") and shown["switch messages"] == "57"
    assert program.report(data)["kind"] == "hpl"
