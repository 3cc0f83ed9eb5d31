"""Collectives over process counts: the scaling rows, terminal tables, JSON and report part,
from synthetic records of known times; and the refused operations of an MPI-3 library."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from commscope import kinds
from commscope.analysis import coll_scaling
from commscope.analysis.coll import summaries
from commscope.data.record_parse import record_from_dict
from commscope.data.records import Coll
from commscope.data.run_data import read_run
from commscope.data.store import Store
from commscope.kinds import coll as coll_kind

HOSTILE = "<script>alert(1)</script>"
REASON = (
    "persistent collectives (MPI_*_init) need an MPI-4 library; Open MPI v4.1.4 implements MPI 3.1"
)


def coll(op: str, p: int, size: int, t: float, valid: bool = True) -> Coll:
    """A point of 40 launches around t (+-1 %), all valid or all late."""
    times = [t * (1 + 0.01 * ((i % 5) - 2) / 2) for i in range(40)]
    rec = record_from_dict(
        {
            "type": "coll",
            "op": op,
            "group": "world" if p == 8 else f"ranks 0-{p - 1}",
            "nranks": p,
            "bytes": size,
            "root": None,
            "method": "window",
            "times_s": times,
            "flags": [0 if valid else 1] * 40,
            "stage": [1] * 40,
            "stop": "rse",
        },
        "test",
    )
    assert isinstance(rec, Coll)
    return rec


# allgather grows as p - 1 (link-bound); bcast as log2 p; one point at p=4 all late.
POINTS = [
    *(coll("allgather", p, 1 << 20, 1e-3 * (p - 1)) for p in (2, 4, 8)),
    *(coll("bcast", p, 8, 2e-6 * math.log2(p)) for p in (2, 4, 8)),
    coll("alltoall", 2, 64, 5e-6),
    coll("alltoall", 4, 64, 9e-6, valid=False),
    coll("reduce", 8, 64, 4e-6),  # one process count only: no scaling row
]


def test_rows_put_each_operation_and_size_side_by_side_over_p():
    rows = coll_scaling.scaling(summaries(POINTS))
    assert [(r.op, r.bytes, r.procs) for r in rows] == [
        ("allgather", 1 << 20, (2, 4, 8)),
        ("alltoall", 64, (2, 4)),
        ("bcast", 8, (2, 4, 8)),
    ]
    allgather, alltoall, bcast = rows
    assert allgather.time_at(4) == pytest.approx(3e-3, rel=1e-3)
    assert allgather.growth() == pytest.approx(coll_scaling.link_bound_ratio(2, 8), rel=1e-3)
    assert bcast.growth() == pytest.approx(3.0, rel=1e-3)
    assert math.isnan(alltoall.time_at(4)) and alltoall.flagged == (False, True)
    assert math.isnan(alltoall.growth()) and math.isnan(allgather.time_at(3))
    assert all(
        lo <= t <= hi
        for lo, t, hi in zip(bcast.ci_low_s, bcast.times_s, bcast.ci_high_s, strict=True)
    )
    assert coll_scaling.process_counts(rows) == (2, 4, 8)


def test_link_bound_ratio_is_the_ratio_of_blocks_each_rank_receives():
    assert coll_scaling.link_bound_ratio(2, 4) == 3.0
    assert coll_scaling.link_bound_ratio(3, 4) == 1.5
    with pytest.raises(ValueError, match="process counts 4, 2"):
        coll_scaling.link_bound_ratio(4, 2)


def _text(items: list[Any]) -> str:
    console = Console(record=True, width=220)
    for item in items:
        console.print(item)
    return console.export_text()


def test_terminal_has_a_p_column_and_the_scaling_table_only_over_several_p():
    run = coll_kind.CollRun(
        summaries(POINTS), 0.95, 0.25, coll_scaling.scaling(summaries(POINTS)), []
    )
    text = _text(coll_kind.table(run))
    assert "collectives against process count" in text
    assert re.search(
        r"allgather\s+│\s+1048576\s+│\s+1000\.00\s+│\s+3000\.00\s+│\s+7000\.00\s+│\s+7\.00", text
    )
    assert re.search(r"alltoall\s+│\s+64\s+│\s+5\.00\s+│\s+nan !\s+│\s+│", text)
    assert re.search(r"│ allgather\s+│ 4 │ 1048576 │", text)  # the p column
    single = [coll("bcast", 8, 8, 2e-6)]
    alone = _text(coll_kind.table(coll_kind.CollRun(summaries(single), 0.95, 0.25)))
    assert "against process count" not in alone and "│ 8 │ 8 │" not in alone


def _store(path: Path, points: list[Coll], end: dict[str, Any]) -> int:
    with Store.open(path) as store:
        run_id = store.create_run("coll", HOSTILE, "synthetic", "none", 8, {"confidence": 0.95})
        seg = store.start_segment(run_id, ["synthetic"])
        for rec in points:
            store.add_point(run_id, seg, rec)
        store.finish_segment(seg, "complete", end=end)
        store.set_run_status(run_id, "complete")
    return run_id


def test_json_and_report_show_the_scaling_and_the_refused_operations(tmp_path):
    path = tmp_path / "s.sqlite"
    end = {"type": "end", "points": len(POINTS), "elapsed_s": 1.0,
           "refused": [{"op": "bcast_init", "reason": REASON + HOSTILE}]}  # fmt: skip
    run_id = _store(path, POINTS, end)
    with Store.open(path) as store:
        run = read_run(store, run_id)
    found = kinds.summaries(run, kinds.View())
    out = kinds.to_json(found)
    assert [(r["op"], r["procs"]) for r in out["coll_scaling"]] == [
        ("allgather", [2, 4, 8]),
        ("alltoall", [2, 4]),
        ("bcast", [2, 4, 8]),
    ]
    assert out["coll_scaling"][1]["times_s"][1] is None and out["coll_scaling"][1]["growth"] is None
    assert out["coll_refused"] == [{"op": "bcast_init", "reason": REASON + HOSTILE}]
    json.dumps(out, allow_nan=False)  # NaN never reaches the JSON
    assert "bcast_init not measured: persistent" in " ".join(_text(kinds.terminal(found)).split())

    page = kinds.render_report([run])
    assert "<h3>Collectives against the process count</h3>" in page
    assert "<th>T at p=2 (us)</th><th>T at p=4 (us)</th><th>T at p=8 (us)</th>" in page
    assert re.search(r"<td class=\"l\">allgather</td><td>1 MiB</td><td>1,?000\.00</td>", page)
    plots = re.findall(r"<figcaption>(\w+) against the process count <span>", page)
    assert plots == ["allgather", "alltoall", "bcast"]
    assert "bcast_init not measured: persistent collectives" in page
    assert "<script" not in page.replace("&lt;script", "")


def test_json_keys_are_there_for_runs_without_collectives():
    assert coll_kind.to_json(None) == {"collectives": [], "coll_scaling": [], "coll_refused": []}


def test_procs_are_checked_against_the_run_and_multiply_the_points():
    from commscope.data.request import EngineOptions
    from commscope.errors import InputError
    from commscope.measure import engine_options

    assert engine_options.procs("4, 2,2", 4) == (2, 4)
    assert engine_options.procs(None, 4) == ()
    for bad in ("1,2", "2,5", "2,x", "2,,4", "-2"):
        with pytest.raises(InputError, match=r"--procs '.*': give process counts from 2 to"):
            engine_options.procs(bad, 4)
    options = EngineOptions(ops="bcast,barrier", coll_sizes=(8, 64, 512), procs="2,3,4")
    assert engine_options.expected_points(options, 0) == 3 * (3 + 1)
    assert engine_options.expected_points(options.replace(procs=None), 0) == 3 + 1


@pytest.mark.parametrize("procs", ["2,8", "1", "two"])
def test_run_refuses_process_counts_the_run_cannot_give_before_storing(cli, procs):
    out = cli("run", "coll", "--np", "4", "--procs", procs)
    assert out.returncode == 2, out.stderr
    lines = [ln for ln in out.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and f"--procs '{procs}': give process counts from 2" in lines[0]
    assert "the run's 4 ranks" in lines[0]
    assert not cli.store.exists()
