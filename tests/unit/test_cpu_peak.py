"""P_peak from CPU feature flags and clocks, and the choice of cores, on recorded inputs."""

from __future__ import annotations

from pathlib import Path

import pytest

from commscope.data import peak
from commscope.errors import UsageError
from commscope.measure.compute import cpu, pinning

SKYLAKE_FLAGS = "fpu sse sse2 ssse3 fma avx avx2 avx512f avx512dq avx512cd avx512bw"
ZEN_FLAGS = "fpu sse sse2 ssse3 fma cx16 sse4_1 sse4_2 avx f16c avx2 bmi2"
SANDY_FLAGS = "fpu sse sse2 ssse3 sse4_1 sse4_2 avx"
OLD_FLAGS = "fpu sse sse2"


def cpuinfo(flags: str, mhz: str = "2249.998", cpus: int = 2) -> str:
    return "\n".join(
        f"processor\t: {i}\nmodel name\t: Test CPU\ncpu MHz\t\t: {mhz}\nflags\t\t: {flags}\n"
        for i in range(cpus)
    )


def sysfs(tmp_path: Path, cores: list[tuple[int, int]], max_khz: int | None = None) -> Path:
    """A fake /sys/devices/system/cpu: cpu i on (package, core) = cores[i]."""
    for i, (package, core) in enumerate(cores):
        topo = tmp_path / f"cpu{i}" / "topology"
        topo.mkdir(parents=True)
        (topo / "physical_package_id").write_text(f"{package}\n")
        (topo / "core_id").write_text(f"{core}\n")
        if max_khz:
            freq = tmp_path / f"cpu{i}" / "cpufreq"
            freq.mkdir()
            (freq / "cpuinfo_max_freq").write_text(f"{max_khz}\n")
    return tmp_path


@pytest.mark.parametrize(
    ("flags", "value", "isa"),
    [
        (SKYLAKE_FLAGS, 32, "avx512f+fma"),
        (ZEN_FLAGS, 16, "avx2+fma"),
        (SANDY_FLAGS, 8, "avx"),
        (OLD_FLAGS, 4, "sse2"),
    ],
)
def test_flops_per_cycle_from_flags(flags, value, isa):
    fpc = cpu.flops_per_cycle(flags.split())
    assert fpc is not None and (fpc.value, fpc.isa) == (value, isa)
    assert fpc.source == "/proc/cpuinfo flags"


def test_avx2_without_fma_counts_as_avx():
    fpc = cpu.flops_per_cycle("sse2 avx avx2".split())
    assert fpc is not None and fpc.value == 8


def test_unknown_architecture_has_no_flops_per_cycle():
    assert cpu.flops_per_cycle("fp asimd evtstrm aes".split()) is None


def test_peak_from_cpuinfo_clock_when_no_cpufreq(tmp_path):
    model = cpu.peak_model([0, 1], cpuinfo_text=cpuinfo(ZEN_FLAGS), sysfs=tmp_path)
    assert model.clock == peak.Clock(pytest.approx(2.249998), "/proc/cpuinfo cpu MHz")
    assert model.peak_gflops(2) == pytest.approx(2 * 2.249998 * 16)
    text = model.derivation(2)
    assert text.startswith("P_peak = 2 cores x 2.250 GHz x 16 flops/cycle = 72.0 GFLOPS")
    assert "/proc/cpuinfo cpu MHz" in text and "2 FMA units x 4 doubles x 2 flops" in text


def test_peak_prefers_cpufreq_maximum(tmp_path):
    root = sysfs(tmp_path, [(0, 0), (0, 1)], max_khz=3_000_000)
    model = cpu.peak_model([0, 1], cpuinfo_text=cpuinfo(SKYLAKE_FLAGS, mhz="1200.0"), sysfs=root)
    assert model.clock == peak.Clock(3.0, "cpufreq cpuinfo_max_freq")
    assert model.peak_gflops(1) == pytest.approx(96.0)


def test_overrides_replace_flags_and_clock(tmp_path):
    model = cpu.peak_model(
        [0], flops_override=8.0, ghz_override=2.66, cpuinfo_text=cpuinfo(ZEN_FLAGS), sysfs=tmp_path
    )
    # The Xeon 5150 of Rechistov et al. 2012 (cluster simulation): 4 cores x 2.66 GHz
    # x 4 flops/cycle = 42.56 GFLOPS.
    assert cpu.peak_model([0], 4.0, 2.66, cpuinfo_text="", sysfs=tmp_path).peak_gflops(
        4
    ) == pytest.approx(42.56)
    assert model.peak_gflops(1) == pytest.approx(21.28)
    assert "--peak-ghz" in model.derivation(1) and "--peak-flops-per-cycle" in model.derivation(1)
    assert peak.PeakModel.from_json(model.to_json()) == model


def test_unknown_parts_name_the_override(tmp_path):
    model = cpu.peak_model([0], cpuinfo_text=cpuinfo("fp asimd", mhz="?"), sysfs=tmp_path)
    assert model.peak_gflops(1) is None
    assert "--peak-flops-per-cycle and --peak-ghz" in model.derivation(1)


def test_hyperthread_siblings_come_last(tmp_path):
    # cpus 0,1 and 2,3 are siblings on two cores: one thread per core first.
    root = sysfs(tmp_path, [(0, 0), (0, 1), (0, 0), (0, 1)])
    assert cpu.physical_order([0, 1, 2, 3], root) == [0, 1, 2, 3]
    root2 = sysfs(tmp_path / "b", [(0, 0), (0, 0), (0, 1), (0, 1)])
    assert cpu.physical_order([0, 1, 2, 3], root2) == [0, 2, 1, 3]
    assert cpu.physical_cores([0, 1, 2, 3], root2) == 2
    assert pinning.choose_cpus(2, [0, 1, 2, 3], root2) == (0, 2)
    assert pinning.resolve_cores("1,all,2", [0, 1, 2, 3], root2) == [1, 2]


@pytest.mark.parametrize("spec", ["0", "x", "3", "1,,2"])
def test_bad_core_counts_are_usage_errors(tmp_path, spec):
    root = sysfs(tmp_path, [(0, 0), (0, 1)])
    with pytest.raises(UsageError, match="--cores"):
        pinning.resolve_cores(spec, [0, 1], root)
