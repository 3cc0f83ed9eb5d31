"""Network load of a simulated all-to-all: the benchmark's bytes per link against the sizes
its messages must carry, commscope's own traffic apart, and the Paje parsing on a trace that
a real SMPI run writes here (traces are never committed)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from commscope.data.request import EngineOptions
from commscope.data.store import Store
from commscope.errors import SimulateError
from commscope.measure import runner
from commscope.predict import model_from_dict
from commscope.simulate import netload, smpi
from tests.conftest import CLI
from tests.simgrid.conftest import model

KIB64 = 64 << 10
# 2 nodes x 2 ranks (block placement: ranks 0, 1 on node0). One all-to-all launch sends one
# block from every rank to every other: node0's NIC carries 2 ranks x 2 remote ranks blocks
# each way, node0's memory link 2 blocks (rank 0 <-> rank 1).
NIC_BLOCKS, MEMORY_BLOCKS = 4, 2
CLUSTER = "nodes: 2\nsockets: 1\ncores: 2\nchannels: {nic: {bandwidth: 125MB/s, latency: 10us}}\n"
ARGS = ["--", "coll", "--ops", "alltoall", "--sizes", "64KiB"]


@pytest.fixture(scope="module")
def traced(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """One ``simulate run --netload`` through the CLI, then the same SMPI job again by hand
    to keep its trace: the stored load, the trace, and the launches the engine reported."""
    tmp = tmp_path_factory.mktemp("netload")
    home = Path(os.environ.get("COMMSCOPE_TEST_HOME", "/tmp/commscope-test-home"))
    cli = CLI(tmp / "store.sqlite", home)
    path = model(tmp, CLUSTER)
    out = cli(
        "simulate", "run", "--cluster", str(path), "--ranks-per-node", "2", "--netload",
        "--samples", "1", "--json", *ARGS, check=True,
    )  # fmt: skip
    stored = json.loads(out.stdout)
    with Store.open(cli.store) as store:
        info = store.get_run(stored["run"])
        [coll] = store.colls(stored["run"])
    sim = info.request["simulate"]
    engine = EngineOptions.from_json(info.request["engine"])
    # The engine with the argument list the runner gave it.
    os.environ["COMMSCOPE_HOME"] = str(home)
    program = runner.engine_argv(str(smpi.engine_path()), engine, set())
    assert engine.k0 is not None  # the stage 0 launches, beside the measured ones
    work = tmp / "job"
    work.mkdir()
    job = smpi.job_in(sim, program, work)
    ran = subprocess.run(
        job.argv, env={**os.environ, **job.env}, capture_output=True, text=True, timeout=600
    )
    assert ran.returncode == 0, ran.stderr[-2000:]
    [record] = [r for r in map(json.loads, ran.stdout.splitlines()) if r.get("type") == "coll"]
    return {
        "cli": cli,
        "run": stored["run"],
        "stored": stored["netload"],
        "stored_launches": engine.k0 + len(coll.times_s),
        "trace": work / netload.TRACE_FILE,
        "launches": engine.k0 + len(record["times_s"]),
        "model": model_from_dict(sim["model_file"], "the run's model"),
        "rank_node": sim["rank_node"],
    }


def by_link(links: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {x["link"]: x for x in links}


def test_benchmark_bytes_are_exactly_the_all_to_all_blocks(traced: dict[str, Any]) -> None:
    load = traced["stored"]
    assert load["split"] is True
    bench, sync, every = (by_link(load[k]) for k in ("benchmark", "sync", "all"))
    launches = traced["stored_launches"]
    assert launches >= 2  # stage 0 initialises, stage 1 measures
    for n in (0, 1):
        for way in ("up", "down"):
            nic = bench[f"node{n}-nic-{way}"]
            # Message sizes are counted exactly: no tolerance is needed or given.
            assert nic["bytes"] == launches * NIC_BLOCKS * KIB64
            assert nic["messages"] == launches * NIC_BLOCKS
            assert nic["mean_message_bytes"] == KIB64
        memory = bench[f"node{n}-memory"]
        assert memory["bytes"] == launches * MEMORY_BLOCKS * KIB64
        assert memory["mean_message_bytes"] == KIB64
    # commscope's own traffic is there, small, and apart: every link's total is the sum.
    nic0 = sync["node0-nic-up"]
    assert nic0["messages"] > 0 and 0 < nic0["bytes"] < KIB64
    assert nic0["mean_message_bytes"] < 1024
    for name, x in every.items():
        assert x["bytes"] == bench[name]["bytes"] + sync[name]["bytes"]
        assert x["messages"] == bench[name]["messages"] + sync[name]["messages"]
    print(
        f"node0-nic-up: benchmark {bench['node0-nic-up']['bytes']} B in"
        f" {bench['node0-nic-up']['messages']} messages ({launches} launches x 4 x 64 KiB);"
        f" sync {nic0['bytes']} B in {nic0['messages']} messages"
    )


def test_trace_of_a_real_run_parses_into_phases(traced: dict[str, Any]) -> None:
    load = netload.link_loads(traced["trace"], traced["model"], traced["rank_node"])
    assert load.unsplit is None and load.duration_s > 0
    bench = {x.link: x for x in load.phases["benchmark"]}
    launches = traced["launches"]
    assert bench["node0-nic-up"].bytes == launches * NIC_BLOCKS * KIB64
    assert bench["node1-memory"].messages == launches * MEMORY_BLOCKS
    sync = {x.link: x for x in load.phases["sync"]}
    assert sync["node0-nic-down"].messages > 0
    assert "fabric" not in bench


def test_trace_without_phase_marks_is_not_split(traced: dict[str, Any], tmp_path: Path) -> None:
    # An engine built before the marks: the phases are unknown, so nothing is put in them.
    text = traced["trace"].read_text()
    marks = {line.split()[1] for line in text.splitlines() if line.startswith("5 ")
             and line.split()[3] in netload.PHASE_MARKS}  # fmt: skip
    assert len(marks) == 2
    kept = [
        line
        for line in text.splitlines()
        if not (line.startswith("12 ") and line.split()[4] in marks)
    ]
    bare = tmp_path / "bare.paje"
    bare.write_text("\n".join(kept) + "\n")
    load = netload.link_loads(bare, traced["model"], traced["rank_node"])
    assert load.unsplit and "no phase marks" in load.unsplit and load.phases == {}
    marked = netload.link_loads(traced["trace"], traced["model"], traced["rank_node"])
    assert [(x.link, x.bytes, x.messages) for x in load.all] == [
        (x.link, x.bytes, x.messages) for x in marked.all
    ]
    assert load.to_json()["benchmark"] == [] and load.to_json()["all"]


def test_operations_that_mark_no_phases_leave_the_load_unsplit(traced: dict[str, Any]) -> None:
    args = (traced["trace"], traced["model"], traced["rank_node"])
    assert netload.link_loads(*args, ops=["alltoall", "pingpong"]).unsplit is None
    load = netload.link_loads(*args, ops=["alltoall", "loggp"])
    assert load.unsplit == "loggp mark no phases in the engine" and load.phases == {}
    assert load.to_json()["split"] is False and load.to_json()["sync"] == []


def test_damaged_trace_is_refused_in_one_line(traced: dict[str, Any], tmp_path: Path) -> None:
    defs = [x for x in traced["trace"].read_text().splitlines() if x.startswith("%")]
    cut = tmp_path / "cut.paje"
    cut.write_text("\n".join([*defs, '6 0.000000 "3']) + "\n")  # an event cut mid-field
    with pytest.raises(SimulateError, match=r"cut\.paje: not a SimGrid Paje trace") as err:
        netload.link_loads(cut, traced["model"], traced["rank_node"])
    assert "\n" not in str(err.value)


def test_show_json_and_report_list_sync_traffic_apart(traced: dict[str, Any]) -> None:
    cli: CLI = traced["cli"]
    shown = json.loads(cli("show", str(traced["run"]), "--json", check=True).stdout)["netload"]
    assert shown == traced["stored"]
    report = cli.store.parent / "netload.html"
    cli("report", str(traced["run"]), "-o", str(report), check=True)
    html = report.read_text()
    assert html.count('class="sim-netload"') == 1 and html.count('class="sim-netload-sync"') == 1
    sync_table = html.split('class="sim-netload-sync"')[1].split("</table>")[0]
    assert f"<td>{traced['stored_launches'] * NIC_BLOCKS}</td>" not in sync_table
    bench_table = html.split('class="sim-netload"')[1].split("</table>")[0]
    assert f"<td>{traced['stored_launches'] * NIC_BLOCKS}</td>" in bench_table
    assert "65536 B" in bench_table


def test_pingpong_bytes_are_its_iterations_and_control_messages_are_sync(
    cli: CLI, tmp_path: Path
) -> None:
    # Rank 0 (node0) and rank 2 (node1): every ping-pong iteration (warm-up, the two probe
    # iterations, then iters_per_sample per sample) crosses node0's NIC once each way.
    path = model(tmp_path, CLUSTER)
    out = cli(
        "simulate", "run", "--cluster", str(path), "--ranks-per-node", "2", "--netload",
        "--", "p2p", "--ops", "pingpong", "--sizes", "4KiB", "--pairs", "inter-node",
        "--max-samples", "20", check=True,
    )  # fmt: skip
    titles = ("network load, the measured operation", "network load, commscope's own traffic")
    assert all(t in out.stdout for t in titles), out.stdout
    with Store.open(cli.store) as store:
        [run] = store.list_runs()
        [point] = store.points(run.id)
    iterations = point.warmup + 2 + point.iters_per_sample * len(point.samples_s)
    load = json.loads(cli("show", str(run.id), "--json", check=True).stdout)["netload"]
    assert load["split"] is True
    for way in ("up", "down"):
        nic = by_link(load["benchmark"])[f"node0-nic-{way}"]
        assert nic["messages"] == iterations and nic["bytes"] == iterations * 4096
    # Rank 0's stop flag after every sample goes out of node0: sync, not benchmark.
    assert by_link(load["sync"])["node0-nic-up"]["messages"] >= len(point.samples_s)
    assert by_link(load["benchmark"]).get("node0-memory", {"messages": 0})["messages"] == 0


def test_nonblocking_overlap_loops_are_benchmark_traffic(cli: CLI, tmp_path: Path) -> None:
    # A nonblocking all-to-all runs its measured launches and then the overlap measurement:
    # 20 launches alone and 20 beside a busy loop, all of them the benchmark's blocks.
    path = model(tmp_path, CLUSTER)
    out = cli(
        "simulate", "run", "--cluster", str(path), "--ranks-per-node", "2", "--netload",
        "--samples", "1", "--json", "--", "coll", "--ops", "ialltoall", "--sizes", "64KiB",
        check=True,
    )  # fmt: skip
    run_id = json.loads(out.stdout)["run"]
    with Store.open(cli.store) as store:
        info = store.get_run(run_id)
        [coll] = store.colls(run_id)
    assert coll.raw["overlap"]["overlap_pct"] >= 0
    k0 = EngineOptions.from_json(info.request["engine"]).k0
    assert k0 is not None
    launches = k0 + len(coll.times_s) + 2 * 20
    load = json.loads(cli("show", str(run_id), "--json", check=True).stdout)["netload"]
    nic = by_link(load["benchmark"])["node0-nic-up"]
    assert nic["bytes"] == launches * NIC_BLOCKS * KIB64, (nic, launches)
