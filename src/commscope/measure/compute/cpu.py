"""CPU facts for the node benchmark: cores, clock, double-precision flops per cycle, P_peak.

P_peak = cores x clock x DP flops per cycle per core: the figure Linpack efficiency divides by.

Flops per cycle come from the vector and FMA features listed in /proc/cpuinfo, assuming two
FMA units per core (or, without FMA, one add and one multiply unit), as on x86 server cores
since Haswell and Zen 2:

    ========================  ==================  =========================================
    features                  DP flops per cycle  why
    ========================  ==================  =========================================
    avx512f and fma           32                  2 FMA units x 8 doubles x 2 flops
    avx2 and fma              16                  2 FMA units x 4 doubles x 2 flops
    avx                       8                   1 add + 1 multiply unit x 4 doubles
    sse2                      4                   1 add + 1 multiply unit x 2 doubles
    ========================  ==================  =========================================

Cores with one 512-bit FMA unit (some Xeon Silver and Bronze) or 128-bit FMA pipes (AMD Zen 1)
reach half of this; other architectures list no such features. Give --peak-flops-per-cycle
there.

Two clocks are read, and P_peak uses the higher, so it stays an upper bound and efficiency is
never overstated:

- the nominal clock: cpufreq's ``cpuinfo_max_freq`` when the kernel exposes it (the highest
  clock a core may run at), else the "cpu MHz" line of /proc/cpuinfo, the highest among the
  cpus used. Without cpufreq (common in virtual machines) that line is usually the nominal
  clock, and a boosting core runs faster: Linpack then beat a P_peak derived from it;
- the busy clock: measured by ``commscope-clock`` (``busyclock``) on the very cpus a core
  count's Linpack runs on, all of them busy at once, since the clock of a core falls as more
  cores of the chip work. It counts one-cycle dependent integer additions per second.

--peak-ghz overrides both. Every value is stored with its source, and the derivation printed
for each core count shows both clocks.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path

from commscope.data.peak import (
    FLAGS_SOURCE,
    Clock,
    FlopsPerCycle,
    PeakModel,
)

CPUINFO = Path("/proc/cpuinfo")
SYSFS_CPU = Path("/sys/devices/system/cpu")
# (features that must all be present, flops per cycle, explanation), best first.
FLOPS_TABLE: tuple[tuple[tuple[str, ...], int, str], ...] = (
    (("avx512f", "fma"), 32, "2 FMA units x 8 doubles x 2 flops"),
    (("avx2", "fma"), 16, "2 FMA units x 4 doubles x 2 flops"),
    (("avx",), 8, "1 add + 1 multiply unit x 4 doubles"),
    (("sse2",), 4, "1 add + 1 multiply unit x 2 doubles"),
)


def flops_per_cycle(flags: Iterable[str]) -> FlopsPerCycle | None:
    """DP flops per cycle per core from /proc/cpuinfo feature flags (see the module's table).

    Returns:
        The best matching row, or None when no row matches (not x86, or too old).
    """
    have = set(flags)
    for needs, value, why in FLOPS_TABLE:
        if have.issuperset(needs):
            return FlopsPerCycle(float(value), "+".join(needs), why, FLAGS_SOURCE)
    return None


def parse_cpuinfo(text: str) -> dict[int, dict[str, str]]:
    """The "key : value" lines of /proc/cpuinfo, per logical cpu ("processor" number)."""
    cpus: dict[int, dict[str, str]] = {}
    current: dict[str, str] = {}
    for line in [*text.splitlines(), ""]:
        if not line.strip():
            if "processor" in current and current["processor"].isdigit():
                cpus[int(current["processor"])] = current
            current = {}
            continue
        key, sep, value = line.partition(":")
        if sep:
            current[key.strip()] = value.strip()
    return cpus


def _read(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except OSError:
        return None


def clock(
    cpus: Iterable[int], info: Mapping[int, Mapping[str, str]], sysfs: Path = SYSFS_CPU
) -> Clock | None:
    """The highest clock among ``cpus``: cpufreq's maximum, else /proc/cpuinfo's cpu MHz."""
    wanted = list(cpus)
    khz = [
        int(t)
        for c in wanted
        if (t := _read(sysfs / f"cpu{c}" / "cpufreq" / "cpuinfo_max_freq")) and t.isdigit()
    ]
    if khz:
        return Clock(max(khz) / 1e6, "cpufreq cpuinfo_max_freq")
    mhz = []
    for c in wanted:
        try:
            mhz.append(float(info.get(c, {}).get("cpu MHz", "")))
        except ValueError:
            continue
    if mhz and max(mhz) > 0:
        return Clock(max(mhz) / 1e3, "/proc/cpuinfo cpu MHz")
    return None


def peak_model(
    cpus: Iterable[int],
    flops_override: float | None = None,
    ghz_override: float | None = None,
    cpuinfo_text: str | None = None,
    sysfs: Path = SYSFS_CPU,
) -> PeakModel:
    """Read this machine's peak model for ``cpus``, with the user's overrides applied.

    Args:
        cpus: logical cpus the benchmark will run on (the first one's flags are used).
        flops_override: --peak-flops-per-cycle, replacing the table's value.
        ghz_override: --peak-ghz, replacing the measured clock.
        cpuinfo_text: /proc/cpuinfo's text (read from the system when None).
        sysfs: the cpu directory of sysfs (tests point it elsewhere).
    """
    wanted = sorted(cpus)
    if cpuinfo_text is None:
        cpuinfo_text = _read(CPUINFO) or ""
    info = parse_cpuinfo(cpuinfo_text)
    first = info.get(wanted[0], next(iter(info.values()), {})) if wanted else {}
    model = first.get("model name") or first.get("cpu model") or "unknown CPU"
    if flops_override is not None:
        fpc: FlopsPerCycle | None = FlopsPerCycle(
            flops_override, "given", "as given", "--peak-flops-per-cycle"
        )
    else:
        fpc = flops_per_cycle(first.get("flags", "").split())
    if ghz_override is not None:
        clk: Clock | None = Clock(ghz_override, "--peak-ghz")
    else:
        clk = clock(wanted, info, sysfs)
    return PeakModel(model, fpc, clk)


def _core_key(cpu: int, sysfs: Path) -> tuple[str, str]:
    # (package, core) from sysfs topology; unreadable topology makes the cpu a core of its own.
    topo = sysfs / f"cpu{cpu}" / "topology"
    return (
        _read(topo / "physical_package_id") or f"cpu{cpu}",
        _read(topo / "core_id") or f"cpu{cpu}",
    )


def physical_order(cpus: Iterable[int], sysfs: Path = SYSFS_CPU) -> list[int]:
    """``cpus`` ordered one per physical core first, hyperthread siblings after."""
    seen: set[tuple[str, str]] = set()
    first: list[int] = []
    siblings: list[int] = []
    for c in sorted(cpus):
        key = _core_key(c, sysfs)
        (siblings if key in seen else first).append(c)
        seen.add(key)
    return first + siblings


def physical_cores(cpus: Iterable[int], sysfs: Path = SYSFS_CPU) -> int:
    """How many physical cores ``cpus`` span (hyperthread siblings counted once)."""
    return len({_core_key(c, sysfs) for c in cpus})
