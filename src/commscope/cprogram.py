"""Find or build the small C programs that ship beside the engine and need no MPI.

``commscope-tcp`` (sockets) and ``commscope-clock`` (the busy core clock) are built by
``engine/CMakeLists.txt`` and installed into ``commscope/_bin`` with the package. When one is
missing (e.g. when running from a source tree), it is compiled with the C compiler alone from
the engine sources shipped in ``commscope/_engine_src`` (or the tree's ``engine/``) into
``$COMMSCOPE_HOME/<dir>/<sources hash>/``, so a program built from other sources is never
reused. Before use, ``--version`` must name the program and this schema version.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from commscope import engine
from commscope.errors import EngineError
from commscope.records import SCHEMA_VERSION


@dataclass(frozen=True)
class CProgram:
    """One no-MPI program: its name, its sources under the engine tree, how it links."""

    name: str
    sources: tuple[str, ...]  # glob patterns relative to the engine sources
    cache: str  # directory name beside the engines built on demand
    libs: tuple[str, ...] = ("-lm", "-pthread")

    def packaged(self) -> Path | None:
        """The program installed with the package, if any."""
        path = Path(str(resources.files("commscope"))) / "_bin" / self.name
        return path if path.is_file() else None

    def source_files(self) -> list[Path]:
        """Every source file the program is built from (C files and the headers they read)."""
        root = engine.engine_sources()
        return sorted({p for pattern in self.sources for p in root.glob(pattern)})

    def built_path(self) -> Path:
        """Where the program built from these sources lives."""
        root = engine.engine_sources()
        h = hashlib.sha256()
        for path in self.source_files():
            h.update(str(path.relative_to(root)).encode())
            h.update(path.read_bytes())
        return engine.cache_dir().parent / self.cache / h.hexdigest()[:12] / self.name

    def build(self, dest: Path | None = None) -> Path:
        """Compile the program with ``$CC`` (default ``cc``) into ``dest`` and return its path.

        Raises:
            EngineError: no compiler, or the compilation failed.
        """
        cc = os.environ.get("CC", "cc")
        if not shutil.which(cc):
            raise EngineError(f"no C compiler '{cc}' to build {self.name}; install one (Debian:"
                              " apt-get install build-essential) or set CC")
        dest = dest or self.built_path()
        dest.parent.mkdir(parents=True, exist_ok=True)
        root = engine.engine_sources()
        sources = [str(p) for p in self.source_files() if p.suffix == ".c"]
        with tempfile.TemporaryDirectory(prefix=f"{self.name}-build-") as tmp:
            out = Path(tmp) / self.name
            cmd = [cc, "-std=c11", "-O2", "-D_GNU_SOURCE", "-I", str(root / "include"),
                   *sources, "-o", str(out), *self.libs]
            done = subprocess.run(cmd, capture_output=True, text=True, check=False)
            if done.returncode != 0:
                tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no output"]
                raise EngineError(f"building {self.name} with {cc} failed: {tail[0]}")
            tmp_dest = dest.with_name(self.name + ".new")
            shutil.copy2(out, tmp_dest)
            os.replace(tmp_dest, dest)  # atomic: a concurrent run never sees half a binary
        return dest

    def check(self, path: Path) -> Path:
        """Return ``path`` if it is this program writing this schema version.

        Raises:
            EngineError: it does not run or writes another schema version.
        """
        try:
            out = subprocess.run([str(path), "--version"], capture_output=True, text=True,
                                 timeout=30, check=True)
            version = json.loads(out.stdout)
        except (OSError, subprocess.SubprocessError, json.JSONDecodeError) as err:
            raise EngineError(f"{path} --version failed; reinstall commscope") from err
        if (not isinstance(version, dict) or version.get("program") != self.name
                or version.get("schema_version") != SCHEMA_VERSION):
            raise EngineError(f"{path} is not a {self.name} writing schema {SCHEMA_VERSION};"
                              " reinstall commscope")
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
