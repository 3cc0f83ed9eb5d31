"""Schema-valid mbw records from a known model of k pairs sharing one channel.

One pair sends a message every ``overhead_s + bytes / pair_Bps``; k pairs together move k times
that, capped by the channel's ``link_Bps``. A sample is the time in which all k windows arrive.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from commscope.data.record_parse import record_from_dict
from commscope.data.records import Point
from tests.synthetic_runs import store_records


@dataclass(frozen=True)
class Model:
    overhead_s: float = 0.5e-6  # per message and pair
    pair_Bps: float = 2e9  # noqa: N815 - one pair's copy rate
    link_Bps: float = 3e9  # noqa: N815 - what the pairs share
    window: int = 64

    def aggregate_Bps(self, k: int, size: int) -> float:  # noqa: N802
        one = size / (self.overhead_s + size / self.pair_Bps)
        return min(k * one, self.link_Bps)


def records(
    model: Model,
    ks: tuple[int, ...] = (1, 2, 4),
    sizes: tuple[int, ...] = (8, 1024, 1 << 20),
    pair: str = "inter-node",
) -> list[Point]:
    """One point per (k, size), three identical samples each."""
    out = []
    for k in ks:
        for size in sizes:
            moved = k * model.window * size
            sample = moved / model.aggregate_Bps(k, size)
            rec = record_from_dict(
                {
                    "type": "point",
                    "op": f"mbw_k{k}",
                    "pair": pair,
                    "ranks": [0, max(ks)],
                    "pairs": [[i, max(ks) + i] for i in range(k)],
                    "bytes": size,
                    "bytes_per_sample": moved,
                    "window": model.window,
                    "iters_per_sample": 1,
                    "warmup": 10,
                    "samples_s": [sample] * 3,
                    "stop": "rse",
                },
                f"synthetic mbw k={k} {size}",
            )
            assert isinstance(rec, Point)
            out.append(rec)
    return out


def store_run(path: Path, recs: list[Point], label: str = "mbw") -> int:
    """Store one complete run of mbw records and return its id."""
    return store_records(path, "mbw", recs, label, 8)
