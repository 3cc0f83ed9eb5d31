"""OSU one-sided tests and IMB-RMA tables into the engine's one-sided series, from real output."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from commscope import importers
from commscope.errors import InputError

FIXTURES = Path(__file__).parent / "fixtures"


def rows(name: str) -> list[tuple[int, float]]:
    """(size, value) of the fixture's data rows, as OSU printed them."""
    out = []
    for line in (FIXTURES / name).read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            size, value = line.split()[:2]
            out.append((int(size), float(value)))
    return out


@pytest.mark.parametrize(
    ("name", "op"),
    [
        ("osu_put_latency.txt", "put_lat_lock"),  # OSU's default: MPI_Win_flush
        ("osu_get_latency.txt", "get_lat_lock"),
        ("osu_acc_latency.txt", "acc_lat_lock"),
        ("osu_put_latency_fence.txt", "put_lat_fence"),
    ],
)
def test_osu_one_sided_latency_is_the_reported_time(name, op):
    imported = importers.load("osu", FIXTURES / name, "intra-socket")
    assert {p.op for p in imported.records} == {op}
    got = {p.bytes: p for p in imported.records}
    for size, us in rows(name):
        p = got[size]
        assert p.samples_s == (pytest.approx(us / 1e6),) and p.window == 1
        assert p.pair == "intra-socket" and p.stop == "imported"


@pytest.mark.parametrize(
    ("name", "op"),
    [
        ("osu_put_bw.txt", "put_bw_lock"),
        ("osu_get_bw.txt", "get_bw_lock"),
        ("osu_get_bw_pscw.txt", "get_bw_pscw"),
    ],
)
def test_osu_one_sided_bandwidth_keeps_the_reported_rate(name, op):
    imported = importers.load("osu", FIXTURES / name)
    got = {p.bytes: p for p in imported.records}
    assert {p.op for p in imported.records} == {op}
    for size, mbs in rows(name):
        p = got[size]
        assert p.window == 64 and p.bytes_per_sample == 64 * size
        assert p.bandwidth_Bps == pytest.approx(mbs * 1e6)


def test_osu_lock_per_operation_is_refused_naming_the_fix():
    path = FIXTURES / "osu_put_latency_lock_unlock.txt"
    with pytest.raises(InputError) as err:
        importers.load("osu", path)
    message = err.value.one_line()
    assert f"{path} line 3:" in message and "-s flush, -s fence or -s pscw" in message


@pytest.mark.parametrize(
    ("text", "lineno", "reason"),
    [
        ("# OSU MPI_Put Latency Test v7.4\n# Size  Latency (us)\n8 0.10\n", 3, "Synchronization"),
        ("# OSU MPI_Put Bi-directional Bandwidth Test v7.4\n", 1, "not a supported"),
        ("# OSU MPI_Accumulate Bandwidth Test v7.4\n", 1, "not a supported"),
        (
            "# OSU MPI_Put Bandwidth Test v7.4\n# Synchronization: MPI_Win_fence\n"
            "# Size  Bandwidth (MB/s)\n0 10.0\n",
            4,
            "a size and a rate above 0",
        ),
        (
            "# OSU MPI_Get latency Test v7.4\n# Synchronization: MPI_Win_fence\n"
            "# Size  Latency (us)\n8 0.00\n",
            4,
            "time of 0 s",
        ),
        # A two-sided test in the same file is not read as one-sided.
        ("# OSU MPI_Put Latency Test v7.4\n# OSU MPI Latency Test v7.4\n", 2, "not a supported"),
    ],
)
def test_malformed_osu_one_sided_output_is_one_line(tmp_path, text, lineno, reason):
    f = tmp_path / "bad.osu"
    f.write_text(text)
    with pytest.raises(InputError) as err:
        importers.load("osu", f)
    message = err.value.one_line()
    assert f"{f} line {lineno}:" in message and reason in message and "\n" not in message


def imb_table(name: str, mode: str) -> list[tuple[int, int, float]]:
    """(bytes, repetitions, t[usec]) of one IMB-RMA table of the fixture."""
    lines = (FIXTURES / "imb_rma.txt").read_text().splitlines()
    out, current, current_mode = [], None, None
    for line in lines:
        text = line.strip()
        if text.startswith("# Benchmarking"):
            current, current_mode = text.split()[2], None
        elif text.startswith("#    MODE:") or text.startswith("# MODE:"):
            current_mode = text.split(":")[1].strip()
        elif text and not text.startswith("#") and (current, current_mode) == (name, mode):
            size, reps, t = text.split()[:3]
            out.append((int(size), int(reps), float(t)))
    return out


@pytest.mark.parametrize(
    ("name", "operation"), [("Unidir_put", "put"), ("Unidir_get", "get"), ("Accumulate", "acc")]
)
def test_imb_rma_modes_become_latency_and_bandwidth_under_lock(name, operation):
    imported = importers.load("imb", FIXTURES / "imb_rma.txt", "intra-socket")
    got = {(p.op, p.bytes): p for p in imported.records}
    lat = imb_table(name, "NON-AGGREGATE")
    agg = imb_table(name, "AGGREGATE")
    assert lat and agg
    for size, _, t in lat:
        if size == 0 and t == 0:
            continue
        p = got[(f"{operation}_lat_lock", size)]
        assert p.samples_s == (pytest.approx(t / 1e6),) and p.window == 1
    for size, reps, t in agg:
        if size == 0 and t == 0:
            continue
        p = got[(f"{operation}_bw_lock", size)]
        # One epoch of #repetitions operations, so the rate is IMB's bytes per t.
        assert p.window == reps and p.samples_s == (pytest.approx(reps * t / 1e6),)
        if size:
            assert p.bandwidth_Bps == pytest.approx(size / (t / 1e6))


def test_imb_rma_tables_without_a_series_are_noted_not_stored():
    imported = importers.load("imb", FIXTURES / "imb_rma.txt")
    ops = {p.op.split("_")[0] for p in imported.records}
    assert ops == {"put", "get", "acc"}
    skipped = " ".join(imported.notes)
    for name in ("Bidir_put", "Bidir_get", "Get_accumulate", "Truly_passive_put"):
        assert f"{name} skipped" in skipped


def test_osu_and_imb_put_latency_compare_size_by_size(cli):
    for fmt, name in (("osu", "osu_put_latency.txt"), ("imb", "imb_rma.txt")):
        out = cli("import", fmt, str(FIXTURES / name), "--pair", "intra-socket", "--label", fmt)
        assert out.returncode == 0, out.stderr
    shown = json.loads(cli("compare", "1", "2", "--json", check=True).stdout)
    # The same op name on both sides: OSU's flush latency beside IMB's NON-AGGREGATE put.
    (row,) = [r for r in shown["rows"] if r["op"] == "put_lat_lock" and r["bytes"] == 8]
    osu_us = dict(rows("osu_put_latency.txt"))[8]
    imb_us = next(t for size, _, t in imb_table("Unidir_put", "NON-AGGREGATE") if size == 8)
    medians = [run["median_s"] for run in row["runs"]]
    assert medians == [pytest.approx(osu_us / 1e6), pytest.approx(imb_us / 1e6)]
