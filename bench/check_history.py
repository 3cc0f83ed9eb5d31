"""The history verdict's search on simulated nights: one bad night, and steps of 10 and 20 %.

Each series is one figure's nights: log values with a run-to-run spread of 3 % (normal), no
step, or a step from a known night; the search is the one `check` runs
(:func:`commscope.check.steps.search`, one figure alone at q = 1 %). Printed side by side,
with 95 % Clopper-Pearson intervals:

- how often a step is found at all, and one past a 10 % tolerance, in series with no step,
  with tonight three times slower, and with last night three times slower;
- how often a step of 10 % and 20 % is found with its right first night, on its nights 3, 4
  and 5 (it cannot be found before its third night).

Run: python bench/check_history.py [SERIES] [NIGHTS]   (defaults: 1000 series of 20 nights)
"""

from __future__ import annotations

import sys

import numpy as np
from scipy import stats

from commscope.check.changes import Series
from commscope.check.steps import search

SPREAD = 0.03


def series(y: np.ndarray) -> Series:
    n = len(y)
    runs = tuple(range(1, n + 1))
    return Series("x", "lower", runs, tuple(float(i) for i in range(n)), tuple(np.exp(y)))


def share(hits: int, total: int) -> str:
    low, high = stats.binomtest(hits, total).proportion_ci(0.95, method="exact")
    return f"{hits / total:6.1%} [{low:.1%}, {high:.1%}]"


def main() -> None:
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
    nights = int(sys.argv[2]) if len(sys.argv) > 2 else 20
    rng = np.random.default_rng(2026)
    print(f"{count} series of {nights} nights, run-to-run spread {SPREAD:.0%}, q = 1 % alone")
    print(f"{'series':28} {'a step found':>24} {'a step past 10 %':>24}")
    for name, night in (("no step", None), ("tonight 3x slower", -1), ("last night 3x", -2)):
        found = past = 0
        for _ in range(count):
            y = rng.normal(0, SPREAD, nights)
            if night is not None:
                y[night] += np.log(3.0)
            steps = search([series(y)], held_run=0).steps.values()
            found += bool(steps)
            past += any(abs(s.worse_by) > 0.1 for s in steps)
        print(f"{name:28} {share(found, count):>24} {share(past, count):>24}")
    print(f"{'step, found at its night':28} {'night 3':>24} {'night 4':>24} {'night 5':>24}")
    for size in (0.10, 0.20):
        hits = dict.fromkeys((3, 4, 5), 0)
        for _ in range(count):
            y = rng.normal(0, SPREAD, nights + 2)
            start = nights - 3
            y[start:] += np.log(1 + size)
            for night in hits:  # the history as it stands on the step's night 3, 4, 5
                part = y[: start + night]
                steps = search([series(part)], held_run=0).steps
                hits[night] += "x" in steps and steps["x"].change.index == start
        cells = " ".join(f"{share(h, count):>24}" for h in hits.values())
        print(f"{f'{size:.0%} step':28} {cells}")


if __name__ == "__main__":
    main()
