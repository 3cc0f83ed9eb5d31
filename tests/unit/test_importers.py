"""Importers: OSU, IMB-MPI1 and NetPIPE outputs become valid records; bad lines are refused."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from commscope import importers
from commscope.data.records import Coll, Point
from commscope.data.store import Store
from commscope.errors import InputError, StoreError, UsageError

FIXTURES = Path(__file__).parent / "fixtures"


def load(fmt, name, **kw):
    return importers.load(fmt, FIXTURES / name, **kw)


def by_key(imported):
    return {(type(r).__name__, *r.key): r for r in imported.records}


def data_rows(name):
    return [
        ln.split()
        for ln in (FIXTURES / name).read_text().splitlines()
        if ln.strip() and not ln.lstrip().startswith("#")
    ]


def test_osu_latency_is_one_way_time():
    imp = load("osu", "osu_latency.txt", pair="inter-node")
    rows = data_rows("osu_latency.txt")
    assert imp.n_points == len(rows) and imp.n_colls == 0 and imp.nranks == 2
    recs = by_key(imp)
    for size, lat in rows:
        p = recs[("Point", "pingpong", "inter-node", int(size))]
        assert p.samples_s == (pytest.approx(float(lat) / 1e6),)
        assert p.bytes_per_sample == int(size) and p.stop == "imported"


@pytest.mark.parametrize(
    ("name", "op", "factor"), [("osu_bw.txt", "bw", 1), ("osu_bibw.txt", "bibw", 2)]
)
def test_osu_bandwidth_becomes_a_window_time_with_the_reported_rate(name, op, factor):
    imp = load("osu", name)
    recs = by_key(imp)
    for size, mbs in data_rows(name):
        p = recs[("Point", op, "unknown", int(size))]
        assert p.window == 64
        assert p.bytes_per_sample == factor * 64 * int(size)
        assert p.bandwidth_Bps == pytest.approx(float(mbs) * 1e6, rel=1e-12)


def test_osu_window_size_comment_is_used(tmp_path):
    f = tmp_path / "mbw.txt"
    f.write_text(
        "# OSU MPI Bandwidth Test v5.8\n# [ window size: 16 ]\n# Size  Bandwidth (MB/s)\n"
        "1024                 1000.00\n"
    )
    (p,) = importers.load("osu", f).records
    assert p.window == 16 and p.bytes_per_sample == 16 * 1024
    assert p.bandwidth_Bps == pytest.approx(1e9)


def test_osu_collectives_with_full_statistics_and_barrier():
    imp = load("osu", "osu_allreduce.txt", nranks=8)
    rows = data_rows("osu_allreduce.txt")
    assert imp.n_colls == len(rows) and imp.n_points == 0 and imp.nranks == 8
    first = imp.records[0]
    assert isinstance(first, Coll)
    assert (first.op, first.group, first.nranks, first.method) == (
        "allreduce",
        "world",
        8,
        "imported",
    )
    assert first.times_s == (pytest.approx(float(rows[0][1]) / 1e6),) and first.flags == (0,)
    (barrier,) = load("osu", "osu_barrier.txt", nranks=8).records
    assert (barrier.op, barrier.bytes, barrier.times_s) == ("barrier", 0, (pytest.approx(3.41e-6),))


def test_osu_collectives_need_nranks():
    with pytest.raises(UsageError, match="--nranks"):
        load("osu", "osu_allreduce.txt")


def test_imb_tables():
    imp = load("imb", "imb_mpi1.txt", pair="intra-node")
    recs = by_key(imp)
    assert imp.nranks == 4 and imp.notes == ()
    pp = recs[("Point", "pingpong", "intra-node", 1024)]
    row = next(r for r in data_rows("imb_mpi1.txt") if r[0] == "1024")  # first table: PingPong
    assert pp.samples_s == (pytest.approx(float(row[2]) / 1e6),)
    assert pp.iters_per_sample == int(row[1])
    ops = {(k[1], k[2]) for k in recs if k[0] == "Coll"}
    assert ops == {
        ("pingping", "ranks 0-1"),
        ("sendrecv", "world"),
        ("allreduce", "world"),
        ("allreduce", "ranks 0-1"),
        ("barrier", "world"),
        ("barrier", "ranks 0-1"),
    }
    sendrecv = recs[("Coll", "sendrecv", "world", 0)]
    assert sendrecv.nranks == 4 and len(sendrecv.times_s) == 1
    assert recs[("Coll", "barrier", "world", 0)].nranks == 4


def test_imb_uniband_uses_the_message_rate_and_failed_rows_are_noted(tmp_path):
    f = tmp_path / "imb.txt"
    f.write_text(
        "# Benchmarking Uniband\n# #processes = 2\n"
        "       #bytes #repetitions   Mbytes/sec      Msg/sec\n"
        "         4096         1000      8192.00      2000000\n"
        '      4194304 out-of-mem.; needed X=   0.125 GB; use flag "-mem X" or'
        " MAX_MEM_USAGE>=X (IMB_mem_info.h)\n"
    )
    imp = importers.load("imb", f)
    (p,) = imp.records
    assert (p.op, p.window, p.bytes_per_sample) == ("bw", 64, 64 * 4096)
    assert p.bandwidth_Bps == pytest.approx(4096 * 2e6)
    assert len(imp.notes) == 1 and "line 5" in imp.notes[0] and "out-of-mem" in imp.notes[0]


def test_netpipe_time_comes_from_the_precise_throughput():
    imp = load("netpipe", "netpipe.out")
    rows = data_rows("netpipe.out")
    assert imp.n_points == len(rows)
    recs = by_key(imp)
    for size, mbps, seconds in rows:
        p = recs[("Point", "pingpong", "unknown", int(size))]
        (sample,) = p.samples_s
        assert sample == pytest.approx(int(size) * 8 / (float(mbps) * 2**20), rel=1e-9)
        assert abs(sample - float(seconds)) <= 5e-9 + 0.01 * float(seconds)


def test_repeated_sizes_become_more_samples(tmp_path):
    f = tmp_path / "twice.txt"
    text = "# OSU MPI Latency Test v7.1\n# Size Latency (us)\n8    1.50\n16   1.60\n"
    f.write_text(text + "\n" + text.replace("1.50", "1.70"))
    recs = by_key(importers.load("osu", f))
    assert recs[("Point", "pingpong", "unknown", 8)].samples_s == (1.5e-6, 1.7e-6)


MALFORMED = [
    ("osu", "# OSU MPI Latency Test v5.8\n# Size          Latency (us)\n0    0.21\n1    abc\n", 4),
    ("osu", "0    0.21\n", 1),
    ("osu", "# OSU MPI Latency Test v5.8\n# Size  Latency (us)\n-8    0.21\n", 3),
    ("osu", "# OSU MPI Bandwidth Test v5.8\n# Size  Bandwidth (MB/s)\n8    0.00\n", 3),
    ("osu", "# OSU MPI Multiple Bandwidth / Message Rate Test v5.8\n", 1),
    (
        "imb",
        "# Benchmarking PingPong\n# #processes = 2\n #bytes #repetitions t[usec] Mbytes/sec\n"
        "0 1000 0.41\n",
        4,
    ),
    ("imb", "         0         1000         0.41         0.00\n", 1),
    ("netpipe", "       1 29.654399   0.00000026\n       2 58.735801\n", 2),
    ("netpipe", "       1 29.654399   0.00000026\n    1.5 58.735801   0.00000026\n", 2),
    ("netpipe", "       8 29.654399   0.00100000\n", 1),  # Mbps and time disagree
    ("netpipe", "\n\n", 2),
]


@pytest.mark.parametrize(("fmt", "text", "lineno"), MALFORMED)
def test_malformed_line_names_file_and_line(tmp_path, fmt, text, lineno):
    f = tmp_path / f"bad.{fmt}"
    f.write_text(text)
    with pytest.raises(InputError) as err:
        importers.load(fmt, f)
    message = err.value.one_line()
    assert f"{f} line {lineno}:" in message and "\n" not in message
    assert err.value.exit_code == 2


OSU_LATENCY = "# OSU MPI Latency Test v7.1\n# Size          Latency (us)\n"
OSU_BW = "# OSU MPI Bandwidth Test v7.1\n# Size      Bandwidth (MB/s)\n"
IMB_PINGPONG = (
    "# Benchmarking PingPong\n# #processes = 2\n"
    "       #bytes #repetitions      t[usec]   Mbytes/sec\n"
)
IMB_UNIBAND = (
    "# Benchmarking Uniband\n# #processes = 2\n"
    "       #bytes #repetitions   Mbytes/sec      Msg/sec\n"
)
IMB_ALLREDUCE = "       #bytes #repetitions  t_min[usec]  t_max[usec]  t_avg[usec]\n"
# Numbers that are no measurement: each must be refused naming its line, never stored.
NOT_MEASUREMENTS = [
    ("osu", OSU_LATENCY + "0 0.21\n1 5e-324\n", 4, "time of 0 s"),  # latency underflows to 0
    ("osu", OSU_LATENCY + "8 0.00\n", 3, "time of 0 s"),
    ("osu", OSU_LATENCY + "8 1e999\n", 3, "not a size and a non-negative number"),
    ("osu", OSU_LATENCY + "8 inf\n", 3, "not a size"),
    ("osu", OSU_LATENCY + "8 nan\n", 3, "not a size"),
    ("osu", OSU_LATENCY + "8\u00b2 0.21\n", 3, "not a size"),  # '8²'.isdigit() is true
    ("osu", OSU_LATENCY + "\u0661\u0662 0.21\n", 3, "not a size"),  # int('١٢') is 12
    ("osu", OSU_LATENCY + "8 1_0\n", 3, "not a size"),
    ("osu", OSU_LATENCY + "9223372036854775808 0.21\n", 3, "not a size"),  # 2^63
    ("osu", OSU_LATENCY + "4294967296 0.21\n", 3, "beyond one message"),  # 4 GiB
    ("osu", OSU_LATENCY + "9" * 5000 + " 0.21\n", 3, "not a size"),
    ("osu", OSU_BW + "8 5e-324\n", 3, "rate of"),  # a window at that rate: infinite time
    (
        "osu",
        "# OSU MPI Bandwidth Test v7.1\n# [ window size: 0 ]\n# Size  Bandwidth (MB/s)\n8 10.0\n",
        2,
        "window size",
    ),
    ("imb", IMB_UNIBAND + "8 1000 0.00 5e-324\n", 4, "Msg/sec"),  # stored Infinity before
    ("imb", IMB_PINGPONG + "0 1000 0.00 0.00\n", 4, "time of 0 s"),
    (
        "imb",
        "# Benchmarking Allreduce\n# #processes = 1e20\n"
        + IMB_ALLREDUCE
        + "8 1000 1.00 2.00 1.50\n",
        2,
        "#processes",
    ),
    (
        "imb",
        "# Benchmarking Allreduce\n# #processes = 2\u00b2\n"
        + IMB_ALLREDUCE
        + "8 1000 1.00 2.00 1.50\n",
        2,
        "#processes",
    ),
    ("imb", IMB_PINGPONG + "8 1e3 1.00 2.00\n", 4, "#repetitions"),
    ("imb", IMB_PINGPONG + "8 1000 1e300 2.00\n", 4, "at most 3600 s"),
    # One table's rows under two headers (a '# Benchmarking' line lost between them).
    (
        "imb",
        IMB_PINGPONG + "8 1000 1.00 2.00\n" + IMB_ALLREDUCE + "8 1000 1.0 2.0 1.5\n",
        5,
        "a second column header in the table of PingPong",
    ),
    ("imb", IMB_PINGPONG + "8 1000 1.00 2.00\n# #processes = 4\n", 5, "a second process count"),
    ("netpipe", "8 0.000000 0.00000000\n", 1, "time of 0 s"),
    ("netpipe", "8 1e-300 0.00000000\n", 1, "disagree"),
]


@pytest.mark.parametrize(("fmt", "text", "lineno", "reason"), NOT_MEASUREMENTS)
def test_numbers_that_are_no_measurement_are_refused_in_one_line(
    cli, tmp_path, fmt, text, lineno, reason
):
    f = tmp_path / f"bad.{fmt}"
    f.write_text(text)
    with pytest.raises(InputError) as err:
        importers.load(fmt, f)
    message = err.value.one_line()
    assert f"{f} line {lineno}:" in message and reason in message, message
    assert len(message) < 500
    out = cli("import", fmt, str(f), "--label", "x", "--nranks", "2")
    assert out.returncode == 2 and len(out.stderr.splitlines()) == 1, out.stderr
    assert "Traceback" not in out.stderr
    assert not cli.store.exists() or json.loads(cli("runs", "--json", check=True).stdout) == []


def test_an_import_whose_store_fails_leaves_no_run(tmp_path, monkeypatch):
    imp = load("osu", "osu_latency.txt")
    original = Store._insert_point
    calls = []

    def fail_at_the_third(self, *args):
        calls.append(1)
        if len(calls) == 3:
            raise sqlite3.OperationalError("disk I/O error")
        original(self, *args)

    monkeypatch.setattr(Store, "_insert_point", fail_at_the_third)
    with Store.open(tmp_path / "s.sqlite") as store:
        with pytest.raises(StoreError, match="disk I/O error"):
            importers.store_imported(store, imp, "x")
        assert store.list_runs() == [] and len(calls) == 3


def test_missing_file_is_a_usage_error(tmp_path):
    with pytest.raises(UsageError, match="no such file"):
        importers.load("netpipe", tmp_path / "absent.out")


def test_stored_import_is_a_complete_run_without_header(tmp_path):
    imp = load("osu", "osu_latency.txt", pair="intra-node")
    with Store.open(tmp_path / "s.sqlite") as store:
        run_id = importers.store_imported(store, imp, "ib-eager")
        info = store.get_run(run_id)
        assert (info.kind, info.label, info.status, info.header) == (
            "import",
            "ib-eager",
            "complete",
            None,
        )
        assert info.request == {
            "imported": {
                "format": "osu",
                "label": "ib-eager",
                "file": str(FIXTURES / "osu_latency.txt"),
            }
        }
        points = store.points(run_id)
    assert [p.key for p in points] == sorted(p.key for p in imp.records if isinstance(p, Point))


def test_cli_import_then_show(cli):
    out = cli(
        "import",
        "imb",
        str(FIXTURES / "imb_mpi1.txt"),
        "--label",
        "shm",
        "--pair",
        "intra-node",
        "--json",
        check=True,
    )
    summary = json.loads(out.stdout)
    assert summary["run"] == 1 and summary["points"] == 24 and summary["collectives"] > 0
    shown = json.loads(cli("show", "1", "--json", check=True).stdout)
    assert shown["kind"] == "import" and shown["label"] == "shm"


def test_cli_malformed_import_stores_nothing(cli, tmp_path):
    bad = tmp_path / "np.out"
    good = (FIXTURES / "netpipe.out").read_text().splitlines()
    bad.write_text("\n".join(good[:50] + ["  4096 oops 0.001"] + good[50:]) + "\n")
    out = cli("import", "netpipe", str(bad), "--label", "x")
    assert out.returncode == 2
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and f"{bad} line 51" in lines[0]
    assert not cli.store.exists() or json.loads(cli("runs", "--json", check=True).stdout) == []


def test_cli_import_usage_errors(cli):
    out = cli("import", "osu", str(FIXTURES / "osu_allreduce.txt"), "--label", "x")
    assert out.returncode == 2 and "--nranks" in out.stderr
    out = cli("import", "osu", str(FIXTURES / "osu_latency.txt"))
    assert out.returncode == 2 and "--label" in out.stderr
    out = cli("import", "netpipe", "/nonexistent/np.out", "--label", "x")
    assert out.returncode == 2 and len(out.stderr.strip().splitlines()) == 1
