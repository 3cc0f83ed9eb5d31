"""What a node's P_peak is made of, as stored in a node run's request.

P_peak = cores x clock x DP flops per cycle per core. ``commscope.measure.compute.cpu`` reads
the parts from this machine; analysis and the report read them back from the store.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

FLAGS_SOURCE = "/proc/cpuinfo flags"
OVERRIDE_SOURCE = "--peak-ghz"
BUSY_SOURCE = "commscope-clock"


@dataclass(frozen=True)
class FlopsPerCycle:
    """Double-precision flops one core can retire per cycle, and where the number came from."""

    value: float
    isa: str  # e.g. "avx2+fma", or "given" for an override
    why: str
    source: str


@dataclass(frozen=True)
class Clock:
    """The clock P_peak assumes, in GHz, and where it came from."""

    ghz: float
    source: str


@dataclass(frozen=True)
class BusyClock:
    """The clock measured on cpus kept busy all at once by ``commscope-clock``."""

    ghz: float  # the fastest cpu's best repeat
    cpus: tuple[int, ...]
    per_cpu_ghz: tuple[float, ...]  # the best repeat of each cpu, in the order of ``cpus``
    method: str  # what was timed, e.g. "dependent 64-bit integer additions, 1 cycle each"

    def to_json(self) -> dict[str, Any]:
        """Plain dict, as stored in a node run's request."""
        return {
            "ghz": self.ghz,
            "cpus": list(self.cpus),
            "per_cpu_ghz": list(self.per_cpu_ghz),
            "method": self.method,
            "source": BUSY_SOURCE,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> BusyClock:
        """Rebuild a clock stored by ``to_json``."""
        return cls(
            float(data["ghz"]),
            tuple(int(c) for c in data.get("cpus", ())),
            tuple(float(g) for g in data.get("per_cpu_ghz", ())),
            str(data.get("method", "")),
        )


def _cpus_text(cpus: Iterable[int]) -> str:
    listed = list(cpus)
    return f"cpu{'s' if len(listed) != 1 else ''} {','.join(map(str, listed))}"


@dataclass(frozen=True)
class PeakModel:
    """What P_peak is made of for one machine; ``None`` parts are unknown.

    ``clock`` is the nominal clock (or the --peak-ghz override); ``busy`` holds the busy clock
    measured per core count; ``busy_error`` says why it was not measured, when it was not.
    """

    model: str
    flops_per_cycle: FlopsPerCycle | None
    clock: Clock | None
    busy: Mapping[int, BusyClock] = field(default_factory=dict)
    busy_error: str | None = None

    def clock_for(self, cores: int) -> Clock | None:
        """The clock P_peak of ``cores`` cores assumes.

        The --peak-ghz override when given, else the higher of the nominal clock and the busy
        clock measured on those cores.
        """
        nominal = self.clock
        if nominal is not None and nominal.source == OVERRIDE_SOURCE:
            return nominal
        busy = self.busy.get(cores)
        if busy is not None and (nominal is None or busy.ghz > nominal.ghz):
            return Clock(busy.ghz, f"busy clock measured by {BUSY_SOURCE}")
        return nominal

    @property
    def per_core_gflops(self) -> float | None:
        """Peak of one core in GFLOPS at the nominal clock, None when a part is unknown."""
        if self.flops_per_cycle is None or self.clock is None:
            return None
        return self.clock.ghz * self.flops_per_cycle.value

    def peak_gflops(self, cores: int) -> float | None:
        """P_peak of ``cores`` cores in GFLOPS (cores x ``clock_for(cores)`` x flops/cycle)."""
        clk = self.clock_for(cores)
        if self.flops_per_cycle is None or clk is None:
            return None
        return cores * clk.ghz * self.flops_per_cycle.value

    def clock_text(self, cores: int) -> str:
        """Where the clock of ``cores`` cores came from, naming both clocks when both exist."""
        nominal, busy = self.clock, self.busy.get(cores)
        if nominal is not None and nominal.source == OVERRIDE_SOURCE:
            return OVERRIDE_SOURCE
        parts = []
        if busy is not None:
            at_once = " at once" if len(busy.cpus) > 1 else ""
            on = f"{_cpus_text(busy.cpus)} busy{at_once}"
            parts.append(f"busy clock {busy.ghz:.3f} GHz measured by {BUSY_SOURCE} on {on}")
        elif self.busy_error:
            parts.append(f"busy clock not measured: {self.busy_error}")
        if nominal is not None:
            parts.append(f"nominal clock {nominal.ghz:.3f} GHz from {nominal.source}")
        used = self.clock_for(cores)
        if busy is not None and nominal is not None and used is not None:
            parts.append("the higher is used")
        return "; ".join(parts) or "unknown"

    def derivation(self, cores: int) -> str:
        """P_peak spelled out, with where the clock and the flops per cycle came from."""
        fpc, clk = self.flops_per_cycle, self.clock_for(cores)
        if fpc is None or clk is None:
            missing = [
                name
                for name, part in (("--peak-flops-per-cycle", fpc), (OVERRIDE_SOURCE, clk))
                if part is None
            ]
            return f"P_peak unknown for {self.model}: give {' and '.join(missing)}"
        how = f"{fpc.isa} in {fpc.source}, {fpc.why}" if fpc.source == FLAGS_SOURCE else fpc.source
        return (
            f"P_peak = {cores} core{'s' if cores != 1 else ''} x {clk.ghz:.3f} GHz x"
            f" {fpc.value:g} flops/cycle = {self.peak_gflops(cores):.1f} GFLOPS"
            f" (clock: {self.clock_text(cores)}; flops/cycle: {how})"
        )

    def with_busy(self, busy: Mapping[int, BusyClock], error: str | None = None) -> PeakModel:
        """This model with busy clocks per core count (and why some are missing)."""
        return PeakModel(self.model, self.flops_per_cycle, self.clock, dict(busy), error)

    def to_json(self) -> dict[str, Any]:
        """Plain dict, as stored in a node run's request."""
        return {
            "model": self.model,
            "flops_per_cycle": asdict(self.flops_per_cycle) if self.flops_per_cycle else None,
            "clock": asdict(self.clock) if self.clock else None,
            "per_core_gflops": self.per_core_gflops,
            "busy_clock": {str(c): b.to_json() for c, b in sorted(self.busy.items())},
            "busy_clock_error": self.busy_error,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> PeakModel:
        """Rebuild a model stored by ``to_json`` (runs stored before busy clocks have none)."""
        fpc, clock = data.get("flops_per_cycle"), data.get("clock")
        busy = data.get("busy_clock") or {}
        return cls(
            str(data.get("model", "")),
            FlopsPerCycle(**fpc) if fpc else None,
            Clock(**clock) if clock else None,
            {int(c): BusyClock.from_json(b) for c, b in busy.items()},
            data.get("busy_clock_error"),
        )
