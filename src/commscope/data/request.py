"""The request of an MPI run, as stored with it: what to launch and the engine's options.

``RunRequest.to_json()`` is the run's stored ``request_json``; ``from_json`` reads every request
stored so far, so a run stored by an earlier version still resumes. The engine options are
declared in ``engine/options.json``; :class:`EngineOptions` has one field per row
(tests/unit/test_engine_options.py keeps the two in step).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from commscope.errors import StoreError

Sizes = tuple[int, ...]


@dataclass(frozen=True)
class EngineOptions:
    """Options handed to the engine; None means not given (the engine's default applies)."""

    ops: str | None = None
    pairs: str | None = None
    timer: str | None = None
    sizes: Sizes | None = None
    coll_sizes: Sizes | None = None
    loggp_sizes: Sizes | None = None
    skip: str | None = None
    window: int | None = None
    recv_buffers: str | None = None
    window_bytes_cap: int | None = None
    warmup: int | None = None
    min_samples: int | None = None
    max_samples: int | None = None
    target_rse: float | None = None
    point_budget_s: float | None = None
    sample_min_s: float | None = None
    sync: str | None = None
    resync: str | None = None
    sync_d: int | None = None
    sync_rounds: int | None = None
    sync_span_s: float | None = None
    k: int | None = None
    k0: int | None = None
    g: float | None = None
    gamma: float | None = None
    stop: str | None = None
    min_valid: int | None = None
    max_launches: int | None = None
    coll_budget_s: float | None = None
    naive_iters: int | None = None
    root: int | None = None
    buffers: str | None = None
    check: int | None = None
    levels: str | None = None
    cf_max: int | None = None
    nruns: int | None = None
    reps: int | None = None
    in_flight: int | None = None
    idle_s: float | None = None
    pin: int | None = None
    block: int | None = None
    test_distort: str | None = None
    procs: str | None = None
    matrix_sizes: Sizes | None = None
    matrix_window: int | None = None
    matrix_samples: int | None = None
    matrix_plan: str | None = None
    matrix_prefix: str | None = None
    matrix_schedule: str | None = None
    matrix_per: str | None = None
    bisection_reps: int | None = None
    bisection_seed: int | None = None
    rma_ops: str | None = None
    rma_sync: str | None = None
    mbw_pairs: str | None = None

    def given(self) -> dict[str, Any]:
        """The options that are set, by name, in declaration order (size lists as tuples)."""
        return {
            f.name: getattr(self, f.name) for f in fields(self) if getattr(self, f.name) is not None
        }

    def to_json(self) -> dict[str, Any]:
        """The stored ``engine`` part: the options that are set, size lists as lists."""
        return {k: list(v) if isinstance(v, tuple) else v for k, v in self.given().items()}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> EngineOptions:
        """Read a stored ``engine`` part; a stored null reads as not given.

        Raises:
            StoreError: an option this version does not know.
        """
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise StoreError(
                f"stored request: engine option {unknown[0]!r} is unknown to this commscope;"
                " resume the run with the version that stored it"
            )
        values: dict[str, Any] = {
            k: tuple(v) if isinstance(v, list) else v for k, v in data.items()
        }
        return cls(**{k: v for k, v in values.items() if v is not None})

    def replace(self, **changes: Any) -> EngineOptions:
        """A copy with ``changes`` (None unsets an option)."""
        return dataclasses.replace(self, **changes)


# Request fields every stored MPI request has, with what requests from older versions lacked.
_DEFAULTS: dict[str, Any] = {"mpi": None, "launcher": "auto", "timeout_s": 3600.0}
_PARTS = ("mca", "vcluster", "placement", "slurm", "simulate", "cvar")
_OPTIONAL = ("confidence", *_PARTS)


@dataclass(frozen=True)
class RunRequest:
    """What an MPI run launches: benchmark, MPI, ranks, where, and the engine's options.

    ``vcluster``, ``placement``, ``slurm`` and ``simulate`` are the parts their own modules read
    and write (the virtual cluster, ``launch.Placement``, ``slurm.Allocation``, the simulator);
    None when the run has none. ``extra`` keeps stored fields this version does not know, so a
    request reads and writes back unchanged.
    """

    benchmark: str
    np: int
    engine: EngineOptions = field(default_factory=EngineOptions)
    mpi: str | None = None
    launcher: str = "auto"
    timeout_s: float = 3600.0
    confidence: float | None = None
    mca: dict[str, str] | None = None
    vcluster: dict[str, Any] | None = None
    placement: dict[str, Any] | None = None
    slurm: dict[str, Any] | None = None
    simulate: dict[str, Any] | None = None
    cvar: dict[str, str] | None = None  # MPICH's MPIR_CVAR_ settings, given or inherited
    extra: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """The stored shape: the fixed fields, the engine, the parts that are set, ``extra``."""
        out: dict[str, Any] = {
            "benchmark": self.benchmark,
            "mpi": self.mpi,
            "np": self.np,
            "launcher": self.launcher,
            "timeout_s": self.timeout_s,
        }
        if self.confidence is not None:
            out["confidence"] = self.confidence
        out["engine"] = self.engine.to_json()
        for name in _PARTS:
            value = getattr(self, name)
            if value is not None:
                out[name] = dict(value)
        out.update(self.extra)
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> RunRequest:
        """Read a stored request (any version's); missing fields take their old defaults.

        Raises:
            StoreError: not an MPI run's request (no benchmark or rank count).
        """
        if not isinstance(data.get("np"), int) or "engine" not in data:
            raise StoreError(
                "stored request: not an MPI run's request (no rank count or engine options)"
            )
        known = {"benchmark", "np", "engine", *_DEFAULTS, *_OPTIONAL}
        values = {k: data.get(k, default) for k, default in _DEFAULTS.items()}
        values.update({k: data[k] for k in _OPTIONAL if data.get(k) is not None})
        return cls(
            benchmark=str(data.get("benchmark", "")),
            np=data["np"],
            engine=EngineOptions.from_json(data["engine"] or {}),
            extra={k: v for k, v in data.items() if k not in known},
            **values,
        )

    def replace(self, **changes: Any) -> RunRequest:
        """A copy with ``changes``."""
        return dataclasses.replace(self, **changes)
