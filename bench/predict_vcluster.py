"""How well placement predictions order and price each modelled collective on the virtual cluster.

Builds a vcluster (root), measures its t(m, cf) tables (memory, NIC and fabric, two ranks per
node) and how long an answer waits behind a node's outgoing stream (level queue), then runs
`commscope validate predict` for each operation and algorithm the predictor models (the real
runs forced to that algorithm) and each p: every placement, on one node or several, is run for
real and set beside its prediction. Prints each placement's predicted and measured time, and
per operation, p and size Kendall's tau and the median relative error against the goals (tau
= 1, median |error| <= 15 %); an operation the MPI cannot run as
modelled is named and skipped. Not a test: it prints figures.

    .venv/bin/python bench/predict_vcluster.py [--nodes 4] [--rate 50mbit] [--procs 4]
        [--ops alltoall:block,bcast:binomial-fanout,...] [--max-launches 10] [--mpi openmpi]
        [--levels memory,nic,fabric,queue] [--table-sizes SIZES]
        [--mca btl_tcp_flags=send,inplace,need-ack,need-csum,hetero-rdma [--mca ...]]
        [--tcp-cc cubic] [--rounds K] [--runs K] [--store PATH [--tables RUN]]

The default --mca turns off the Open MPI TCP BTL's PUT protocol, under which a pair exchange
moves one direction at a time (give --mca none to keep Open MPI's defaults). Given --mca
settings replace the default, and the option repeats: adding --mca btl_tcp_eager_limit=4194304
--mca btl_tcp_max_send_size=4194304 to that one sends every message here eagerly. With --store
the results stay in that store, and --tables reuses a tables run already in it (measured on
a vcluster of the same rate), so the operations can be checked a few at a time.

--tcp-cc sets every node's TCP congestion control through `vcluster up --tcp-cc` (default:
the host's, which the nodes inherit). Under BBR a connection that idles while its rank
exchanges with another peer (recursive doubling) restarts well below the link rate, which no
pair table samples; see bench/results/predict-vcluster.md. --tcp-limit-output BYTES|kernel is
`vcluster up`'s: how much each TCP socket may keep in its node's own shaped queue (default: the
vcluster's 32 KiB; kernel: 4 MiB, so that the queue drops what a NIC would hold back).
--tcp-slow-start-after-idle 0|1 is `vcluster up`'s too: whether a connection idle past its
RTO restarts from the initial window (default: the kernel's, 1).

The tables are measured at the checked sizes and at every message size the checked patterns
send (the ring Allreduce's steps move size / p), so that each message is priced from cells and
from waits behind a stream of its own size (the predictor takes waits only from streams of
messages as large as the message or down to half its size); --table-sizes replaces that list.

--rounds K runs every check K times on the same tables and ends with how many rounds met both
goals in each cell (operation, p, size): cells whose launches come in modes, or whose
placements are measured within each other's noise, meet them in some rounds and not in others,
where a model error misses every time. --runs K is `validate predict --runs`: each placement
is run K times in turn and judged on the mean, its error the spread between the runs, which
one run's launches do not show (recursive doubling's 4x1 and 2x2 at 4 MiB, priced 0.3 %
apart, measured from 0.2 % one way to 0.7 % the other in eight runs on the same tables).

Where the prices hold answers' waits (contention level queue in the tables), the same runs
are judged again on the prices without them, cell by cell and in a closing count per round:
what the answer-wait pricing adds, with the measurement held fixed.

Each pair of placements is judged as `validate predict` judges it: where the tables' own
noise settles which is faster (resampled tables, commscope.predict.resolution), the measured
order must be the same or within the measurement's own noise of the predicted gap; where it
does not, the measured gap must agree with the predicted gap within two standard errors of
both.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

import numpy as np

from commscope import predict
from commscope.measure import vcluster
from commscope.units import parse_size_list

NO_PUT = "btl_tcp_flags=send,inplace,need-ack,need-csum,hetero-rdma"
GOAL_MEDIAN_ERROR = 0.15
OPS = (
    "alltoall:block,alltoall:pairwise,bcast:binomial-fanout,reduce:binomial,"
    "allreduce:recursive-doubling,allreduce:ring,allgather:ring,gather:linear"
)
REFUSED = 2  # the exit status of a request the MPI cannot run as modelled


def commscope(store: Path, *args: str, refusable: bool = False) -> str | None:
    """Run the CLI (argument list, no shell) and return its stdout; stop on failure.

    With ``refusable``, a refusal (exit 2) prints its reason and returns None.
    """
    argv = [sys.executable, "-m", "commscope", "--store", str(store), *args]
    out = subprocess.run(argv, capture_output=True, text=True)
    if refusable and out.returncode == REFUSED:
        print(f"  refused: {out.stderr.strip()}")
        return None
    if out.returncode != 0:
        sys.exit(f"commscope {' '.join(args)} failed: {out.stderr.strip()}")
    return out.stdout


def table_sizes(args: argparse.Namespace) -> str:
    """The checked sizes and every message the checked patterns send: what the tables measure."""
    if args.table_sizes:
        return str(args.table_sizes)
    checked = parse_size_list(args.sizes, "--sizes")
    sizes = set(checked)
    for op in args.ops.split(","):
        name, algorithm = op.split(":")
        for p in map(int, args.procs.split(",")):
            for size in checked:  # a ring Allreduce's steps move size / p, most others size
                (_, _, nbytes), _ = predict.build(name, p, size, algorithm, block=p).flat()
                sizes.update(int(m) for m in np.unique(nbytes))
    return ",".join(str(size) for size in sorted(sizes))


def validate(
    store: Path, args: argparse.Namespace, tables: str, op: str, p: str
) -> dict[int, tuple[bool, bool, float, float]] | None:
    """One operation at one p: print its rows and verdicts; per size, whether both goals are met
    and the median |error|, with the answers' waits priced and taken out of the same prices.

    None: the MPI cannot run the algorithm as modelled (refused), which misses no prediction.
    """
    name, algorithm = op.split(":")
    print(f"{name} ({algorithm}), p = {p}")
    text = commscope(
        store,
        "validate",
        "predict",
        "--op",
        name,
        "--algorithm",
        algorithm,
        "--np",
        p,
        "--mpi",
        args.mpi,
        "--tables",
        tables,
        "--sizes",
        args.sizes,
        "--max-launches",
        str(args.max_launches),
        "--repeats",
        str(args.runs),
        "--vcluster",
        "--json",
        refusable=True,
    )
    if text is None:
        return None
    out = json.loads(text)
    settings = {**out["mca"], **out["cvar"]}
    print("  run with " + " ".join(f"{k}={v}" for k, v in settings.items()))
    if rendezvous := out.get("rendezvous"):  # what the model leaves out at these sizes
        limit = rendezvous["eager_limit"]
        wait = rendezvous.get("answer_wait")
        waited = (
            f"; an answer waited {wait['wait_s']['p50'] * 1e3:.1f} ms (median) behind a"
            f" {wait['bytes']} B stream"
            if wait
            else ""
        )
        priced = "priced" if rendezvous.get("answers_priced") else "not priced"
        print(
            f"  messages up to {rendezvous['largest_message_bytes']} B, above the"
            f" {limit['setting']} of {limit['bytes']} B: rendezvous, answers behind busy queues"
            f" {priced}" + waited
        )
    # The last column is what the run spent beyond the rank-by-rank count without the answers'
    # waits: what the answers (and whatever else the count lacks) cost it, beside their price.
    print(
        "  placement, bytes, predicted ms (of it, answers waiting), measured ms, error,"
        " [measured less the count without the answers, ms]"
    )
    for c in out["placements"]:
        measured = c["measured_s"] if c["measured_s"] is not None else float("nan")
        error = c["relative_error"] if c["relative_error"] is not None else float("nan")
        launches = (  # a point on few valid launches is a thin one: said
            ""
            if c["valid_launches"] == c["launches"]
            else f"  (valid {c['valid_launches']} of {c['launches']},"
            f" {c['late_launches']} started late)"
        )
        answers = f"({c['answer_wait_s'] * 1e3:.1f})"
        spent = f"[{(measured - c['predicted_s'] + c['answer_wait_s']) * 1e3:+.1f}]"
        print(
            f"  {c['placement']:>5} {c['bytes']:>8} {c['predicted_s'] * 1e3:10.1f} {answers:>8}"
            f" {measured * 1e3:10.1f} {error:+7.1%} {spent:>9}{launches}"
        )
        if len(c["run_times_s"]) > 1:  # the mean's runs, each its MPIPerf time
            each = ["no valid launch" if t is None else f"{t * 1e3:.1f}" for t in c["run_times_s"]]
            print("    runs: " + ", ".join(each))
    # A point whose later-starting launches ran longer than their delay explains.
    for c in out["placements"]:
        if c.get("start_skew"):
            print(f"  ! {c['placement']} {c['bytes']} B: {c['start_skew']}")
    # Lost TCP segments stall a run (a retransmission timeout >= 200 ms): said per placement.
    lossy = {c["placement"]: c["tcp_loss_warnings"] for c in out["placements"]}
    for placement, warnings in lossy.items():
        for text in warnings:
            print(f"  ! {placement}: {text}")
    unpriced = unpriced_verdicts(store, args, tables, op, int(p), out) if any_priced(out) else {}
    met = {}
    for v in out["sizes"]:
        tau = v["kendall_tau"] if v["kendall_tau"] is not None else float("nan")
        med = v["median_relative_error"]
        med = med if med is not None else float("nan")
        # Tau's goal, pair by pair: an order where the tables settle one (or a measured gap
        # within both noises of it), else agreeing gaps.
        ok = bool(v["pairs_hit"]) and not v["unmeasured"] and med <= GOAL_MEDIAN_ERROR
        print(
            f"  {v['bytes']:>8} B: Kendall tau {tau:.2f} (goal 1), median |error| {med:.1%}"
            f" (goal <= 15 %){'' if ok else '  MISSED'}"
            f"{'; unmeasured: ' + ', '.join(v['unmeasured']) if v['unmeasured'] else ''}",
            flush=True,
        )
        for pair in v["pairs"]:
            print(f"    {pair['text']}")
        if int(v["bytes"]) in unpriced:
            ok_without, med_without = unpriced[int(v["bytes"])]
            print(
                f"    without the answers' waits: median |error| {med_without:.1%}"
                f"{'' if ok_without else '  MISSED'}"
            )
            met[int(v["bytes"])] = (ok, ok_without, med, med_without)
        else:  # nothing priced: the same verdict either way
            met[int(v["bytes"])] = (ok, ok, med, med)
    return met


def any_priced(out: dict) -> bool:
    """Whether any placement's price holds answers' waits."""
    return any(c["answer_wait_s"] > 0 for c in out["placements"])


def unpriced_verdicts(
    store: Path, args: argparse.Namespace, tables: str, op: str, p: int, out: dict
) -> dict[int, tuple[bool, float]]:
    """Per size, both goals met and the median |error| with the answers' waits taken out.

    Judges the placements `validate predict` measured as it judges them (resampled tables,
    ``validate.pairs``), on prices without the waits.
    """
    from commscope.data.store import Store
    from commscope.measure import mpi as mpi_mod
    from commscope.predict import cost_tables, resolution
    from commscope.validate import forcing
    from commscope.validate.pairs import judge_pairs
    from commscope.validate.placement_time import PlacementTime
    from commscope.validate.predict import checked_placements, pattern_of

    name, algorithm = op.split(":")
    family = mpi_mod.resolve(args.mpi).family
    forced = forcing.forced(name, forcing.algorithm_of(name, algorithm, family), family, p)
    state = vcluster.status()
    assert state is not None
    model = predict.model_from_vcluster([n.name for n in state.nodes], state.rate)
    with Store.open(store, write=False) as db:
        run_id, found = cost_tables.table_cells(db, tables, "no tables")
    resampled = resolution.resampled_costs(
        found, lambda t: predict.TableCost.from_tables(t, f"run {run_id}", model)
    )
    by_label = {pl.label: pl for pl in checked_placements(model, p)}
    verdicts = {}
    for size in {int(c["bytes"]) for c in out["placements"]}:
        mine = []
        for c in out["placements"]:
            if int(c["bytes"]) != size or c["measured_s"] is None:
                continue
            fields = {**c, "tcp_loss_warnings": (), "bbr_nodes": (), "run_times_s": ()}
            check = PlacementTime(**fields)
            price = check.predicted_s - check.answer_wait_s
            mine.append(
                replace(
                    check,
                    predicted_s=price,
                    answer_wait_s=0.0,
                    relative_error=(price - check.measured_s) / check.measured_s,
                )
            )
        pattern = pattern_of(forced, p, size, 0)
        pairs = judge_pairs(model, [by_label[c.placement] for c in mine], mine, pattern, resampled)
        med = statistics.median(abs(c.relative_error) for c in mine) if mine else float("nan")
        hit = bool(pairs) and all(pair.hit for pair in pairs)
        unmeasured = len(mine) < len({c["placement"] for c in out["placements"]})
        verdicts[size] = (hit and not unmeasured and med <= GOAL_MEDIAN_ERROR, med)
    return verdicts


def check(store: Path, args: argparse.Namespace, tables: str) -> int:
    """Every operation at every p against the tables run ``tables``, ``args.rounds`` times.

    With more than one round, ends with how many rounds met both goals in each cell: a cell
    whose launches come in modes, or whose placements sit within the noise of each other,
    meets them in some rounds and not others, where a model error misses in every one.
    """
    met: dict[tuple[str, str, int], list[bool]] = {}
    # The same runs judged on prices without the answers' waits: what the pricing adds alone.
    met_unpriced: dict[tuple[str, str, int], list[bool]] = {}
    errors: list[list[tuple[float, float]]] = []  # per round, each cell's median |error|
    for r in range(args.rounds):
        if args.rounds > 1:
            print(f"round {r + 1} of {args.rounds}")
        errors.append([])
        for op in args.ops.split(","):
            for p in args.procs.split(","):
                found = validate(store, args, tables, op, p) or {}
                for size, (ok, ok_without, med, med_without) in found.items():
                    met.setdefault((op, p, size), []).append(ok)
                    met_unpriced.setdefault((op, p, size), []).append(ok_without)
                    errors[-1].append((med, med_without))
    every = all(all(oks) for oks in met.values())
    if args.rounds > 1:
        print("rounds that met both goals, per operation, p and size:")
        for (op, p, size), oks in met.items():
            print(f"  {op:<30} p = {p:<3} {size:>8} B: {sum(oks)} of {len(oks)}")
        always = sum(all(oks) for oks in met.values())
        print(f"{always} of {len(met)} cells met both goals in every round")
    print(
        "answers' waits priced / left out of the same prices: cells that met both goals;"
        " median and largest of the cells' median |error|"
    )
    for r in range(args.rounds):
        with_waits = sum(oks[r] for oks in met.values() if len(oks) > r)
        without = sum(oks[r] for oks in met_unpriced.values() if len(oks) > r)
        priced_errors = [e for e, _ in errors[r] if math.isfinite(e)]
        unpriced_errors = [e for _, e in errors[r] if math.isfinite(e)]
        print(
            f"  round {r + 1}: {with_waits} / {without} of {len(met)};"
            f" {statistics.median(priced_errors):.1%} / {statistics.median(unpriced_errors):.1%};"
            f" {max(priced_errors):.1%} / {max(unpriced_errors):.1%}"
        )
    print("goals met" if every else "goals missed")
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=4)
    ap.add_argument("--rate", default="50mbit")
    ap.add_argument("--procs", default="4")
    ap.add_argument("--sizes", default="256K,1MiB,4MiB")
    ap.add_argument("--ops", default=OPS, help="OP:ALGORITHM,... (default: every modelled one)")
    ap.add_argument("--max-launches", type=int, default=10, help="per point: bounds the time")
    ap.add_argument("--mpi", default="openmpi")
    ap.add_argument(
        "--mca",
        action="append",
        help=f"NAME=VALUE for the tables and every run, repeatable, or none [default: {NO_PUT}]",
    )
    ap.add_argument(
        "--levels",
        default="memory,nic,fabric,queue",
        help="tables' contention levels (fabric: node pairs exchanging at once, --nodes >= 4;"
        " queue: how long an answer waits behind its node's outgoing stream)",
    )
    ap.add_argument(
        "--table-sizes",
        help="sizes the tables measure (default: --sizes and every message the --ops send)",
    )
    ap.add_argument("--tcp-cc", help="TCP congestion control of every node (default: the kernel's)")
    ap.add_argument(
        "--tcp-limit-output",
        help="bytes each TCP socket may queue in its node's shaped queue, or kernel"
        " (vcluster up --tcp-limit-output; default: the vcluster's)",
    )
    ap.add_argument(
        "--tcp-slow-start-after-idle",
        choices=("0", "1"),
        help="net.ipv4.tcp_slow_start_after_idle of every node (vcluster up's; default: the"
        " kernel's)",
    )
    ap.add_argument(
        "--rounds",
        type=int,
        default=1,
        help="run the checks this many times on the same tables and count, per cell, the"
        " rounds that met both goals",
    )
    ap.add_argument(
        "--runs",
        type=int,
        default=1,
        help="validate predict --runs: separate runs of each placement, judged on their mean"
        " with the spread between them",
    )
    ap.add_argument("--store", type=Path, help="keep the results in this store")
    ap.add_argument("--tables", help="a tables run already in --store: skip measuring them")
    args = ap.parse_args()
    if args.tables and not args.store:
        sys.exit("--tables RUN: give the --store that holds it")
    if args.rounds < 1:
        sys.exit(f"--rounds {args.rounds}: give 1 or more")
    if args.runs < 1:
        sys.exit(f"--runs {args.runs}: give 1 or more")
    sys.stdout.reconfigure(line_buffering=True)  # type: ignore[attr-defined]  # figures as they come
    if os.geteuid() != 0:
        sys.exit("bench/predict_vcluster.py: the virtual cluster needs root; run it as root")
    settings = args.mca or [NO_PUT]
    if "none" in settings or args.mpi != "openmpi":
        settings = []
    mca = [arg for setting in settings for arg in ("--mca", setting)]
    store = args.store or Path(tempfile.mkdtemp(prefix="commscope-bench-")) / "store.sqlite"
    given = " ".join(settings) or "none"
    print(f"{args.nodes} nodes at {args.rate}, {args.mpi}, mca: {given}; store {store}")
    commscope(store, "vcluster", "down")
    tcp = ["--tcp-cc", args.tcp_cc] if args.tcp_cc else []
    if args.tcp_limit_output:
        tcp += ["--tcp-limit-output", args.tcp_limit_output]
    if args.tcp_slow_start_after_idle:
        tcp += ["--tcp-slow-start-after-idle", args.tcp_slow_start_after_idle]
    try:
        commscope(store, "vcluster", "up", "--nodes", str(args.nodes), "--rate", args.rate, *tcp)
        state = vcluster.status()
        limit = state.tcp_limit_output if state else 0
        queued = f"{limit} bytes" if limit else "the kernel's default"
        print(f"each TCP socket may queue {queued} in its node's own shaped queue")
        if args.tables:
            print(f"tables: run {args.tables} of {store}")
            return check(store, args, args.tables)
        print(f"tables at {table_sizes(args)} B")
        tables = commscope(
            store,
            "run",
            "contention",
            "--vcluster",
            "--mpi",
            args.mpi,
            "--ranks-per-node",
            "2",
            "--levels",
            args.levels,
            "--sizes",
            table_sizes(args),
            "--json",
            "--quiet",
            *mca,
        )
        assert tables is not None
        run = json.loads(tables)["run"]
        print(commscope(store, "show", str(run)))
        return check(store, args, str(run))
    finally:
        commscope(store, "vcluster", "down")


if __name__ == "__main__":
    sys.exit(main())
