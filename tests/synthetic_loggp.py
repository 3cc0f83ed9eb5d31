"""Schema-valid LogGP records built from known L, o_s, o_r, g, G (Netgauge's PRTT model).

Per size s: o_s(s) = o_s + Os s, o_r(s) = o_r + Or s, one way = o_s(s) + L + G s + o_r(s),
gap g(s) = g + G s; above ``switch_bytes`` a protocol switch adds ``switch_s`` to the one-way
time and to the gap. PRTT(1,0,s) = 2 one way, PRTT(n,0,s) = PRTT(1,0,s) + (n-1) g(s),
PRTT(n,d,s) = PRTT(1,0,s) + (n-1) (o_s(s) + d). Send and receive samples include one timer
call of ``timer_s``, as the engine's do.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from commscope.data.record_parse import record_from_dict
from commscope.data.records import LogGP
from commscope.units import netpipe_schedule
from tests.synthetic_runs import store_records


@dataclass(frozen=True)
class Model:
    L: float = 0.30e-6  # noqa: N815
    o_s: float = 0.20e-6
    o_r: float = 0.25e-6
    g: float = 0.40e-6
    G: float = 1.0e-10  # noqa: N815 - 10 GB/s
    Os: float = 0.2e-10  # noqa: N815 - per-byte send overhead (a copy)
    Or: float = 0.3e-10  # noqa: N815
    switch_bytes: int = 65536
    switch_s: float = 5e-6
    timer_s: float = 30e-9


def records(
    model: Model,
    sizes: list[int] | None = None,
    n: int = 10,
    samples: int = 11,
    noise: float = 0.0,
    stretched: dict[int, float] | None = None,
    pair: str = "intra-socket",
    seed: int = 1,
) -> list[LogGP]:
    """One record per size; ``noise`` is the relative SD of every sample, ``stretched`` maps
    sizes to a factor applied to all their PRTT(n,0,s) samples (a descheduled rank)."""
    rng = np.random.default_rng(seed)
    out = []
    for s in sizes if sizes is not None else netpipe_schedule(4 << 20, 0):
        extra = model.switch_s if s > model.switch_bytes else 0.0
        o_s, o_r = model.o_s + model.Os * s, model.o_r + model.Or * s
        one_way = o_s + model.L + model.G * s + o_r + extra
        gap = model.g + model.G * s + extra
        prtt1 = 2 * one_way
        d = 1.5 * prtt1
        factor = (stretched or {}).get(s, 1.0)

        def noisy(value: float, count: int) -> list[float]:
            return [float(value * (1 + noise * x)) for x in rng.standard_normal(count)]

        rec = record_from_dict(
            {
                "type": "loggp",
                "pair": pair,
                "ranks": [0, 1],
                "bytes": s,
                "n": n,
                "delay_s": d,
                "wait_s": 2 * d,
                "warmup": 10,
                "prtt_1_0_s": noisy(prtt1, samples),
                "prtt_n_0_s": noisy((prtt1 + (n - 1) * gap) * factor, samples),
                "prtt_n_d_s": noisy(prtt1 + (n - 1) * (o_s + d), samples),
                "send_s": noisy(o_s + model.timer_s, n * samples),
                "recv_s": noisy(o_r + model.timer_s, samples),
                "timer_s": [model.timer_s] * 64,
                "stop": "rse",
            },
            f"synthetic loggp {s}",
        )
        assert isinstance(rec, LogGP)
        out.append(rec)
    return out


def store_run(path: Path, recs: list[LogGP], label: str = "loggp") -> int:
    """Store one complete run of LogGP records and return its id."""
    return store_records(path, "loggp", recs, label, 2)
