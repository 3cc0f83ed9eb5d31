"""Simulated runs in the HTML report: the model each ran on, network load, parameter sweeps.

``build(runs)`` returns the ``simulation`` context, None when no run of the report is
simulated; ``simulation_section.html.j2`` shows it once per report. Per simulated run: the
model and placement, the link figures and where the SMPI factors come from, the SimGrid
version and the wall time. Runs traced with ``--netload`` add the table of Rechistov et al.
2012 (cluster simulation) of what each link carried. Runs of one sweep (``simulate run
--sweep NAME=...``: same parameter, benchmark, model and ranks) line up as a sensitivity
table, each point's time per value, with a plot of time relative to the first value and a
plain-language verdict: Rechistov et al. found their cluster insensitive to switch latency
below 400 us.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from markupsafe import Markup

from commscope.data.run_data import RunData
from commscope.report.plotting import figure, finish, to_svg
from commscope.report.simulation_agreement import validations
from commscope.simulate import agreement, netload
from commscope.units import percent_text, size_text

INSENSITIVE = 0.05  # a point that moves less than this over the whole sweep is insensitive
_PLOTTED_POINTS = 8


@dataclass(frozen=True)
class Sweep:
    """The runs of one sweep, ordered by the swept value, and each point's times."""

    parameter: str
    title: str  # benchmark, model and ranks
    runs: list[int]
    values: list[str]  # as given on the command line
    si_values: list[float]  # seconds or bytes/s
    rows: list[tuple[agreement.Key, list[float], float]]  # key, time per value, change

    @property
    def unit(self) -> tuple[str, float]:
        """Axis label and scale for the swept values."""
        if "latency" in self.parameter:
            return "us", 1e6
        if self.parameter == "taper":
            return "leaf down links : up links", 1.0
        return "Gbit/s", 8e-9

    def largest(self) -> tuple[agreement.Key, float] | None:
        """The point the sweep moves most, and its change first -> last value."""
        changes = [(key, c) for key, _v, c in self.rows if not math.isnan(c)]
        return max(changes, key=lambda kc: abs(kc[1])) if changes else None


def point_text(key: agreement.Key) -> str:
    """A point's name: "alltoall 1 MiB (192 ranks)", "pingpong 8 B (inter-node)"."""
    _kind, op, where, size = key
    return f"{op} {size_text(size)} ({where})"


def _wall_s(run: RunData) -> float | None:
    segs = run.segments
    if not segs or segs[-1].ended_unix is None:
        return None
    return segs[-1].ended_unix - segs[0].started_unix


def _run_row(run: dict[str, Any]) -> dict[str, Any]:
    sim = run["info"].request["simulate"]
    params = sim["params"]
    placement = sim.get("placement") or {}
    return {
        "name": run["name"],
        "id": run["info"].id,
        "simgrid": sim.get("simgrid"),
        "model": (sim.get("model") or {}).get("name", ""),
        "placement": placement.get("label", ""),
        "np": sim.get("np"),
        "nic": params["nic"],
        "memory": params["memory"],
        "switch_latency_s": params.get("switch_latency_s", 0.0),
        "factors": sim.get("factors", ""),
        "wall_s": _wall_s(run["run"]),
        "sweep": sim.get("sweep"),
        "netload": netload.stored_view(run["run"].netload) if run["run"].netload else None,
    }


def _sweep_key(run: dict[str, Any]) -> tuple[str, str] | None:
    info = run["info"]
    sim = info.request["simulate"]
    sweep = sim.get("sweep")
    if not sweep:
        return None
    model = (sim.get("model") or {}).get("name", "model")
    return sweep["parameter"], f"{info.kind} on {sim.get('np')} ranks of {model}"


def sweeps(runs: Sequence[dict[str, Any]]) -> list[Sweep]:
    """The sweeps among ``runs`` (simulated runs with a sweep record), two values at least."""
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for r in runs:
        key = _sweep_key(r)
        if key is not None:
            groups.setdefault(key, []).append(r)
    out = []
    for (parameter, title), members in groups.items():
        members.sort(key=lambda r: r["info"].request["simulate"]["sweep"]["si_value"])
        if len(members) < 2:
            continue
        ids = [r["info"].id for r in members]
        times = [
            agreement.point_times(r["run"].points, r["run"].colls, r["run"].contentions)
            for r in members
        ]
        records = [r["info"].request["simulate"]["sweep"] for r in members]
        out.append(
            Sweep(
                parameter,
                title,
                ids,
                [str(x["value"]) for x in records],
                [float(x["si_value"]) for x in records],
                agreement.sensitivity(times),
            )
        )
    return out


def sweep_plot(sweep: Sweep) -> str:
    """Each point's time relative to its time at the first value, against the swept value."""
    unit, scale = sweep.unit
    x = [v * scale for v in sweep.si_values]
    rows = sweep.rows
    if len(rows) > _PLOTTED_POINTS:  # the most and least sensitive, and some between
        ranked = sorted(rows, key=lambda r: abs(r[2]) if not math.isnan(r[2]) else -1.0)
        step = (len(ranked) - 1) / (_PLOTTED_POINTS - 1)
        rows = [ranked[round(i * step)] for i in range(_PLOTTED_POINTS)]
    with figure((7.0, 3.4)) as (fig, (ax,)):
        for i, (key, values, _change) in enumerate(rows):
            if values[0] > 0:
                ax.plot(
                    x,
                    [v / values[0] for v in values],
                    "o-",
                    color=f"C{i % 10}",
                    markersize=3.5,
                    label=point_text(key),
                )
        ax.axhline(1.0 + INSENSITIVE, color="grey", linestyle=":", linewidth=1)
        finish(ax, f"{sweep.parameter} ({unit})", "time / time at the first value")
        return to_svg(fig)


def sweep_findings(sweep: Sweep) -> list[str]:
    """Which points the swept parameter moves, in plain words."""
    changes = [(key, c) for key, _v, c in sweep.rows if not math.isnan(c)]
    if not changes:
        return []
    span = f"{sweep.parameter} from {sweep.values[0]} to {sweep.values[-1]}"
    calm = [k for k, c in changes if abs(c) < INSENSITIVE]
    key, worst = max(changes, key=lambda kc: abs(kc[1]))
    if len(calm) == len(changes):
        return [
            f"{sweep.title}: insensitive to {span}; no point moves {percent_text(INSENSITIVE)}"
            f" or more (largest: {point_text(key)}, {worst:+.1%})."
        ]
    return [
        f"{sweep.title}: {span} moves {point_text(key)} by {worst:+.1%};"
        f" {len(calm)} of {len(changes)} points move less than"
        f" {percent_text(INSENSITIVE)}."
    ]


def what_matters(found: Sequence[Sweep]) -> list[str]:
    """Per benchmark and model swept in two parameters or more: the parameters by effect.

    The one-at-a-time answer to the question of Rechistov et al. 2012: which of the
    network's parameters, each over its swept range, moves the run's times most.
    """
    by_title: dict[str, list[tuple[Sweep, agreement.Key, float]]] = {}
    for sweep in found:
        top = sweep.largest()
        if top is not None:
            by_title.setdefault(sweep.title, []).append((sweep, *top))
    out = []
    for title, effects in by_title.items():
        if len({s.parameter for s, _k, _c in effects}) < 2:
            continue
        effects.sort(key=lambda e: -abs(e[2]))
        parts = [
            f"{s.parameter} {s.values[0]} to {s.values[-1]} moves {point_text(key)} by {c:+.1%}"
            for s, key, c in effects
        ]
        first, change = effects[0][0].parameter, effects[0][2]
        verdict = (
            f"{first} matters most"
            if abs(change) >= INSENSITIVE
            else f"none of them moves a point {percent_text(INSENSITIVE)} or more"
        )
        out.append(f"{title}: {'; '.join(parts)}: {verdict}.")
    return out


def build(runs: Sequence[dict[str, Any]]) -> dict[str, Any] | None:
    """The report's simulation context, or None without simulated runs."""
    simulated = [r for r in runs if (r["info"].request or {}).get("simulate")]
    if not simulated:
        return None
    found = sweeps(simulated)
    return {
        "runs": [_run_row(r) for r in simulated],
        # SVG that matplotlib produced from numbers and escaped labels.
        "sweeps": [
            {
                "sweep": s,
                "plot": Markup(sweep_plot(s)),
                "findings": sweep_findings(s),
                "points": [(point_text(k), v, c) for k, v, c in s.rows],
            }
            for s in found
        ],
        "what_matters": what_matters(found),
        "validations": validations(simulated),
    }
