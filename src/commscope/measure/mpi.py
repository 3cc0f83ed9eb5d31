"""Which MPI to use: its family, compiler wrapper, launcher and version."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from commscope.errors import UsageError

FAMILIES = ("openmpi", "mpich")


@dataclass(frozen=True)
class MPIInstall:
    """An MPI installation as commscope uses it.

    Attributes:
        choice: what the user asked for ("default", "openmpi", "mpich" or a path).
        family: "openmpi" or "mpich" (hydra-based MPIs count as mpich).
        version: the launcher's version, e.g. "4.1.4".
        mpicc: compiler wrapper path.
        launcher: mpirun/mpiexec path.
    """

    choice: str
    family: str
    version: str
    mpicc: str
    launcher: str

    @property
    def tag(self) -> str:
        """Short name for caches and records, e.g. ``openmpi-4.1.4``."""
        return f"{self.family}-{self.version}"


def identify_launcher(launcher: str) -> tuple[str, str]:
    """Return (family, version) from ``launcher --version``."""
    try:
        out = subprocess.run(
            [launcher, "--version"], capture_output=True, text=True, timeout=30, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as err:
        raise UsageError(f"cannot run {launcher} --version; check the --mpi choice") from err
    text = out.stdout + out.stderr
    m = re.search(r"\((?:Open MPI|OpenRTE)\)\s+(\S+)", text)
    if m:
        return "openmpi", m.group(1)
    m = re.search(r"HYDRA build details:.*?Version:\s+(\S+)", text, re.S)
    if m:
        return "mpich", m.group(1)
    raise UsageError(
        f"{launcher} is neither Open MPI's mpirun nor a hydra mpiexec; "
        "pass --mpi openmpi, --mpi mpich or --mpi PREFIX"
    )


def family_of_library(library_version: str) -> tuple[str, str]:
    """Return (family, version) from an ``MPI_Get_library_version`` string."""
    m = re.search(r"Open MPI v(\S+?),", library_version)
    if m:
        return "openmpi", m.group(1)
    m = re.search(r"MPICH Version:\s*(\S+)", library_version)
    if m:
        return "mpich", m.group(1)
    return "unknown", ""


def _first(*names: str) -> str | None:
    for name in names:
        if os.sep in name:
            if os.access(name, os.X_OK):
                return name
        else:
            found = shutil.which(name)
            if found:
                return found
    return None


def resolve(choice: str | None) -> MPIInstall:
    """Find the MPI for ``--mpi`` (None: whatever mpicc and mpiexec are on PATH).

    Raises:
        UsageError: the MPI is not installed or not recognised.
    """
    choice = choice or "default"
    if choice == "openmpi":
        mpicc, launcher = _first("mpicc.openmpi", "mpicc"), _first("mpirun.openmpi", "mpirun")
    elif choice == "mpich":
        mpicc, launcher = _first("mpicc.mpich", "mpicc"), _first("mpiexec.mpich", "mpiexec")
    elif choice == "default":
        mpicc, launcher = _first("mpicc"), _first("mpiexec", "mpirun")
    else:
        bindir = Path(choice) / "bin" if (Path(choice) / "bin").is_dir() else Path(choice)
        if not bindir.is_dir():
            raise UsageError(
                f"--mpi {choice}: not openmpi, mpich or an MPI install prefix with bin/mpicc"
            )
        mpicc = _first(str(bindir / "mpicc"))
        launcher = _first(str(bindir / "mpiexec"), str(bindir / "mpirun"))
    if not launcher or not mpicc:
        missing = "launcher (mpirun/mpiexec)" if not launcher else "compiler wrapper (mpicc)"
        raise UsageError(
            f"--mpi {choice}: no MPI {missing} found; install one (Debian: openmpi-bin "
            "libopenmpi-dev, or mpich libmpich-dev) or pass --mpi PREFIX"
        )
    family, version = identify_launcher(launcher)
    if choice in FAMILIES and family != choice:
        raise UsageError(
            f"--mpi {choice}: {launcher} is {family} {version}; install {choice} or pass its prefix"
        )
    return MPIInstall(choice, family, version, mpicc, launcher)
