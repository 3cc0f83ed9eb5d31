"""Find or build the engine for an MPI, and check it matches the MPI that will launch it.

The engine installed with the package was built against the MPI found at install time. Engines
for other MPIs are built on demand with CMake from the sources shipped in the package and kept
in ``$COMMSCOPE_HOME/engines/<family>-<version>-<sources hash>/`` (default
``~/.cache/commscope``), so an upgrade never reuses an engine built from older sources.

Every C program is built one way: ``cmake_build`` with a preset of ``CMakePresets.json``
(``release`` for the MPI engine, ``no-mpi`` for commscope-tcp and commscope-clock, ``smpi``
for the simulated engine).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from commscope.errors import EngineError
from commscope.measure.mpi import MPIInstall, family_of_library

ENGINE_NAME = "commscope-engine"


@dataclass(frozen=True)
class EngineInfo:
    """An engine binary and the MPI library it was linked with."""

    path: Path
    engine_version: str
    mpi_library: str
    family: str
    mpi_version: str


def cache_dir() -> Path:
    """Where engines built on demand live."""
    home = os.environ.get("COMMSCOPE_HOME") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"),
        "commscope",
    )
    return Path(home) / "engines"


def packaged_engine() -> Path | None:
    """The engine installed with the package, if any."""
    path = Path(str(resources.files("commscope"))) / "_bin" / ENGINE_NAME
    return path if path.is_file() else None


# The checkout this module runs from in an editable install: src/commscope/measure/engine.py.
_SOURCE_TREE = Path(__file__).resolve().parents[3]


def engine_sources() -> Path:
    """The engine's CMake project shipped in the package (or the source tree when run from it)."""
    shipped = Path(str(resources.files("commscope"))) / "_engine_src"
    if (shipped / "CMakeLists.txt").is_file():
        return shipped
    tree = _SOURCE_TREE / "engine"
    if (tree / "CMakeLists.txt").is_file():
        return tree
    raise EngineError("engine sources are missing from this install; reinstall commscope")


def sources_digest() -> str:
    """Short hash of the engine sources: engines built from other sources are never reused."""
    root = engine_sources()
    h = hashlib.sha256()
    # sources, CMakeLists.txt, CMakePresets.json, options.json and cmake/options.cmake
    kinds = (".c", ".h", ".txt", ".json", ".cmake")
    files = (p for p in root.rglob("*") if p.is_file() and p.suffix in kinds)
    for path in sorted(files):
        h.update(str(path.relative_to(root)).encode())
        h.update(path.read_bytes())
    return h.hexdigest()[:12]


def built_dir(mpi: MPIInstall) -> Path:
    """Where the engine for ``mpi`` built from these sources lives."""
    return cache_dir() / f"{mpi.tag}-{sources_digest()}"


def inspect(path: Path) -> EngineInfo:
    """Ask an engine binary which MPI library it uses (no MPI_Init needed)."""
    try:
        out = subprocess.run(
            [str(path), "--version"], capture_output=True, text=True, timeout=60, check=True
        )
        data = json.loads(out.stdout)
    except (OSError, subprocess.SubprocessError, json.JSONDecodeError) as err:
        raise EngineError(
            f"{path} --version failed; rebuild with 'commscope engine build'"
        ) from err
    family, version = family_of_library(data["mpi_library_version"])
    return EngineInfo(path, data["engine_version"], data["mpi_library_version"], family, version)


def matches(info: EngineInfo, mpi: MPIInstall) -> bool:
    """True when the engine was linked against the launching MPI's family and version."""
    return info.family == mpi.family and info.mpi_version == mpi.version


@contextmanager
def cmake_build(
    preset: str, targets: Sequence[str], defines: Sequence[str] = (), what: str = "the engine"
) -> Iterator[Path]:
    """Build ``targets`` from the shipped sources with a CMake preset; yield the build folder.

    The folder is temporary: it is removed after the block.

    Raises:
        EngineError: CMake is missing or a step failed; the message gives its last line.
    """
    if not shutil.which("cmake"):
        raise EngineError("cmake is not installed; install it (Debian: apt-get install cmake)")
    with tempfile.TemporaryDirectory(prefix="commscope-build-") as build_dir:
        steps = [
            [
                "cmake",
                "--preset",
                preset,
                "-S",
                str(engine_sources()),
                "-B",
                build_dir,
                *(f"-D{d}" for d in defines),
            ],
            ["cmake", "--build", build_dir, "--target", *targets],
        ]
        for cmd in steps:
            out = subprocess.run(cmd, capture_output=True, text=True, check=False)
            if out.returncode != 0:
                tail = (out.stderr or out.stdout).strip().splitlines()[-1:] or ["no output"]
                raise EngineError(f"building {what} failed: {tail[0]}")
        yield Path(build_dir)


def install_binary(built: Path, target: Path) -> Path:
    """Copy a built program to ``target`` atomically: a concurrent run never sees half of it."""
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.{os.getpid()}")
    shutil.copy2(built, tmp)
    os.replace(tmp, target)
    return target


def build(mpi: MPIInstall, dest: Path | None = None) -> EngineInfo:
    """Build the engine with ``mpi.mpicc`` into ``dest`` (default: the cache for this MPI)."""
    dest = dest or built_dir(mpi)
    with cmake_build(
        "release", [ENGINE_NAME], [f"MPI_C_COMPILER={mpi.mpicc}"], f"the engine with {mpi.mpicc}"
    ) as build_dir:
        target = install_binary(build_dir / ENGINE_NAME, dest / ENGINE_NAME)
    info = inspect(target)
    if not matches(info, mpi):
        raise EngineError(
            f"engine built with {mpi.mpicc} links {info.family} {info.mpi_version}, but the "
            f"launcher is {mpi.family} {mpi.version}; pass --mpi PREFIX of one installation"
        )
    return info


def find(mpi: MPIInstall, build_missing: bool = True) -> EngineInfo:
    """Return an engine linked against ``mpi``, building one if needed and allowed."""
    candidates = [p for p in (packaged_engine(), built_dir(mpi) / ENGINE_NAME) if p]
    for path in candidates:
        if path.is_file():
            info = inspect(path)
            if matches(info, mpi):
                return info
    if not build_missing:
        raise EngineError(
            f"no engine for {mpi.family} {mpi.version};"
            f" run 'commscope engine build --mpi {mpi.choice}'"
        )
    return build(mpi)
