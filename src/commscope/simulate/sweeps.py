"""A model's parameters swept: one simulated run per value, the others at the model's values."""

from __future__ import annotations

from typing import Any, NamedTuple

from commscope.errors import UsageError
from commscope.predict.model import ClusterModel
from commscope.simulate.params import SWEEPABLE, SimParams
from commscope.simulate.setup import with_taper


class Swept(NamedTuple):
    """One run of a sweep: its label, the model and parameters it runs on, its record.

    The record (parameter, value as given, value in seconds, bytes/s or the taper's ratio)
    goes into the run's request, so a report can line the runs of one sweep up.
    """

    label: str
    model: ClusterModel
    params: SimParams
    record: dict[str, Any] | None


def expand_sweeps(specs: list[str], model: ClusterModel, params: SimParams) -> list[Swept]:
    """Every run: one per value of each swept parameter, the others at the model's values."""
    if not specs:
        return [Swept("", model, params, None)]
    out: list[Swept] = []
    for spec in specs:
        name, _, values = spec.partition("=")
        if not values:
            raise UsageError(f"--sweep {spec}: give NAME=V1,V2,... (e.g. nic-latency=80us,400us)")
        # Spelled with '-' on the command line, '_' in the model's names (and the labels).
        name = name.replace("-", "_")
        for value in values.split(","):
            label = f"{name}={value}"
            if name == "taper":
                taper = _ratio(value, f"--sweep {label}")
                tapered = with_taper(model, params, taper, f"--sweep {label}")
                record = {"parameter": name, "value": value, "si_value": taper}
                out.append(Swept(label, tapered, params, record))
                continue
            swept = params.with_value(name, value)
            record = {
                "parameter": name,
                "value": value,
                "si_value": getattr(swept, SWEEPABLE[name][0]),
            }
            out.append(Swept(label, model, swept, record))
    return out


def _ratio(text: str, flag: str) -> float:
    """A taper as given: ``2`` or ``2:1``."""
    head, _, tail = text.partition(":")
    try:
        value = float(head)
        if tail and float(tail) != 1.0:
            raise ValueError
    except ValueError:
        raise UsageError(f"{flag}: not a taper; give down over up links, e.g. 2 or 2:1") from None
    if not 0 < value < 1e6:
        raise UsageError(f"{flag}: a taper is a positive ratio, e.g. 1 (full bisection) or 2")
    return value
