"""What a run was measured under, and what changed since a baseline.

The facts come from what the run recorded: its MPI (tag and library version), launcher, ranks,
hosts, engine options, and from the engine's end records each host's kernel, CPU model and
TCP settings. A check names every difference; a figure that got worse under a changed
environment is not called a regression.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping
from typing import Any

from commscope.analysis import load
from commscope.data.run_data import RunData
from commscope.data.store import RunInfo

LOAD_MARGIN = 0.10  # more of a host's CPUs than the baseline's typical run saw taken by others

# Shown in a difference, in this order: key -> how a person names it.
NAMES = {
    "mpi": "MPI",
    "mpi_library": "MPI library",
    "launcher": "launcher",
    "nranks": "ranks",
    "hosts": "hosts",
    "kernel": "kernel",
    "cpu_model": "CPU model",
    "tcp_congestion_control": "TCP congestion control",
    "tcp_limit_output_bytes": "tcp_limit_output_bytes",
    "tcp_slow_start_after_idle": "tcp_slow_start_after_idle",
    "engine_options": "engine options",
}
_TCP = ("congestion_control", "tcp_limit_output_bytes", "tcp_slow_start_after_idle")


def _values(ends: list[dict[str, Any] | None], table: str, key: str) -> list[Any]:
    found = {h.get(key) for end in ends for h in (end or {}).get(table) or []}
    return sorted((v for v in found if v is not None), key=str)


def of_run(run: RunData) -> dict[str, Any]:
    """The environment ``run`` recorded (keys of :data:`NAMES`; empty lists when unknown)."""
    return of_parts(run.info, run.ends)


def of_parts(info: RunInfo, ends: list[dict[str, Any] | None]) -> dict[str, Any]:
    """The environment of a run from its row and its launches' end records alone.

    What :func:`of_run` gives, without reading the run's points (choosing among many runs).
    """
    header = info.header or {}
    out: dict[str, Any] = {
        "mpi": info.mpi,
        "mpi_library": (header.get("mpi") or {}).get("library_version"),
        "launcher": info.launcher,
        "nranks": info.nranks,
        "hosts": sorted({str(r["node"]) for r in header.get("ranks") or []}),
        "kernel": _values(ends, "load", "kernel"),
        "cpu_model": _values(ends, "load", "cpu_model"),
    }
    for key in _TCP:
        name = key if key.startswith("tcp_") else f"tcp_{key}"
        out[name] = _values(ends, "tcp_loss", key)
    out["engine_options"] = dict(header.get("options") or {})
    out["others_share"] = others_share(ends)
    return out


def others_share(ends: list[dict[str, Any] | None]) -> float | None:
    """The largest share of a host's CPUs other processes took during the run; None: unknown.

    Not a fact to compare (it is not in :data:`NAMES`): the load a baseline's runs saw, which
    a check's run must pass before its load is named.
    """
    shares = [h.others_share for end in ends for h in load.hosts(end) if h.others_share is not None]
    return max(shares) if shares else None


def typical_share(shares: Mapping[int, float | None]) -> float | None:
    """The baseline's load: the median of its runs' others' shares (None: none known).

    The typical run's, not the worst's: one loaded baseline run must not hide load from
    every later check.
    """
    known = [s for s in shares.values() if s is not None]
    return statistics.median(known) if known else None


def loaded_runs(shares: Mapping[int, float | None]) -> dict[int, str]:
    """Baseline runs the load monitor flagged: run id -> the cause, one phrase.

    A run is flagged when other processes took more than the load monitor's ``BUSY_SHARE``
    of a host's CPUs and more than ``LOAD_MARGIN`` beyond the runs' median share: the rule
    by which a check names a run's load (:func:`extra_load`), the median standing for the
    baseline.
    """
    typical = typical_share(shares) or 0.0
    out = {}
    for run, share in shares.items():
        if share is not None and share > load.BUSY_SHARE and share > typical + LOAD_MARGIN:
            out[run] = (
                f"loaded (other processes took {share:.0%} of a host's CPUs, the runs'"
                f" median {typical:.0%})"
            )
    return out


def extra_load(ends: list[dict[str, Any] | None], baseline_share: float | None) -> list[str]:
    """Hosts other processes loaded beyond what the baseline's typical run saw, one line each.

    The load monitor's share includes what the machine does for the ranks themselves (the
    launcher, the kernel's network work: 10-20 % of two CPUs on the virtual cluster), so a
    host is named only when it was busy (``analysis.load``) and others took ``LOAD_MARGIN``
    more than in the baseline's typical run (:func:`typical_share`).
    """
    seen = baseline_share or 0.0
    out = []
    for end in ends:
        for h in load.hosts(end):
            share = h.others_share
            if h.busy and share is not None and share > seen + LOAD_MARGIN:
                text = (
                    f"other processes took {share:.0%} of the {h.host_cpus} CPUs of"
                    f" {', '.join(h.nodes) or 'a host'} (the baseline's typical run: {seen:.0%})"
                )
                if text not in out:
                    out.append(text)
    return out


def _shown(value: Any) -> str:
    if isinstance(value, list):
        return ",".join(map(str, value)) or "-"
    return "-" if value is None else str(value)


def changes(baseline: Mapping[str, Any], now: Mapping[str, Any]) -> list[str]:
    """One phrase per difference, e.g. "MPI library: Open MPI v4.1.4 -> v5.0.3".

    A fact the baseline or the run did not record (None or empty) is not a difference.
    """
    out = []
    for key, name in NAMES.items():
        old, new = baseline.get(key), now.get(key)
        if old in (None, [], {}) or new in (None, [], {}) or old == new:
            continue
        if isinstance(old, dict) and isinstance(new, dict):
            diff = [
                f"{k} {_shown(old.get(k))} -> {_shown(new.get(k))}"
                for k in sorted(set(old) | set(new), key=str)
                if old.get(k) != new.get(k)
            ]
            out.append(f"{name}: " + "; ".join(diff))
        else:
            out.append(f"{name}: {_shown(old)} -> {_shown(new)}")
    return out


def hosts_differ(baseline: Mapping[str, Any], now: Mapping[str, Any]) -> bool:
    """Whether both recorded their hosts and the sets differ."""
    old, new = baseline.get("hosts") or [], now.get("hosts") or []
    return bool(old) and bool(new) and sorted(old) != sorted(new)
