"""Find or build the small C programs that ship beside the engine and need no MPI.

``commscope-tcp`` (sockets) and ``commscope-clock`` (the busy core clock) are built by
``engine/CMakeLists.txt`` and installed into ``commscope/_bin`` with the package. When one is
missing (e.g. when running from a source tree), CMake builds it alone (preset ``no-mpi``: no
MPI needed) from the engine sources shipped in ``commscope/_engine_src`` (or the tree's
``engine/``) into ``$COMMSCOPE_HOME/<dir>/<sources hash>/``, so a program built from other
sources is never reused. Before use, ``--version`` must name the program and this schema version.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from commscope.data.records import SCHEMA_VERSION
from commscope.errors import EngineError
from commscope.measure import engine


@dataclass(frozen=True)
class CProgram:
    """One no-MPI program: its name (a CMake target), its sources under the engine tree."""

    name: str
    sources: tuple[str, ...]  # glob patterns relative to the engine sources (for the hash)
    cache: str  # directory name beside the engines built on demand

    def packaged(self) -> Path | None:
        """The program installed with the package, if any."""
        path = Path(str(resources.files("commscope"))) / "_bin" / self.name
        return path if path.is_file() else None

    def source_files(self) -> list[Path]:
        """Every source file the program is built from (C files and the headers they read)."""
        root = engine.engine_sources()
        build = ("CMakeLists.txt", "CMakePresets.json")  # how it is built counts too
        return sorted({p for pattern in (*self.sources, *build) for p in root.glob(pattern)})

    def built_path(self) -> Path:
        """Where the program built from these sources lives."""
        root = engine.engine_sources()
        h = hashlib.sha256()
        for path in self.source_files():
            h.update(str(path.relative_to(root)).encode())
            h.update(path.read_bytes())
        return engine.cache_dir().parent / self.cache / h.hexdigest()[:12] / self.name

    def build(self, dest: Path | None = None) -> Path:
        """Build the program with CMake (preset ``no-mpi``) into ``dest``; return its path.

        Raises:
            EngineError: no CMake or C compiler, or the build failed.
        """
        with engine.cmake_build("no-mpi", [self.name], what=self.name) as build_dir:
            return engine.install_binary(build_dir / self.name, dest or self.built_path())

    def check(self, path: Path) -> Path:
        """Return ``path`` if it is this program writing this schema version.

        Raises:
            EngineError: it does not run or writes another schema version.
        """
        try:
            out = subprocess.run(
                [str(path), "--version"], capture_output=True, text=True, timeout=30, check=True
            )
            version = json.loads(out.stdout)
        except (OSError, subprocess.SubprocessError, json.JSONDecodeError) as err:
            raise EngineError(f"{path} --version failed; reinstall commscope") from err
        if (
            not isinstance(version, dict)
            or version.get("program") != self.name
            or version.get("schema_version") != SCHEMA_VERSION
        ):
            raise EngineError(
                f"{path} is not a {self.name} writing schema {SCHEMA_VERSION}; reinstall commscope"
            )
        return path

    def find(self, build_missing: bool = True) -> Path:
        """Return the program: the packaged one, else one built from the shipped sources.

        Raises:
            EngineError: none is installed and it cannot (or may not) be built.
        """
        for path in (self.packaged(), self.built_path()):
            if path is not None and path.is_file():
                return self.check(path)
        if not build_missing:
            raise EngineError(f"{self.name} is not installed; reinstall commscope")
        return self.check(self.build())
