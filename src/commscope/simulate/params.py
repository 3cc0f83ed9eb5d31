"""Simulation parameters of a cluster model: link figures, SMPI factors, switch latency.

They live in the model's YAML file under ``simulation:`` (written by ``commscope simulate
calibrate``); anything left out comes from the model's channels, then from defaults::

    simulation:
      calibrated_from: run 12 (p2p, openmpi-4.1.4, 2 nodes)
      nic: {bandwidth: 117.9MB/s, latency: 7.6us}      # each NIC link, each direction
      memory: {bandwidth: 9.1GB/s, latency: 0.2us}     # each node's shared memory link
      switch_latency: 0us                              # added once to every inter-node route
      lat_factor: [[0, 1.0], [1024, 1.12], [65536, 1.9]]   # [from size, factor], SMPI's
      bw_factor: [[0, 0.4], [1024, 0.83], [65536, 0.94]]   # smpi/lat-factor and bw-factor
      crosstraffic: false                              # acks take reverse bandwidth
      core_speed: 12Gf                                 # flop/s of one model core (apps)
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from typing import Any

from commscope import strict
from commscope.errors import InputError
from commscope.limits import MAX_MESSAGE_BYTES
from commscope.predict.model import ClusterModel
from commscope.predict.model_yaml import RATE_FORMS, TIME_FORMS, parse_bandwidth, parse_latency

# Used when neither the model nor a calibration gives a figure: a GigE-like NIC and a
# node's memory copy rate (stated in every run's record, so nothing is hidden).
DEFAULT_NIC_BPS = 125e6
DEFAULT_NIC_LAT_S = 10e-6
DEFAULT_MEMORY_BPS = 10e9
DEFAULT_MEMORY_LAT_S = 0.2e-6

_KEYS = (
    "calibrated_from",
    "nic",
    "memory",
    "switch_latency",
    "lat_factor",
    "bw_factor",
    "send_overhead",
    "crosstraffic",
    "eager_bytes",
    "core_speed",
)
# Messages below this go eagerly, without waiting for the receive (as MPI's eager protocol:
# Open MPI's TCP and shared-memory eager limits are 64 KiB). SMPI's default, 0, delays every
# message until its receive is posted.
DEFAULT_EAGER_BYTES = 65536
MAX_FACTORS = 1000  # [from size, factor] pairs of one SMPI factor list
MAX_FACTOR = 1e6
# Parameters a sweep may vary: name -> (field, kind).
SWEEPABLE = {
    "nic_latency": ("nic_lat_s", "time"),
    "nic_bandwidth": ("nic_bw_Bps", "rate"),
    "memory_latency": ("memory_lat_s", "time"),
    "memory_bandwidth": ("memory_bw_Bps", "rate"),
    "switch_latency": ("switch_lat_s", "time"),
}

Factors = tuple[tuple[int, float], ...]
# A flop rate as SimGrid writes it: 1.5Gf, 800Mf, 2e9f.
SPEED_FORMS = "a number and f, kf, Mf, Gf or Tf (e.g. 12Gf)"
_SPEED = re.compile(r"([0-9]+(?:\.[0-9]*)?(?:[eE][-+]?[0-9]+)?)\s*([kMGT]?)f")
_SPEED_SCALE = {"": 1.0, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}


def parse_speed(value: Any) -> float | None:
    """A flop rate (flop/s) from text such as ``12Gf``; None when it is not one."""
    m = _SPEED.fullmatch(str(value).strip())
    if not m:
        return None
    speed = float(m.group(1)) * _SPEED_SCALE[m.group(2)]
    return speed if 0 < speed < 1e18 else None


@dataclass(frozen=True)
class SimParams:
    """Everything the platform and SMPI need beyond the model's shape.

    Attributes:
        nic_bw_Bps, nic_lat_s: each NIC link (one per node, each direction apart).
        memory_bw_Bps, memory_lat_s: each node's memory link, shared by its ranks' transfers.
        switch_lat_s: latency added once to every route between nodes.
        lat_factor, bw_factor: SMPI's piecewise factors ((from size, factor), ...); empty means
            SimGrid's own defaults (calibrated on TACC's Stampede), said in every run.
        send_overhead: seconds a sender spends on an eager message, per size segment
            ((from size, seconds), ...): SMPI's smpi/os, the same on every route.
        crosstraffic: whether acknowledgements take bandwidth in the reverse direction.
        eager_bytes: messages smaller than this are sent without waiting for their receive.
        calibrated_from: the measured run the factors come from, if any.
        core_flops: flop/s of one model core, for programs whose compute is simulated
            (``simulate app``, ``simulate hpl``); None: as fast as the simulating host.
        sources: where each link figure came from (calibration, model, default).
    """

    nic_bw_Bps: float
    nic_lat_s: float
    memory_bw_Bps: float
    memory_lat_s: float
    switch_lat_s: float = 0.0
    lat_factor: Factors = ()
    bw_factor: Factors = ()
    send_overhead: Factors = ()
    crosstraffic: bool = False
    eager_bytes: int = DEFAULT_EAGER_BYTES
    calibrated_from: str | None = None
    sources: tuple[tuple[str, str], ...] = ()
    core_flops: float | None = None

    @property
    def calibrated(self) -> bool:
        """True when the SMPI factors come from a measurement."""
        return bool(self.lat_factor or self.bw_factor)

    def with_value(self, name: str, text: str) -> SimParams:
        """A copy with one sweepable parameter set from text such as ``80us`` or ``10Gbit/s``."""
        if name not in SWEEPABLE:
            raise InputError(
                f"--sweep {name}: not a model parameter; choose from {', '.join(SWEEPABLE)}"
            )
        attr, kind = SWEEPABLE[name]
        value = parse_latency(text) if kind == "time" else parse_bandwidth(text)
        if value is None:
            forms = TIME_FORMS if kind == "time" else RATE_FORMS
            raise InputError(f"--sweep {name}={strict.shown(text)}: not a {kind}; use {forms}")
        # The field is named at run time (one of SWEEPABLE's float fields), so mypy cannot
        # match the keyword to a field; Any leaves that to replace(), which checks the name.
        changes: dict[str, Any] = {attr: value}
        return dataclasses.replace(self, **changes)

    def to_json(self) -> dict[str, Any]:
        """Plain dict in bytes/s and seconds, for run records."""
        return {
            "nic": {"bandwidth_Bps": self.nic_bw_Bps, "latency_s": self.nic_lat_s},
            "memory": {"bandwidth_Bps": self.memory_bw_Bps, "latency_s": self.memory_lat_s},
            "switch_latency_s": self.switch_lat_s,
            "lat_factor": [list(f) for f in self.lat_factor],
            "bw_factor": [list(f) for f in self.bw_factor],
            "send_overhead": [list(f) for f in self.send_overhead],
            "crosstraffic": self.crosstraffic,
            "eager_bytes": self.eager_bytes,
            "calibrated_from": self.calibrated_from,
            "sources": dict(self.sources),
            "core_flops": self.core_flops,
        }

    def to_yaml(self) -> dict[str, Any]:
        """The ``simulation:`` section of a model file."""
        return {
            "calibrated_from": self.calibrated_from,
            "nic": {
                "bandwidth": f"{self.nic_bw_Bps:.6g}B/s",
                "latency": f"{self.nic_lat_s * 1e6:.6g}us",
            },
            "memory": {
                "bandwidth": f"{self.memory_bw_Bps:.6g}B/s",
                "latency": f"{self.memory_lat_s * 1e6:.6g}us",
            },
            "switch_latency": f"{self.switch_lat_s * 1e6:.6g}us",
            "lat_factor": [[int(s), round(float(f), 6)] for s, f in self.lat_factor],
            "bw_factor": [[int(s), round(float(f), 6)] for s, f in self.bw_factor],
            **(
                {"send_overhead": [[int(s), float(f"{o:.6g}")] for s, o in self.send_overhead]}
                if self.send_overhead
                else {}
            ),
            "crosstraffic": self.crosstraffic,
            "eager_bytes": self.eager_bytes,
            **({"core_speed": f"{self.core_flops:.6g}f"} if self.core_flops else {}),
        }


def _factors(value: Any, field: str, where: str, zero: bool = False) -> Factors:
    bad = InputError(
        f"{where}: simulation.{field}: give a list of at most {MAX_FACTORS}"
        f" [from size, {'seconds' if zero else 'factor'}] pairs with sizes rising from 0"
        f" (at most {MAX_MESSAGE_BYTES}) and values {'of 0 or more' if zero else 'above 0'}"
        f" (at most {MAX_FACTOR:g})"
    )
    if value is None:
        return ()
    if not isinstance(value, list) or len(value) > MAX_FACTORS:
        raise bad
    out: list[tuple[int, float]] = []
    for item in value:
        if not isinstance(item, list) or len(item) != 2:
            raise bad
        try:
            out.append(
                (
                    strict.check_whole(item[0], 0, MAX_MESSAGE_BYTES),
                    strict.check_real(item[1], 0, MAX_FACTOR, above=not zero),
                )
            )
        except strict.NumberError:
            raise bad from None
    sizes = [s for s, _ in out]
    if out and (sizes[0] != 0 or sizes != sorted(set(sizes))):
        raise bad
    return tuple(out)


def _link(value: Any, field: str, where: str) -> tuple[float | None, float | None]:
    if value is None:
        return None, None
    if not isinstance(value, dict) or set(value) - {"bandwidth", "latency"}:
        raise InputError(f"{where}: simulation.{field}: expected {{bandwidth: .., latency: ..}}")
    bw = None if value.get("bandwidth") is None else parse_bandwidth(value["bandwidth"])
    lat = None if value.get("latency") is None else parse_latency(value["latency"])
    if value.get("bandwidth") is not None and bw is None:
        raise InputError(
            f"{where}: simulation.{field}.bandwidth:"
            f" {strict.shown(value['bandwidth'])} is not a bandwidth;"
            f" use {RATE_FORMS}"
        )
    if value.get("latency") is not None and lat is None:
        raise InputError(
            f"{where}: simulation.{field}.latency: {strict.shown(value['latency'])}"
            f" is not a latency; use {TIME_FORMS}"
        )
    return bw, lat


def params_for(model: ClusterModel, section: Any = None, where: str = "") -> SimParams:
    """Simulation parameters of ``model``.

    Each figure comes from the ``simulation:`` section, else the model's channels, else a
    default; ``sources`` says which.
    """
    where = where or model.source or model.name
    if section is None:
        section = {}
    if not isinstance(section, dict):
        raise InputError(f"{where}: simulation: expected a mapping with keys {', '.join(_KEYS)}")
    unknown = sorted(set(section) - set(_KEYS))
    if unknown:
        raise InputError(
            f"{where}: simulation.{strict.shown(unknown[0])}: unknown field;"
            f" expected one of {', '.join(_KEYS)}"
        )
    sources: list[tuple[str, str]] = []

    def pick(name: str, calibrated: float | None, nominal: float | None, default: float) -> float:
        if calibrated is not None:
            sources.append((name, "simulation section"))
            return calibrated
        if nominal is not None:
            sources.append((name, "model channels"))
            return nominal
        sources.append((name, "default"))
        return default

    nic_bw, nic_lat = _link(section.get("nic"), "nic", where)
    mem_bw, mem_lat = _link(section.get("memory"), "memory", where)
    switch = section.get("switch_latency")
    switch_s = 0.0 if switch is None else parse_latency(switch)
    if switch_s is None:
        raise InputError(
            f"{where}: simulation.switch_latency: {strict.shown(switch)} is not a"
            f" latency; use {TIME_FORMS}"
        )
    cross = section.get("crosstraffic", False)
    if not isinstance(cross, bool):
        raise InputError(f"{where}: simulation.crosstraffic: give true or false")
    eager = section.get("eager_bytes", DEFAULT_EAGER_BYTES)
    try:
        strict.check_whole(eager, 0, MAX_MESSAGE_BYTES)
    except strict.NumberError as err:
        raise InputError(f"{where}: simulation.eager_bytes: {err}") from None
    speed = section.get("core_speed")
    core_flops = None if speed is None else parse_speed(speed)
    if speed is not None and core_flops is None:
        raise InputError(
            f"{where}: simulation.core_speed: {strict.shown(speed)} is not a flop rate;"
            f" use {SPEED_FORMS}"
        )
    return SimParams(
        nic_bw_Bps=pick("nic bandwidth", nic_bw, model.nic.bandwidth_Bps, DEFAULT_NIC_BPS),
        nic_lat_s=pick("nic latency", nic_lat, model.nic.latency_s, DEFAULT_NIC_LAT_S),
        memory_bw_Bps=pick(
            "memory bandwidth", mem_bw, model.memory.bandwidth_Bps, DEFAULT_MEMORY_BPS
        ),
        memory_lat_s=pick("memory latency", mem_lat, model.memory.latency_s, DEFAULT_MEMORY_LAT_S),
        switch_lat_s=switch_s,
        lat_factor=_factors(section.get("lat_factor"), "lat_factor", where),
        bw_factor=_factors(section.get("bw_factor"), "bw_factor", where),
        send_overhead=_factors(section.get("send_overhead"), "send_overhead", where, zero=True),
        crosstraffic=cross,
        eager_bytes=eager,
        calibrated_from=None
        if section.get("calibrated_from") is None
        else str(section["calibrated_from"]),
        sources=tuple(sources),
        core_flops=core_flops,
    )
