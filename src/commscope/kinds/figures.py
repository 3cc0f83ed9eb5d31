"""Figures: the values of a run that a check, the history and the exporters can judge.

Each kind declares its figures (:class:`FigureSpec`: a stable name, a base unit, which
direction is better, and the tolerance class ``--tolerance`` names) and reads them off a run
(:class:`Figure`: the spec, labels that say where and at which size, and the raw samples in
the figure's unit). A figure's key, ``name{label="value",...}`` with the labels sorted, is
what a baseline stores and what ``history`` selects: it stays the same from run to run.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from commscope.analysis.curve import message_samples
from commscope.data.records import Point

# Raise it when a kind's figures are read off a run differently: the figure values a store
# keeps (data/store_figures) carry the version they were computed by, and older ones are
# computed again from the runs' points.
FIGURES_VERSION = 1
LOWER = "lower"
HIGHER = "higher"
# The classes --tolerance names: what kind of quantity a figure is.
TOLERANCE_CLASSES = ("latency", "bw", "time", "rate", "ratio", "compute")


@dataclass(frozen=True)
class FigureSpec:
    """What one figure of a kind is.

    Attributes:
        name: the stable metric name, e.g. ``p2p_latency_seconds`` (unit last, as
            Prometheus names them).
        unit: the base unit: ``seconds``, ``bytes_per_second``, ``flops``, ``ratio``,
            ``per_second``.
        better: ``lower`` or ``higher``.
        tolerance: the class ``--tolerance`` names it by (``latency``, ``bw``, ...).
        help: one line for the exporters and ``history``.
    """

    name: str
    unit: str
    better: str
    tolerance: str
    help: str

    def __post_init__(self) -> None:
        assert self.better in (LOWER, HIGHER), self.better
        assert self.tolerance in TOLERANCE_CLASSES, self.tolerance


@dataclass(frozen=True)
class Figure:
    """One measured figure of a run: its spec, where it was measured, its raw samples."""

    spec: FigureSpec
    labels: tuple[tuple[str, str], ...]  # sorted (name, value) pairs
    samples: tuple[float, ...] = field(repr=False)

    @property
    def key(self) -> str:
        """``name{label="value",...}``: the same for the same figure in every run."""
        return key_of(self.spec.name, dict(self.labels))

    @cached_property
    def center(self) -> float:
        """The median of the samples (NaN without samples)."""
        # statistics.median: a tenth of numpy's cost on the few samples a figure holds
        return float(statistics.median(self.samples)) if self.samples else float("nan")


def key_of(name: str, labels: Mapping[str, str]) -> str:
    """The key of figure ``name`` with ``labels``: ``name{a="1",b="x"}``, labels sorted."""
    if not labels:
        return name
    inner = ",".join(f'{k}="{labels[k]}"' for k in sorted(labels))
    return f"{name}{{{inner}}}"


def figure(spec: FigureSpec, samples: Sequence[float] | np.ndarray, **labels: object) -> Figure:
    """A figure of ``spec`` from finite, positive ``samples`` (others are dropped)."""
    found = np.asarray(samples, dtype=float)
    values = tuple(found[np.isfinite(found) & (found > 0)].tolist())
    return Figure(spec, tuple(sorted((k, str(v)) for k, v in labels.items())), values)


def point_time_samples(point: Point) -> np.ndarray:
    """A Point's kept samples as the time of one message (one-way for ping-pong)."""
    return message_samples(point)


def point_rate_samples(point: Point) -> np.ndarray:
    """A Point's kept samples as bytes per second (empty when no bytes move)."""
    kept = np.asarray(point.kept_samples_s, dtype=float)
    if point.bytes_per_sample <= 0 or kept.size == 0:
        return np.empty(0)
    with np.errstate(divide="ignore"):
        return point.bytes_per_sample / kept
