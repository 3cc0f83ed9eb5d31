"""Steps in time are named as an MPI's eager limit only when a recorded limit lies in them."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from commscope import kinds
from commscope.analysis import findings, p2p
from commscope.data.mpi_config import EagerLimit, ProtocolLimits, naming_limits
from commscope.data.run_data import read_run
from commscope.data.store import Store
from commscope.kinds import p2p as p2p_kind
from commscope.report import html
from tests import synthetic_runs
from tests.unit.test_analysis import SIZES, hockney, pingpong_points

HEADER = 64  # bytes the synthetic MPI counts into its limit


def eager_then_rendezvous(limit: int) -> np.ndarray:
    # Eager while the message and its header fit the limit; a slower start above it.
    return np.where(SIZES + HEADER <= limit, hockney(SIZES, 1e-6, 2e9), hockney(SIZES, 6e-6, 3e9))


def figures(pair: str, limit: int) -> list[p2p.PairFigures]:
    return p2p.pair_figures(pingpong_points(pair, eager_then_rendezvous(limit)))


def vader(nbytes: int, scope: str = "intra-node") -> EagerLimit:
    return EagerLimit("Open MPI", "vader", scope, "btl_vader_eager_limit", nbytes, "default")


def step_sentences(text: list[str]) -> list[str]:
    return [s for s in text if "jumps by" in s or "falls by" in s]


@pytest.mark.parametrize("limit", [4096, 8192, 12288, 16384])
def test_a_step_containing_the_recorded_limit_is_named_after_it(limit):
    figs = figures("intra-socket", limit)
    (sentence,) = step_sentences(
        findings.findings(figs, ProtocolLimits("Open MPI", (vader(limit),)))
    )
    assert sentence.endswith(f": the Open MPI vader eager limit ({limit} B)."), sentence
    (th,) = figs[0].curve("pingpong").thresholds
    assert th.below_bytes < limit <= th.above_bytes + HEADER  # the step really holds it


def test_a_step_away_from_every_recorded_limit_is_a_step_at_its_sizes():
    figs = figures("intra-socket", 8192)
    recorded = ProtocolLimits("Open MPI", (vader(32768), vader(4096)))
    (sentence,) = step_sentences(findings.findings(figs, recorded))
    assert ": a step at 8 KiB (between 6147 B and 8189 B): time jumps by" in sentence, sentence
    assert "eager" not in sentence and "rendezvous" not in sentence and "protocol" not in sentence


def test_unknown_limits_give_a_step_at_and_no_protocol_claim():
    figs = figures("intra-socket", 8192)
    for limits in (None, ProtocolLimits("MPICH", unknown=("eager limits unknown: UCX decides",))):
        (sentence,) = step_sentences(findings.findings(figs, limits))
        assert "a step at" in sentence and "eager" not in sentence, sentence


def test_a_limit_names_steps_only_on_its_own_path():
    # The shared-memory limit says nothing about the network pair, and the reverse.
    inter = ProtocolLimits("Open MPI", (vader(8192),))
    (sentence,) = step_sentences(findings.findings(figures("inter-node", 8192), inter))
    assert "a step at" in sentence, sentence
    tcp = EagerLimit("Open MPI", "tcp", "inter-node", "btl_tcp_eager_limit", 8192, "default")
    (named,) = step_sentences(
        findings.findings(figures("inter-node", 8192), ProtocolLimits("Open MPI", (tcp,)))
    )
    assert named.endswith("the Open MPI tcp eager limit (8192 B)."), named
    (unplaced,) = step_sentences(
        findings.findings(figures("unknown", 8192), ProtocolLimits("Open MPI", (tcp, vader(8192))))
    )
    assert "a step at" in unplaced, unplaced


def test_runs_without_mpi_never_name_a_protocol():
    recorded = ProtocolLimits("Open MPI", (vader(4096),))
    assert naming_limits(None, recorded) is None  # a TCP run: sockets, no MPI
    assert naming_limits("openmpi", recorded) is recorded


def test_limits_round_trip_through_the_store_and_report_and_terminal_agree(tmp_path):
    path = tmp_path / "s.sqlite"
    recorded = ProtocolLimits("Open MPI", (vader(4096),), {"btl_vader_eager_limit": "4096"})
    run_id = synthetic_runs.store_run(path, "a", with_colls=False, limits=recorded)
    with Store.open(path) as store:
        run = read_run(store, run_id)
    assert run.protocol_limits == recorded
    report = html.run_context(run)["findings"]
    (summary,) = [s for kind, s in kinds.summaries(run, kinds.View()) if kind is p2p_kind.KIND]
    shown = p2p_kind.thresholds(summary)
    assert shown and set(shown) <= set(report)
    assert any("the Open MPI vader eager limit (4096 B)" in s for s in shown), shown
    # The same run stored as a TCP run (no MPI): the same step, no protocol named anywhere.
    tcp = dataclasses.replace(run, info=dataclasses.replace(run.info, kind="tcp", mpi=None))
    assert not any("eager" in s for s in html.run_context(tcp)["findings"])
    (tcp_summary,) = [s for kind, s in kinds.summaries(tcp, kinds.View()) if kind is p2p_kind.KIND]
    assert not any("eager" in s for s in p2p_kind.thresholds(tcp_summary))


def test_stored_limits_of_an_unknown_shape_read_as_unknown():
    assert ProtocolLimits.from_json(None) is None
    assert ProtocolLimits.from_json({"limits": []}) is None
    assert ProtocolLimits.from_json({"mpi": "MPICH", "limits": [{"bytes": 1}]}) is None
