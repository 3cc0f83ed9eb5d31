"""Replay thousands of simulated nights through `check`'s verdicts, noise taken from real runs.

Real runs first: ``--runs`` p2p runs of one request on the 2-node virtual cluster (root), or
the runs of ``--store`` with ``--label``. Each figure's log center per run, less the figure's
median over the runs, is that run's residual; a run's residuals over all figures are kept
together, so figures that move together (one link's sizes) still do, and a run far off (a
loaded one) is replayed as it was, at the rate it was seen.

A simulated night is one real run's residual vector plus a small normal jitter (a smoothed
bootstrap: a tenth of each figure's robust spread; assumed: nights are exchangeable and
their noise is the runs' noise, one run a night). A series draws ``--baseline`` distinct real
runs for its baseline and its ``--nights`` checks from the other runs (a check night equal
to a baseline night would match it too well). Each real run keeps its load: the load
monitor's share of its hosts' CPUs taken by others, judged by the check's own rule against
the baseline's typical run (:func:`commscope.check.environment.extra_load`), so a loaded
night is excused as a check would excuse it. Verdicts, on the same series side by side:

* **one night**: :func:`commscope.check.verdict.judge` against the baseline;
* **confirmed**: the second look of :mod:`commscope.check.confirm`, the second run another
  night's draw (runs of one night share more than this assumes: optimistic for false alarms);
* **with history**: the confirmed verdict with the history's (what ``check`` gives by
  default): :func:`commscope.check.steps.search` over every night of the series so far (the
  baseline's nights, then each check's first run; a second look is not a night), applied by
  :func:`commscope.check.history_verdict.applied`.

A series is a baseline of ``--baseline`` nights, ``--lead`` unchanged check nights (so that
the history holds the 12 nights it needs), then ``--nights`` check nights, the ones counted; in
the step rows the step starts with the first counted night.

Measured: CRITICAL checks of an unchanged cluster (per check and per 1,000 nights, with
Clopper-Pearson 95 % intervals), and a step of 20 % and of 10 % on the inter-node figures
(latency up, bandwidth down): the share of series whose step is named CRITICAL (an
inter-node figure CRITICAL) within 3 and within 5 nights. Prints the figures; not a test.

    flock /tmp/commscope-bench.lock .venv/bin/python bench/check_replay.py [--runs 12]
        [--series 1000] [--nights 10] [--lead 10] [--store S --label L] [--seed 1]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

import numpy as np
from scipy import stats

from commscope.check import confirm, environment, history_verdict, steps
from commscope.check.baseline import Baseline, figure_bases
from commscope.check.changes import Series
from commscope.check.verdict import Verdict, judge
from commscope.data.run_data import RunData, read_run
from commscope.data.store import Store
from commscope.kinds import run_figures
from commscope.kinds.figures import Figure, figure
from commscope.status import CRITICAL

BASELINE = 5  # nights a baseline takes by default (docs/check.md)
WITHIN = (3, 5)  # a step counts as found when named CRITICAL within this many check nights
DAY = 86400.0
VERDICTS = ("one night", "confirmed", "with history")
JITTER = 0.1  # the smoothed bootstrap's normal jitter, in each figure's robust spread
REQUEST = ["run", "p2p", "--vcluster", "--sizes", "8,64KiB,1MiB", "--label", "replay"]


def commscope(store: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, COMMSCOPE_STORE=str(store))
    return subprocess.run(
        [sys.executable, "-m", "commscope", *args], capture_output=True, text=True, env=env
    )


def measure_runs(store: Path, runs: int, rate: str) -> None:
    """``runs`` p2p runs on a fresh 2-node virtual cluster at ``rate``."""
    from commscope.measure import vcluster

    if vcluster.status() is not None:
        raise SystemExit("a vcluster is up: run 'commscope vcluster down' first")
    vcluster.up(2, rate)
    try:
        for i in range(runs):
            out = commscope(store, *REQUEST, "--json", "--quiet")
            if out.returncode != 0:
                raise SystemExit(out.stderr)
            print(f"real run {i + 1}/{runs}: {json.loads(out.stdout)['run']}", flush=True)
    finally:
        vcluster.down()


def real_runs(store: Path, label: str) -> list[RunData]:
    """Every complete run labelled ``label``, oldest first."""
    with Store.open(store, write=False) as s:
        infos = [i for i in s.list_runs() if i.label == label and i.status == "complete"]
        return [read_run(s, i.id) for i in infos]


class Noise:
    """Per figure its median log center and robust spread; per run its residual vector."""

    def __init__(self, real: list[RunData]) -> None:
        runs = [run_figures(r) for r in real]
        self.ends = [r.ends for r in real]
        self.shares = [environment.others_share(r.ends) for r in real]
        keys = set.intersection(*({f.key for f in r if f.samples and f.center > 0} for r in runs))
        self.keys = sorted(keys)
        self.spec = {f.key: f for f in runs[0] if f.key in keys}
        y = np.array([[math.log(_by_key(r)[k].center) for k in self.keys] for r in runs])
        self.center = np.median(y, axis=0)
        self.residuals = y - self.center
        mad = np.median(np.abs(self.residuals), axis=0) / 0.6745
        self.spread = np.where(mad > 0, mad, np.std(self.residuals, axis=0))

    def night(self, rng: np.random.Generator, run: int, step: np.ndarray) -> np.ndarray:
        """Real run ``run``'s night: its log centers, jittered, ``step`` added to each."""
        jitter = JITTER * self.spread * rng.standard_normal(len(self.keys))
        return self.center + self.residuals[run] + jitter + step

    def figures(self, y: np.ndarray) -> list[Figure]:
        return [
            figure(self.spec[k].spec, [math.exp(v)], **dict(self.spec[k].labels))
            for k, v in zip(self.keys, y, strict=True)
        ]


def _by_key(figures: list[Figure]) -> dict[str, Figure]:
    return {f.key: f for f in figures}


def step_of(noise: Noise, size: float) -> np.ndarray:
    """A step of ``size`` on the inter-node figures, in each one's worse direction."""
    out = np.zeros(len(noise.keys))
    for i, k in enumerate(noise.keys):
        f = noise.spec[k]
        if dict(f.labels).get("pair") == "inter-node":
            out[i] = math.log(1 + size) if f.spec.better == "lower" else -math.log(1 + size)
    return out


def series(
    noise: Noise, rng: np.random.Generator, base: int, lead: int, nights: int, step: np.ndarray
):
    """Per counted check night: (one night's verdict, confirmed, with the history's).

    ``lead`` unchanged check nights come first (not counted); ``step`` is added from the
    first counted night on.
    """
    zero = np.zeros(len(noise.keys))
    order = rng.permutation(len(noise.residuals))
    chosen, others = order[:base], order[base:]
    base_y = [noise.night(rng, int(r), zero) for r in chosen]
    ids = tuple(range(1, base + 1))
    shares = {i: noise.shares[int(r)] for i, r in zip(ids, chosen, strict=True)}
    loaded = environment.loaded_runs(shares)
    typical = environment.typical_share(shares)
    bases = figure_bases([noise.figures(y) for y in base_y], ids, loaded)
    baseline = Baseline("replay", 0.0, ids, "p2p", {}, {}, bases)
    history = list(base_y)  # each night's first run, log values, oldest first

    def night(shift: np.ndarray) -> tuple[np.ndarray, list[str]]:
        run = int(rng.choice(others))
        return noise.night(rng, run, shift), environment.extra_load(noise.ends[run], typical)

    out: list[tuple[Verdict, Verdict, Verdict]] = []
    for n in range(lead + nights):
        shift = zero if n < lead else step
        y, load = night(shift)
        history.append(y)
        run_id = base + 1 + n
        first = noise.figures(y)
        one = judge(baseline, run_id, first, {}, 0.0, load=load)
        both = one
        if confirm.second_look(one):
            y2, load2 = night(shift)
            again = (noise.figures(y2), [], load2)
            both = confirm.confirmed(baseline, one, first, 10_000 + n, again, {})
        if n < lead:
            continue
        found = steps.search(history_series(noise, history), max(ids))
        out.append((one, both, history_verdict.applied(both, found)))
    return out


def history_series(noise: Noise, history: list[np.ndarray]) -> list[Series]:
    """Each figure's series over the nights so far (run ids 1, 2, ..., a night apart)."""
    runs = tuple(range(1, len(history) + 1))
    dates = tuple(DAY * r for r in runs)
    values = np.exp(np.array(history))
    return [
        Series(k, noise.spec[k].spec.better, runs, dates, tuple(values[:, i]))
        for i, k in enumerate(noise.keys)
    ]


def interval(k: int, n: int) -> tuple[float, float]:
    """Clopper-Pearson 95 % interval of k in n."""
    lo = stats.beta.ppf(0.025, k, n - k + 1) if k else 0.0
    hi = stats.beta.ppf(0.975, k + 1, n - k) if k < n else 1.0
    return float(lo), float(hi)


def named_step(v: Verdict) -> bool:
    return any(f.status == CRITICAL and f.labels.get("pair") == "inter-node" for f in v.figures)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=12, help="real runs to measure")
    p.add_argument("--rate", default="400mbit")
    p.add_argument(
        "--store", help="take the real runs from this store (measured into it when it has none)"
    )
    p.add_argument("--label", default="replay", help="the label of the real runs")
    p.add_argument("--series", type=int, default=1000)
    p.add_argument("--baseline", type=int, default=BASELINE, help="runs a baseline takes")
    p.add_argument("--nights", type=int, default=10, help="check nights per series, counted")
    p.add_argument(
        "--lead", type=int, default=10, help="unchanged check nights before the counted ones"
    )
    p.add_argument("--seed", type=int, default=1)
    args = p.parse_args()
    if args.store:
        store = Path(args.store)
    else:
        store = Path(tempfile.mkdtemp(prefix="check-replay-")) / "store.sqlite"
    if not store.exists() or not real_runs(store, args.label):
        measure_runs(store, args.runs, args.rate)
    runs = real_runs(store, args.label)
    if len(runs) < args.baseline + 3:
        raise SystemExit(
            f"{store}: {len(runs)} complete runs labelled {args.label}; need {args.baseline + 3}"
        )
    noise = Noise(runs)
    rng = np.random.default_rng(args.seed)
    spread = noise.spread
    known = [x for x in noise.shares if x is not None]
    print(f"noise from {len(runs)} real runs, {len(noise.keys)} figures; robust spread per"
          f" figure: median {np.median(spread):.1%}, max {np.max(spread):.1%}; others took"
          f" {min(known, default=0):.0%}-{max(known, default=0):.0%} of a host's CPUs")  # fmt: skip

    zero = np.zeros(len(noise.keys))
    checks = []
    for _ in range(args.series):
        checks += series(noise, rng, args.baseline, args.lead, args.nights, zero)
    n = len(checks)
    print(f"\nunchanged cluster, {args.series} series x {args.nights} checks ({n} checks;"
          f" {args.lead} nights before them):")  # fmt: skip
    for pick, name in enumerate(VERDICTS):
        k = sum(1 for night in checks if night[pick].status == CRITICAL)
        lo, hi = interval(k, n)
        print(f"  {name:12} CRITICAL in {k} checks: {k / n:.2%} per check"
              f" [{lo:.2%}, {hi:.2%}], {1000 * k / n:.1f} per 1,000 nights")  # fmt: skip
        tripped = Counter(
            f.key for night in checks for f in night[pick].figures if f.status == CRITICAL
        )
        for key, count in tripped.most_common(3):
            print(f"    {count:5} x {key}")

    for size in (0.2, 0.1):
        step = step_of(noise, size)
        count = max(20, args.series // 5)
        found = {(pick, w): 0 for pick in range(len(VERDICTS)) for w in WITHIN}
        for _ in range(count):
            nights = series(noise, rng, args.baseline, args.lead, max(WITHIN), step)
            for pick, w in found:
                found[pick, w] += any(named_step(night[pick]) for night in nights[:w])
        print(f"\na {size:.0%} step on the inter-node figures, {count} series:")
        for pick, name in enumerate(VERDICTS):
            cells = []
            for w in WITHIN:
                lo, hi = interval(found[pick, w], count)
                cells.append(f"within {w} nights {found[pick, w]}/{count} [{lo:.0%}, {hi:.0%}]")
            print(f"  {name:12} " + "; ".join(cells))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
