"""Whole programs built from their sources, cached by digest (HPL, programs for SimGrid).

A build runs in a fresh directory; its program enters the cache only when whole, under a tag
made of its sources, its recipe and the compiler's toolchain (the MPI, or SimGrid for smpicc).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from commscope.errors import InputError
from commscope.measure import engine


def apps_dir() -> Path:
    """Where built programs are cached, with their build and run logs."""
    return engine.cache_dir().parent / "apps"


def digest(source: Path, salt: str, toolchain: str) -> str:
    """Short hash of a source file or a directory's files (names and contents).

    ``toolchain`` names the compiler the program is built with (an MPI, or SimGrid's version
    for smpicc): a program built by another compiler is another program.
    """
    h = hashlib.sha256(f"{toolchain}:{salt}".encode())
    files = [source] if source.is_file() else sorted(p for p in source.rglob("*") if p.is_file())
    for path in files:
        h.update(str(path.relative_to(source.parent if source.is_file() else source)).encode())
        h.update(path.read_bytes())
    return h.hexdigest()[:12]


def build_failed(what: str, log: str, tag: str, compiler: str = "smpicc") -> InputError:
    """The one-line error of a failed build; the log is kept in a file the message names."""
    path = apps_dir() / f"build-{tag}.log"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(log, "utf-8")
    return InputError(
        f"{what}: the build with {compiler} failed ({last_line(log)}); full log in {path}"
    )


def last_line(text: str) -> str:
    """The last non-blank line of ``text``, shortened for a one-line message."""
    lines = [x for x in text.splitlines() if x.strip()]
    return lines[-1].strip()[:160] if lines else "no output"


def compile_and_cache(what: str, tag: str, steps: Any, compiler: str = "smpicc") -> Path:
    """The cached program ``tag``, else build it with ``steps(build_dir) -> (binary, log)``.

    A build runs in a fresh directory and its program is moved into the cache only when whole.
    """
    dest = apps_dir() / tag / "program"
    if dest.is_file():
        return dest
    with tempfile.TemporaryDirectory(prefix="commscope-build-") as tmp:
        binary, log = steps(Path(tmp))
        if binary is None:
            raise build_failed(what, log, tag, compiler=compiler)
        dest.parent.mkdir(parents=True, exist_ok=True)
        part = dest.with_suffix(".part")
        shutil.copy2(binary, part)
        os.replace(part, dest)
    return dest


def run_build(argv: list[str], cwd: Path) -> tuple[int, str]:
    """Run one build command in ``cwd``: its exit status and its output (the log)."""
    try:
        out = subprocess.run(
            argv, cwd=cwd, capture_output=True, text=True, errors="replace", timeout=3600
        )
    except (OSError, subprocess.SubprocessError) as err:
        return 1, f"{argv[0]}: {err}"
    return out.returncode, out.stdout + out.stderr
