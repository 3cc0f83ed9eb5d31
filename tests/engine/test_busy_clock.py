"""commscope-clock for real: a plausible busy clock, pinned where asked, bad input refused."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from commscope.errors import EngineError
from commscope.measure.compute import busyclock, cpu, pinning

LOW_GHZ, HIGH_GHZ = 0.5, 6.0


def cpuinfo_ghz(cpus: list[int]) -> float | None:
    info = cpu.parse_cpuinfo(Path("/proc/cpuinfo").read_text())
    mhz = [float(info[c]["cpu MHz"]) for c in cpus if "cpu MHz" in info.get(c, {})]
    return max(mhz) / 1e3 if mhz else None


@pytest.fixture(scope="module")
def program(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Built from the sources the package would ship, with the C compiler alone."""
    dest = tmp_path_factory.mktemp("clock") / busyclock.PROGRAM
    return busyclock.CLOCK_PROGRAM.check(busyclock.CLOCK_PROGRAM.build(dest))


def test_the_busy_clock_is_plausible_on_one_and_on_every_core(program):
    allowed = pinning.allowed_cpus()
    for cores in sorted({1, cpu.physical_cores(allowed)}):
        cpus = list(pinning.choose_cpus(cores, allowed))
        clock = busyclock.measure(cpus, program=program)
        assert clock.cpus == tuple(cpus) and len(clock.per_cpu_ghz) == cores
        assert LOW_GHZ < clock.ghz < HIGH_GHZ, clock
        nominal = cpuinfo_ghz(cpus)
        if nominal is not None:  # x86 lists the clock; a boost or a power cap stays within 2x
            assert nominal / 2 < clock.ghz < nominal * 2, (clock, nominal)


def test_every_repeat_is_reported_per_cpu(program):
    (first, *_) = pinning.allowed_cpus()
    out = subprocess.run(
        [
            str(program),
            "--cpus",
            str(first),
            "--adds",
            "1000000",
            "--repeats",
            "3",
            "--warmup",
            "0",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    line = json.loads(out.stdout)
    assert line["timer"] == "CLOCK_MONOTONIC_RAW" and line["repeats"] == 3
    (entry,) = line["cpus"]
    assert entry["cpu"] == first and len(entry["ghz"]) == 3
    assert busyclock.parse(line).ghz == max(entry["ghz"])


@pytest.mark.parametrize(
    "args",
    [
        [],
        ["--cpus", ""],
        ["--cpus", "0,0"],
        ["--cpus", "x"],
        ["--cpus", "0", "--adds", "-5"],
        ["--cpus", "0", "--repeats", "0"],
        ["--cpus", "0", "--warmup", "nan"],
        ["--bogus", "1"],
    ],
)
def test_bad_options_exit_2_with_one_line(program, args):
    out = subprocess.run([str(program), *args], capture_output=True, text=True, timeout=30)
    assert out.returncode == 2, out
    assert out.stdout == "" and out.stderr.startswith("commscope-clock:"), out.stderr


def test_a_cpu_outside_the_affinity_is_an_error(program):
    outside = max(pinning.allowed_cpus()) + 1
    with pytest.raises(EngineError, match=f"cpu {outside}"):
        busyclock.measure([outside], adds=1000, repeats=1, warmup_s=0, program=program)


def test_the_program_is_found_from_the_tree_or_the_package():
    path = busyclock.CLOCK_PROGRAM.find()
    assert path.name == busyclock.PROGRAM and path.is_file()
    packaged = busyclock.CLOCK_PROGRAM.packaged()
    assert path == (packaged or busyclock.CLOCK_PROGRAM.built_path())
