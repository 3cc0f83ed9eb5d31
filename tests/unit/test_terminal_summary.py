"""The terminal's summary: one screen by default, every table with --full, durations readable.

`show` and `run` print a run through ``cli.render.summary``; these tests feed it a run shaped
like a default `commscope run` on a busy machine (p2p on the NetPIPE schedule with interrupted
samples, ten collectives at seven sizes with flagged points).
"""

from __future__ import annotations

import dataclasses
import io
import re
from pathlib import Path

import numpy as np
import pytest

from commscope import kinds
from commscope.analysis import coll as coll_analysis
from commscope.analysis import matrix as matrix_analysis
from commscope.analysis import rma as rma_analysis
from commscope.analysis.start_skew import SkewEffect
from commscope.cli import common, render
from commscope.data.record_parse import record_from_dict
from commscope.data.records import Coll, Point
from commscope.data.run_data import read_run
from commscope.data.store import Store
from commscope.units import time_span_text, time_text
from tests import synthetic_runs

SCREEN = 50  # lines a default `run` or `show` may print
COLL_OPS = ("allgather", "allreduce", "alltoall", "bcast", "gather", "reduce", "scatter")
COLL_OPS += ("iallreduce", "ibcast")
# A duration that reads as nothing: "0.00 ms", "0.0 us", "0 ns" (a real zero reads "0 s").
ZERO_LOOKING = re.compile(r"(?<![\d.])0(\.0+)? ?(ms|us|ns)\b")


def sample_colls() -> list[Coll]:
    rng = np.random.default_rng(3)
    out = [_coll("barrier", 0, rng, late=False)]
    for i, op in enumerate(COLL_OPS):
        for j, size in enumerate((8, 64, 512, 4096, 32768, 262144, 1048576)):
            out.append(_coll(op, size, rng, late=(i + j) % 5 == 0))
    return out


def _coll(op: str, size: int, rng: np.random.Generator, late: bool) -> Coll:
    n = 40
    times = (0.5e-6 + size / 1e10) * np.exp(rng.normal(0, 0.02, n))
    flags = [1 if late and i % 3 else 0 for i in range(n)]  # most launches late: flagged
    rec = record_from_dict(
        {
            "type": "coll",
            "op": op,
            "group": "world",
            "nranks": 2,
            "bytes": size,
            "root": 0 if op in ("bcast", "gather", "reduce", "scatter", "ibcast") else None,
            "method": "window",
            "times_s": [float(t) for t in times],
            "flags": flags,
            "stage": [1] * n,
            "stop": "rse",
        },
        f"synthetic {op} {size}",
    )
    assert isinstance(rec, Coll)
    return rec


def sample_points() -> list[Point]:
    """p2p on the NetPIPE schedule; the large windows at -3 B and +3 B mostly interrupted."""
    out = []
    for p in synthetic_runs.points("intra-socket", (0, 1)):
        if p.op != "pingpong" and p.bytes > 100_000 and p.bytes % 2:
            busy = {**p.raw, "switches": [[i, 1, 0] for i in range(9)]}
            p = record_from_dict(busy, f"synthetic {p.op} {p.bytes}")
            assert isinstance(p, Point)
        out.append(p)
    return out


@pytest.fixture
def busy_run(tmp_path: Path) -> Path:
    path = tmp_path / "store.sqlite"
    records: list[Point | Coll] = [*sample_points(), *sample_colls()]
    synthetic_runs.store_records(path, "all", records, "busy", 2)
    return path


def _printed(path: Path, full: bool) -> list[str]:
    buffer = io.StringIO()
    console = common.console()
    console.file = buffer
    with Store.open(path, write=False) as store:
        render.summary(console, read_run(store, 1), kinds.View(), full)
    return buffer.getvalue().splitlines()


def test_a_default_summary_fits_one_screen_and_full_has_every_table(busy_run):
    brief, full = _printed(busy_run, False), _printed(busy_run, True)
    assert len(brief) <= SCREEN, "\n".join(brief)
    assert len(full) > 3 * SCREEN  # the per-size and per-point tables
    warnings = [line for line in brief if line.startswith("!")]
    assert warnings and len(warnings) == len(set(warnings))
    assert any("--full" in line for line in warnings)
    assert sum("late" in line for line in warnings) == 1  # the flagged points: one line


def test_full_names_each_interrupted_size_once(busy_run):
    lines = [line for line in _printed(busy_run, True) if "lose its core" in line]
    labels = [line.split(":")[0] for line in lines if line.startswith("!")]
    assert labels and len(labels) == len(set(labels))  # 1 MiB - 3 B and + 3 B: one line
    assert any("(2 sizes)" in label for label in labels)


def test_show_prints_one_screen_and_full_the_tables(cli, busy_run):
    cli.env["COMMSCOPE_STORE"] = str(busy_run)
    brief = cli("show", "latest", check=True).stdout.splitlines()
    full = cli("show", "latest", "--full", check=True).stdout.splitlines()
    assert len(brief) <= SCREEN < len(full)


@pytest.mark.parametrize("seconds", [4e-10, 1.5e-9, 3.7e-8, 2.5e-7, 9.9996e-7, 1.4e-6])
def test_every_warning_template_reads_sub_microsecond_durations(seconds):
    skew = SkewEffect(240, 192, seconds, seconds * 3, seconds * 2, seconds, 0.001)
    rows = coll_analysis.summaries(sample_colls()[:3], 0.95, 0.25, 10)
    flagged = dataclasses.replace(
        rows[1],
        warnings=("clock_drift", "start_skew"),
        clock_unexplained_s=seconds,
        start_skew=skew,
    )
    outlier = matrix_analysis.Outlier("link", "a->b", seconds * 5, seconds, 9.0)
    rma = rma_analysis.RmaSummary(
        (),
        tuple(
            rma_analysis.Figures("intra-socket", "put", sync, seconds * k, 8, None, None)
            for k, sync in ((1, "fence"), (2, "lock"))
        ),
    )
    texts = [
        time_text(seconds),
        time_span_text(seconds, seconds * 3),
        skew.text(),
        coll_analysis.warning_text(flagged),
        outlier.text("s"),
        *rma_analysis.findings(rma),
    ]
    for text in texts:
        assert not ZERO_LOOKING.search(text), text
    unit = time_text(seconds).split()[1]
    assert f" {unit} late took " in skew.text()  # one unit per range, picked for the value


def test_the_report_keeps_interrupted_samples_collapsed_after_the_figures(busy_run):
    with Store.open(busy_run, write=False) as store:
        html = kinds.render_report([read_run(store, 1)])
    card, rest = html.split("</section>", 1)  # the summary card is the first section
    assert card.count("lose its core") == 1  # one line on the card
    collapsed = rest.index('<details class="interrupted">')
    assert rest.index('<figure class="plot">') < collapsed  # figures first
    assert rest.count("lose its core") == rest[collapsed:].count("lose its core")
    assert "(2 sizes)" in html
