"""Check placement predictions against the same operation run for real on each placement.

For every placement of p ranks (one node or several) that the virtual cluster, a set of
hosts or a Slurm allocation can host, the engine runs the collective the prediction models
with the algorithm it models (the block All-to-all of Peryshkova and Kurnosov 2018,
contention-aware placement, by default; others forced through the MPI's settings, see
``forcing``), and the measured time (MPIPerf method, Kurnosov 2012) is set beside the
predicted one: per size, Kendall's tau between the two orders and the relative error of each
placement, and every pair of placements judged on its own (``validate.pairs``).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from scipy import stats as sps

from commscope import predict
from commscope.analysis import tcp_loss
from commscope.analysis.coll import CollSummary, summarize
from commscope.data.request import EngineOptions, RunRequest
from commscope.data.store import Store
from commscope.measure import runner
from commscope.measure.mpi import MPIInstall
from commscope.predict.answers import AnswerWaits
from commscope.predict.cost import CostModel
from commscope.validate.forcing import BLOCK_ALLTOALL, Forced
from commscope.validate.pairs import PairVerdict, judge_pairs
from commscope.validate.placement_time import PlacementTime

# Each measured point stops after MAX_LAUNCHES launches or its time budget, whichever comes
# first. The budget is POINT_BUDGET_S, raised to BUDGET_LAUNCHES times the slowest predicted
# launch of the placement: the method spends its first launches finding a start window, so a
# point of seconds-long launches needs room for a few dozen of them.
MAX_LAUNCHES = 40
POINT_BUDGET_S = 30.0
BUDGET_LAUNCHES = 20
MAX_BUDGET_S = 3600.0  # no point runs longer than an hour


def point_budget_s(predicted_s: list[float]) -> float:
    """Time budget of each point of one placement's run, from its predicted launch times."""
    finite = [t for t in predicted_s if math.isfinite(t)]
    return min(MAX_BUDGET_S, max(POINT_BUDGET_S, BUDGET_LAUNCHES * max(finite, default=0.0)))


@dataclass(frozen=True)
class SizeVerdict:
    """All placements at one size: does the predicted order match the measured one?"""

    bytes: int
    kendall_tau: float  # over the placements with a measured time (NaN below two)
    median_relative_error: float
    unmeasured: tuple[str, ...] = ()  # placements without a valid launch at this size
    pairs: tuple[PairVerdict, ...] = ()  # every pair of measured placements

    @property
    def pairs_hit(self) -> bool | None:
        """Every pair a hit (None: fewer than two placements measured)."""
        return all(p.hit for p in self.pairs) if self.pairs else None

    def to_json(self) -> dict[str, Any]:
        """Plain dict with full key names."""
        pairs = [{**asdict(p), "text": p.text()} for p in self.pairs]
        return {**asdict(self), "pairs": pairs, "pairs_hit": self.pairs_hit}


def over_runs(times_s: Sequence[float], ses_s: Sequence[float]) -> tuple[float, float]:
    """One placement's time over separate runs, and its standard error.

    The time is the mean of the runs' times (each its MPIPerf time); a run without a valid
    launch (NaN) is left out. The error is the larger of the spread between the runs (what
    moves from one run to the next beyond a run's own launches) and the runs' own SEs, each
    over the square root of the runs: with two or three runs the spread alone can read near 0
    by chance.
    """
    pairs = [(t, e) for t, e in zip(times_s, ses_s, strict=True) if math.isfinite(t)]
    if not pairs:
        return math.nan, math.nan
    if len(pairs) == 1:
        return pairs[0]
    times = [t for t, _ in pairs]
    root = math.sqrt(len(pairs))
    between = statistics.stdev(times) / root
    own = math.sqrt(statistics.fmean(e * e for _, e in pairs)) / root
    return statistics.fmean(times), max(between, own)


def checked_placements(model: predict.ClusterModel, procs: int) -> list[predict.Placement]:
    """Block-ordered placements, one socket per node: 1 x p on one node, n x c on several.

    These are the rows of Peryshkova and Kurnosov 2018's table.
    """
    return [
        pl for pl in predict.enumerate_placements(model, procs, ("block",)) if pl.sockets_used == 1
    ]


def site_request(
    site: dict[str, Any], model: predict.ClusterModel, placement: predict.Placement
) -> dict[str, Any]:
    """Request fields that run ``placement`` where ``site`` says.

    That is the virtual cluster's first nodes, or the model's named hosts by ssh or within a
    Slurm allocation.
    """
    if "vcluster" in site:
        return {
            "vcluster": dict(
                site["vcluster"], nodes=placement.nodes, ranks_per_node=placement.per_node
            )
        }
    names = [model.node_names[n] for n in placement.node_ids()]
    counts = [int((placement.node == n).sum()) for n in placement.node_ids()]
    hosts = {
        "placement": {
            "hosts": [[h, c] for h, c in zip(names, counts, strict=True)],
            "cores": [model.cores_per_node] * len(names),
        }
    }
    if "slurm" in site:
        return {**hosts, "launcher": "srun", "slurm": site["slurm"]}
    return hosts


def pattern_of(forced: Forced, procs: int, size: int, block: int) -> predict.Pattern:
    """The modelled steps of ``forced``'s algorithm (block 0: all ranks in one batch)."""
    return predict.build(forced.op, procs, size, forced.algorithm, block=block or procs)


def unpriced_levels(
    model: predict.ClusterModel,
    cost: CostModel,
    procs: int,
    forced: Forced = BLOCK_ALLTOALL,
    block: int = 0,
) -> list[str]:
    """Levels the placements use that ``cost`` cannot price (checked before running)."""
    missing: set[str] = set()
    pattern = pattern_of(forced, procs, 1 << 20, block)
    for pl in checked_placements(model, procs):
        missing.update(predict.predict(model, pl, pattern, cost).missing)
    return sorted(missing)


def measure(
    store: Store,
    mpi: MPIInstall,
    model: predict.ClusterModel,
    placement: predict.Placement,
    sizes: list[int],
    block: int,
    site: dict[str, Any],
    budget_s: float = POINT_BUDGET_S,
    mca: dict[str, str] | None = None,
    forced: Forced = BLOCK_ALLTOALL,
    cvar: dict[str, str] | None = None,
    max_launches: int = MAX_LAUNCHES,
) -> tuple[int, dict[int, CollSummary], list[dict[str, Any] | None]]:
    """Run the forced operation (default alltoall_block) on the placement's nodes.

    Returns the run's id, {bytes: the point's summary} and its segments' end records (TCP
    loss and congestion control); ``mca`` and ``cvar`` already hold the forced settings.
    """
    engine_op = forced.engine_op
    engine = EngineOptions(
        ops=engine_op,
        sizes=tuple(sizes),
        coll_sizes=tuple(sizes),
        block=block if engine_op == "alltoall_block" else None,
        max_launches=max_launches,
        coll_budget_s=budget_s,
        # Virtual nodes share this machine's cores. Pinned by global rank, the same ranks share
        # a core on every placement; the node rotation of the tables' runs (pin 1) would put
        # both ends of 2x2's inter-node ring hops on one core and slow 2x2 against 4x1.
        pin=2 if "vcluster" in site else 0,
    )
    request = RunRequest(
        benchmark="coll",
        mpi=mpi.choice,
        np=placement.p,
        timeout_s=1800.0,
        confidence=0.95,
        engine=engine,
        mca=mca or None,
        cvar=cvar or None,
        **site_request(site, model, placement),
    )
    run_id = store.create_run(
        "validate",
        f"predict {engine_op} {placement.label}",
        mpi.tag,
        mpi.launcher,
        placement.p,
        request.to_json(),
    )
    runner.run(store, run_id, request, mpi)
    ends = [seg.end for seg in store.segments(run_id)]
    return run_id, {c.bytes: summarize(c) for c in store.colls(run_id)}, ends


def check(
    store: Store,
    mpi: MPIInstall,
    model: predict.ClusterModel,
    cost: CostModel,
    procs: int,
    sizes: list[int],
    block: int,
    site: dict[str, Any],
    mca: dict[str, str] | None = None,
    forced: Forced = BLOCK_ALLTOALL,
    cvar: dict[str, str] | None = None,
    max_launches: int = MAX_LAUNCHES,
    resampled: Sequence[CostModel] = (),
    answers: AnswerWaits | None = None,
    runs: int = 1,
) -> tuple[list[PlacementTime], list[SizeVerdict]]:
    """Predict and measure every placement; judge the order per size.

    ``site`` says where the placements run: ``{"vcluster": {rate, subnet}}``, ``{"hosts":
    True}`` (the model's node names, by ssh) or ``{"slurm": allocation}``. ``forced`` is the
    operation and algorithm (default: the block All-to-all); ``mca`` and ``cvar`` are the
    runs' settings, the forced ones included. ``resampled``: cost models of the tables
    resampled (``resolution.resampled_costs``), which say what pairs the tables can order;
    without them every predicted gap counts as an order. ``answers``: the tables run's eager
    limit and answer waits, which price the rendezvous answers that race a busy queue.
    ``runs``: separate runs of each placement, judged on their mean (``over_runs``).

    Raises:
        ValueError: ``runs`` below 1.
    """
    if runs < 1:
        raise ValueError(f"runs: {runs}; give 1 or more")
    placements = checked_placements(model, procs)
    by_label = {pl.label: pl for pl in placements}
    predicted = {
        pl.label: [
            predict.predict(model, pl, pattern_of(forced, procs, size, block), cost, answers)
            for size in sizes
        ]
        for pl in placements
    }
    measured: dict[str, list[tuple[int, dict[int, CollSummary], list[Any]]]] = {}
    # Runs taken in turn, every placement once a round: what drifts on the machine meanwhile
    # falls on each placement alike.
    for _ in range(runs):
        for pl in placements:
            budget = point_budget_s([pr.time_s for pr in predicted[pl.label]])
            measured.setdefault(pl.label, []).append(
                measure(
                    store,
                    mpi,
                    model,
                    pl,
                    sizes,
                    block,
                    site,
                    budget,
                    mca,
                    forced,
                    cvar,
                    max_launches,
                )
            )
    checks = [
        _placement_check(pl, size, found, measured[pl.label])
        for pl in placements
        for size, found in zip(sizes, predicted[pl.label], strict=True)
    ]
    verdicts = []
    for size in sizes:
        at_size = [c for c in checks if c.bytes == size]
        # A point whose budget ran out before a valid launch has no time (NaN): left out of
        # the order and the errors, and named.
        mine = [c for c in at_size if math.isfinite(c.measured_s)]
        if len(mine) >= 2:
            tau = float(
                sps.kendalltau(
                    [c.predicted_s for c in mine], [c.measured_s for c in mine]
                ).statistic
            )
        else:
            tau = float("nan")
        med = statistics.median(abs(c.relative_error) for c in mine) if mine else float("nan")
        unmeasured = tuple(c.placement for c in at_size if c not in mine)
        pattern = pattern_of(forced, procs, size, block)
        pairs = judge_pairs(model, [by_label[c.placement] for c in mine], mine, pattern, resampled)
        verdicts.append(SizeVerdict(size, tau, med, unmeasured, pairs))
    return checks, verdicts


def _placement_check(
    pl: predict.Placement,
    size: int,
    found: predict.Prediction,
    runs: list[tuple[int, dict[int, CollSummary], list[Any]]],
) -> PlacementTime:
    """One placement at one size: its prediction against its runs' point at that size."""
    points = [measured[size] for _, measured, _ in runs]
    ends = [end for _, _, run_ends in runs for end in run_ends]
    t, se = over_runs([p.time_s for p in points], [p.se_s for p in points])
    skews = dict.fromkeys(p.start_skew.text() for p in points if p.start_skew)
    return PlacementTime(
        pl.label,
        pl.nodes,
        pl.per_node,
        size,
        found.time_s,
        t,
        (found.time_s - t) / t,
        runs[0][0],
        tuple(tcp_loss.warnings(ends)),
        tcp_loss.bbr_nodes(ends),
        sum(p.nt for p in points),
        sum(p.nc for p in points),
        sum(p.invalid_late for p in points),
        se,
        found.answer_wait_s,
        "; ".join(skews),
        tuple(p.time_s for p in points) if len(points) > 1 else (),
    )  # fmt: skip
