"""Cluster model YAML files for predict and simulate, with hostile values."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from unittest import mock

import yaml
from hypothesis import given
from hypothesis import strategies as st

from commscope.limits import MAX_SIMULATED_NODES
from commscope.predict.model import host_name_problem
from tests.fuzz import harness
from tests.fuzz.strategies import DEEP_MODEL, HOSTILE_NODE_NAMES, RAW_MODELS, model_document

PREDICT_EXAMPLES = 250
SIMULATE_EXAMPLES = 150
_NUMBER_ATTR = re.compile(r'(bandwidth|latency)="([^"]*?)(Bps|s)"')


def _model_bytes(doc: dict, raw: str | None) -> bytes:
    if raw is not None:
        return raw.encode("utf-8")
    return yaml.safe_dump(doc, allow_unicode=True).encode("utf-8", "surrogateescape")


def _models(simulation: bool) -> st.SearchStrategy[bytes]:
    raw = st.one_of(
        st.none(),
        st.none(),
        st.none(),
        st.none(),
        st.none(),
        st.none(),
        st.none(),
        st.none(),
        st.none(),
        st.sampled_from(RAW_MODELS),
    )
    return st.builds(_model_bytes, model_document(simulation), raw)


@harness.fuzz_settings(PREDICT_EXAMPLES)
@given(data=_models(simulation=False), procs=st.sampled_from(["1", "2", "4", "8"]))
def test_predict_models_are_refused_in_one_line_or_priced_finite(workdir, data, procs):
    model = workdir / "cluster.yaml"
    model.write_bytes(data)
    outcome = harness.call(
        "predict --cluster",
        harness.fresh_store(workdir),
        "predict",
        "alltoall",
        "--np",
        procs,
        "--cluster",
        str(model),
        "--json",
    )
    if outcome.code != 0:
        harness.assert_one_line_refusal(outcome)
        return
    harness.accepted("predict --cluster")
    result = json.loads(outcome.out)
    for name in result["cluster"]["nodes"]:
        assert host_name_problem(name) is None, name
    for prediction in result["predictions"]:
        time_s = prediction["time_s"]
        assert time_s is None or (math.isfinite(time_s) and time_s >= 0), prediction
    for channel in result["cluster"]["channels"].values():
        for value in channel.values():
            assert value is None or math.isfinite(value), result["cluster"]


class _Simulated(Exception):
    """Raised where the simulated run would start: the request as it would be stored."""

    def __init__(self, request: dict) -> None:
        super().__init__("simulated")
        self.request = request


def _stop_before_smpirun(store, request, label, quiet):
    raise _Simulated(request.to_json())


@harness.fuzz_settings(SIMULATE_EXAMPLES)
@given(data=_models(simulation=True))
def test_simulate_models_are_refused_in_one_line_or_give_a_finite_platform(workdir, data):
    model = workdir / "cluster.yaml"
    model.write_bytes(data)
    with (
        mock.patch("commscope.cli.simulate_run.simulate_into", _stop_before_smpirun),
        mock.patch("commscope.simulate.smpi.version", lambda: "3.32"),
    ):
        try:
            outcome = harness.call(
                "simulate model",
                harness.fresh_store(workdir),
                "simulate",
                "run",
                "--cluster",
                str(model),
                "--quiet",
                "--",
                "p2p",
            )
        except _Simulated as reached:
            harness.accepted("simulate model")
            _check_platform(reached.request)
            return
    harness.assert_one_line_refusal(outcome)


def _check_platform(request: dict) -> None:
    sim = request["simulate"]
    assert len(sim["model"]["nodes"]) <= MAX_SIMULATED_NODES
    assert all(math.isfinite(x) for x in harness.numbers(sim["params"])), sim["params"]
    values = _NUMBER_ATTR.findall(sim["platform_xml"])
    assert values
    for attr, number, _unit in values:
        value = float(number)
        assert math.isfinite(value) and (value > 0 if attr == "bandwidth" else value >= 0), attr


def _predict_two(workdir: Path, model: Path, *more: str) -> harness.Outcome:
    """``predict alltoall --np 2 --cluster MODEL MORE...`` on a fresh store."""
    store = harness.fresh_store(workdir)
    argv = ("predict", "alltoall", "--np", "2", "--cluster", str(model), *more)
    return harness.call("predict --cluster", store, *argv)


def test_the_raw_models_are_all_refused(workdir):
    # The hand-written cases above come up only now and then in the generated ones.
    for text in [*RAW_MODELS, DEEP_MODEL]:
        model = workdir / "raw.yaml"
        model.write_text(text)
        harness.assert_one_line_refusal(_predict_two(workdir, model))
    model = Path(workdir) / "binary.yaml"
    model.write_bytes(b"nodes: [\xff\xfe]\n")
    harness.assert_one_line_refusal(_predict_two(workdir, model))


def test_the_hostile_node_names_are_all_refused(workdir):
    # Each would be written as it is into --write-hostfile and --write-rankfile.
    for name in HOSTILE_NODE_NAMES:
        model = workdir / "names.yaml"
        model.write_text(yaml.safe_dump({"nodes": ["n0", name], "sockets": 1, "cores": 2}))
        outcome = _predict_two(workdir, model, "--write-hostfile", str(workdir / "hosts"))
        harness.assert_one_line_refusal(outcome)
        assert "nodes[1]: node name" in outcome.err and not (workdir / "hosts").exists()
