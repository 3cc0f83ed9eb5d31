"""OSU, IMB and NetPIPE outputs with damaged numbers and lines, imported through the CLI."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from tests.fuzz import harness
from tests.fuzz.strategies import mutated_lines

FIXTURES = Path(__file__).parents[1] / "unit" / "fixtures"
SOURCES = {
    "osu": [
        "osu_latency.txt",
        "osu_bw.txt",
        "osu_bibw.txt",
        "osu_allreduce.txt",
        "osu_barrier.txt",
        "osu_put_latency_fence.txt",
        "osu_get_bw_pscw.txt",
        "osu_mbw_mr.txt",
    ],
    "imb": ["imb_mpi1.txt", "imb_rma.txt"],
    "netpipe": ["netpipe.out"],
}
EXAMPLES = {"osu": 450, "imb": 350, "netpipe": 250}


def _lines(name: str) -> list[str]:
    return (FIXTURES / name).read_text().splitlines()


def _import_one(fmt: str, folder: Path, data: bytes) -> None:
    store, src = harness.fresh_store(folder), folder / f"input.{fmt}"
    src.write_bytes(data)
    outcome = harness.call(
        f"import {fmt}", store, "import", fmt, str(src), "--label", "fuzz", "--nranks", "4"
    )
    after = harness.run_ids(store)
    if outcome.code == 0:
        assert outcome.err == "" and after == [1], outcome
        harness.assert_sane_run(store, 1)
        harness.accepted(f"import {fmt}")
    else:
        harness.assert_one_line_refusal(outcome)
        assert after == [], outcome


def _damaged(fmt: str) -> st.SearchStrategy[bytes]:
    return st.sampled_from(SOURCES[fmt]).flatmap(lambda name: mutated_lines(_lines(name)))


@harness.fuzz_settings(EXAMPLES["osu"])
@given(data=_damaged("osu"))
def test_damaged_osu_output_is_refused_in_one_line_or_stored_sane(workdir, data):
    _import_one("osu", workdir, data)


@harness.fuzz_settings(EXAMPLES["imb"])
@given(data=_damaged("imb"))
def test_damaged_imb_output_is_refused_in_one_line_or_stored_sane(workdir, data):
    _import_one("imb", workdir, data)


@harness.fuzz_settings(EXAMPLES["netpipe"])
@given(data=_damaged("netpipe"))
def test_damaged_netpipe_output_is_refused_in_one_line_or_stored_sane(workdir, data):
    _import_one("netpipe", workdir, data)
