"""A figure over every stored run: what ``commscope history`` and the report's trend show.

A selector names a figure and, optionally, some of its labels, in Prometheus' notation:
``p2p_latency_seconds`` (every pair and size), ``p2p_latency_seconds{pair="inter-node",
bytes="8"}`` (one). Label values may be quoted or bare.

For change points (:mod:`commscope.check.changes`) the runs are grouped first: a figure's
series is made of the runs of one request on one set of hosts (:func:`groups_of`); within
it, a changed environment starts a new part (:func:`series_of`).
"""

from __future__ import annotations

import bisect
import json
import operator
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from commscope.check import environment
from commscope.check.baseline import Baseline
from commscope.check.changes import Break, Change, Series
from commscope.check.verdict import DEFAULT_TOLERANCE
from commscope.data.run_data import RunData
from commscope.data.store import RunInfo
from commscope.data.store_figures import FigureValue
from commscope.errors import UsageError
from commscope.kinds import run_figures
from commscope.kinds.figures import LOWER, FigureSpec, key_of
from commscope.strict import shown

# Request fields that differ between runs of one request: a check's run takes the shorter of
# the baseline's timeout and its own, and each Slurm job has its own id and nodes (the hosts
# a run recorded stand for the nodes).
VOLATILE_REQUEST = ("timeout_s", "slurm")
_RUN, _VALUE = operator.attrgetter("run_id"), operator.attrgetter("value")
# A selector is read token by token, each pattern matched once from where the last ended and
# none with a quantifier over a group: the time grows with the selector's length, never with
# its square (one regular expression over the whole label list backtracked for minutes on a
# few thousand spaces).
_NAME = re.compile(r"[a-z][a-z0-9_]*")
_LABEL_NAME = re.compile(r"\s*([a-z_]+)\s*=\s*")
_QUOTED = re.compile(r'"([^"]*)"\s*')
_BARE = re.compile(r'[^,"]*')
_SPACE = re.compile(r"\s*")
FIX = 'give a figure name such as p2p_latency_seconds or p2p_latency_seconds{pair="inter-node"}'


@dataclass(frozen=True)
class Selector:
    """A figure name and the labels its figures must carry."""

    name: str
    labels: dict[str, str]

    def matches(self, labels: Mapping[str, str]) -> bool:
        """Whether figure labels ``labels`` carry every label of the selector."""
        return all(labels.get(k) == v for k, v in self.labels.items())


def parse_selector(text: str, names: Iterable[str]) -> Selector:
    """Read ``name{label="value",...}``; ``names`` are the figure names the kinds declare.

    A quoted value may hold commas; a bare one ends at the next comma, its spaces stripped.
    Read in one pass (see :data:`_NAME`): a selector of any length is read or refused in
    time proportional to its length.

    Raises:
        UsageError: malformed, or no kind declares the name.
    """
    whole = text.strip()
    found = _NAME.match(whole)
    rest = whole[found.end() :] if found else ""
    if not found or (rest and not (rest.startswith("{") and rest.endswith("}"))):
        raise UsageError(f"{shown(text)} is not a figure selector; {FIX}")
    name = found.group()
    known = sorted(names)
    if name not in known:
        raise UsageError(f"no figure is named {shown(name)}; figures: {', '.join(known)}")
    return Selector(name, _labels(text, rest[1:-1]))


def _labels(text: str, inner: str) -> dict[str, str]:
    """The ``label="value"`` pairs between a selector's braces, commas between them."""
    labels: dict[str, str] = {}
    at = 0
    while True:
        space = _SPACE.match(inner, at)
        at = space.end() if space else at
        if at == len(inner):
            return labels
        if inner[at] == ",":  # an empty part, as in {a="1",}
            at += 1
            continue
        label = _LABEL_NAME.match(inner, at)
        quoted = _QUOTED.match(inner, label.end()) if label else None
        value = quoted or (_BARE.match(inner, label.end()) if label else None)
        end = value.end() if value else at
        if label is None or value is None or (end < len(inner) and inner[end] != ","):
            comma = inner.find(",", at)
            part = inner[at : comma if comma >= 0 else len(inner)].strip()
            raise UsageError(f'{shown(text)}: {shown(part)} is not label="value"; {FIX}')
        labels[label.group(1)] = quoted.group(1) if quoted else value.group().strip()
        at = end + 1 if end < len(inner) else end


@dataclass(frozen=True)
class HistoryPoint:
    """One figure of one run."""

    run_id: int
    created_unix: float
    label: str | None
    key: str
    labels: dict[str, str]
    center: float
    n_samples: int
    unit: str

    def to_json(self) -> dict[str, Any]:
        """Plain dict with full key names."""
        return {
            "run": self.run_id,
            "created_unix": self.created_unix,
            "label": self.label,
            "key": self.key,
            "labels": self.labels,
            "value": self.center,
            "n_samples": self.n_samples,
            "unit": self.unit,
        }


def points(
    values: Iterable[FigureValue], runs: Iterable[RunInfo], selector: Selector
) -> list[HistoryPoint]:
    """The selected figures among ``values`` (the store's figure values of ``runs``)."""
    by_id = {info.id: info for info in runs}
    out = []
    for v in values:
        info = by_id.get(v.run_id)
        if info is not None and v.name == selector.name and selector.matches(v.labels):
            key, labels = key_of(v.name, v.labels), dict(v.labels)
            when, label, n = info.created_unix, info.label, v.n_samples
            out.append(HistoryPoint(v.run_id, when, label, key, labels, v.value, n, v.unit))
    return out


@dataclass(frozen=True)
class TrendSeries:
    """One baseline figure over the runs, with the limit a check would hold it to."""

    key: str
    unit: str
    better: str
    center: float
    limit: float  # the value past which a check may call it worse (tolerance or L_C)
    # (run id, created_unix, value, status a recorded check gave the run, or None)
    points: list[tuple[int, float, float, str | None]]
    changes: tuple[Change, ...] = ()  # its change points in the baseline's series


def trend(
    baseline: Baseline,
    runs: Sequence[RunData],
    verdicts: Mapping[int, Mapping[str, Any]],
    most: int = 12,
    changes: Mapping[str, Sequence[Change]] | None = None,
) -> list[TrendSeries]:
    """The baseline's key figures over ``runs``: first those a recorded check flagged.

    Args:
        baseline: the baseline whose figures and limits are drawn.
        runs: the runs to draw, oldest first.
        verdicts: per run id, the check verdicts recorded with it, by baseline name
            (``{"status", "flagged"}``).
        most: how many figures at most.
        changes: per figure key, its change points (:func:`trend_keys` names the keys).
    """
    mine = {rid: v[baseline.name] for rid, v in verdicts.items() if baseline.name in v}
    keys = trend_keys(baseline, verdicts, most)
    values: dict[str, list[tuple[int, float, float, str | None]]] = {k: [] for k in keys}
    for run in runs:
        status = mine.get(run.info.id, {}).get("status")
        for f in run_figures(run):
            if f.key in values and f.samples:
                values[f.key].append((run.info.id, run.info.created_unix, f.center, status))
    limits = baseline.limits()
    out = []
    for key in keys:
        base = baseline.figures[key]
        share = max(DEFAULT_TOLERANCE, limits[key].decision or 0.0)
        limit = base.center * (1 + share if base.better == LOWER else max(0.0, 1 - share))
        found = tuple((changes or {}).get(key, ()))
        out.append(TrendSeries(key, base.unit, base.better, base.center, limit, values[key], found))
    return out


def trend_keys(
    baseline: Baseline, verdicts: Mapping[int, Mapping[str, Any]], most: int = 12
) -> list[str]:
    """The figures a trend draws: first those a recorded check flagged, then the baseline's."""
    mine = [v[baseline.name] for v in verdicts.values() if baseline.name in v]
    flagged = [k for v in mine for k in v.get("flagged", []) if k in baseline.figures]
    return list(dict.fromkeys([*flagged, *baseline.figures]))[:most]


def of_baseline(baseline: Baseline) -> Callable[[Group], bool]:
    """A test of whether a group is the baseline's series: its request on its hosts."""
    request = {k: v for k, v in baseline.request.items() if k not in VOLATILE_REQUEST}
    hosts = tuple(sorted(baseline.environment.get("hosts") or []))

    def picks(group: Group) -> bool:
        same = json.dumps(group.request, sort_keys=True, default=str) == json.dumps(
            request, sort_keys=True, default=str
        )
        return group.kind == baseline.kind and same and group.hosts == hosts

    return picks


@dataclass(frozen=True)
class Group:
    """Runs of one request on one set of hosts, oldest first: the runs of a figure's series.

    Attributes:
        kind: the runs' kind.
        request: the request they share (without :data:`VOLATILE_REQUEST`).
        hosts: the hosts they recorded (empty when they recorded none, as imports).
        runs: their ids.
        dates: their creation times.
        breaks: (run id, what changed) where a run's environment differs from the one before.
    """

    kind: str
    request: dict[str, Any]
    hosts: tuple[str, ...]
    runs: tuple[int, ...]
    dates: tuple[float, ...]
    breaks: tuple[tuple[int, tuple[str, ...]], ...]

    def title(self) -> str:
        """'p2p runs 3-40 (12) on n0,n1'."""
        hosts = ",".join(self.hosts) or "unrecorded hosts"
        return f"{self.kind} runs {self.runs[0]}-{self.runs[-1]} ({len(self.runs)}) on {hosts}"


def groups_of(
    runs: Sequence[RunInfo], environments: Mapping[int, Mapping[str, Any]]
) -> list[Group]:
    """The runs grouped by request and hosts, each group oldest first, by its first run."""
    found: dict[str, list[RunInfo]] = {}
    for info in sorted(runs, key=lambda r: r.id):
        request = {k: v for k, v in info.request.items() if k not in VOLATILE_REQUEST}
        hosts = environments.get(info.id, {}).get("hosts") or []
        key = json.dumps([info.kind, request, sorted(hosts)], sort_keys=True, default=str)
        found.setdefault(key, []).append(info)
    out = []
    for members in found.values():
        first = members[0]
        breaks = []
        for before, now in zip(members, members[1:], strict=False):
            changed = environment.changes(
                environments.get(before.id, {}), environments.get(now.id, {})
            )
            if changed:
                breaks.append((now.id, tuple(changed)))
        out.append(
            Group(
                kind=first.kind,
                request={k: v for k, v in first.request.items() if k not in VOLATILE_REQUEST},
                hosts=tuple(sorted(environments.get(first.id, {}).get("hosts") or [])),
                runs=tuple(r.id for r in members),
                dates=tuple(r.created_unix for r in members),
                breaks=tuple(breaks),
            )
        )
    return out


def series_of(
    group: Group,
    values: Iterable[FigureValue],
    specs: Mapping[str, FigureSpec],
    selector: Selector | None = None,
) -> list[Series]:
    """Each selected figure of the group's runs as a series, its breaks at its own runs."""
    members = set(group.runs)
    dates = dict(zip(group.runs, group.dates, strict=True))
    by_key: dict[str, list[FigureValue]] = {}
    # A figure's labels are one object in every run the store read: its key is made once.
    keys: dict[tuple[str, int], str | None] = {}
    for v in values:
        if v.run_id not in members:
            continue
        ident = (v.name, id(v.labels))
        if ident not in keys:
            chosen = selector is None or (v.name == selector.name and selector.matches(v.labels))
            keys[ident] = key_of(v.name, v.labels) if chosen and v.name in specs else None
        key = keys[ident]
        if key is not None:
            by_key.setdefault(key, []).append(v)
    out = []
    for key, found in by_key.items():
        found.sort(key=_RUN)  # the store gives them in run order; computed ones were merged
        runs = tuple(map(_RUN, found))
        breaks: dict[int, list[str]] = {}
        for run, changed in group.breaks:  # at the first run of the new environment it has
            index = bisect.bisect_left(runs, run)
            if 0 < index < len(runs):
                merged = breaks.setdefault(index, [])
                merged += [c for c in changed if c not in merged]
        out.append(
            Series(
                key,
                specs[found[0].name].better,
                runs,
                tuple(map(dates.__getitem__, runs)),
                tuple(map(_VALUE, found)),
                tuple(Break(i, tuple(c)) for i, c in sorted(breaks.items())),
                specs[found[0].name].unit,
            )
        )
    return out
