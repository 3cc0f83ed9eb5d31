"""Read the eager limits an MPI is configured with, once per run, from the MPI's own tools.

Open MPI: ``ompi_info --parsable`` lists each BTL's ``btl_<name>_eager_limit`` (and
``rndv_eager_limit``, ``max_send_size``) with the value the job's parameters give it: the
user's ``--mca`` reach ompi_info as ``OMPI_MCA_`` variables, as they reach the ranks. The ob1
PML uses them; the UCX PML decides by itself, so its limits stay unknown.

MPICH: ``mpichversion`` names the device. ch4:ucx built without shared-memory modules (MPICH's
default for UCX) sends everything through UCX, whose rendezvous threshold (UCX_RNDV_THRESH,
"auto" unless set) no MPICH setting holds. Other builds: ``mpivars`` (MPI_T) reads the
control variables under the run's environment: the CH4 POSIX cell size for shared memory, the
OFI or CH3 eager maximum for the network.

A missing or failing tool leaves the limits unknown; it never stops a run.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
from collections.abc import Mapping
from pathlib import Path

from commscope.data.mpi_config import EagerLimit, ProtocolLimits
from commscope.measure.mpi import MPIInstall

_TIMEOUT_S = 30.0
OMPI_FIELDS = ("eager_limit", "rndv_eager_limit", "max_send_size")
INTRA_BTLS = ("sm", "vader")  # Open MPI 5 renamed vader to sm
_OMPI_LINE = re.compile(r"mca:(btl|pml):([a-z0-9_]+):param:([a-z0-9_]+):(value|source):(.*)")
_MPIVARS_LINE = re.compile(r"^\s*(MPIR_CVAR_[A-Z0-9_]+)\s*=([^\t]*)\t", re.M)


def _tool(mpi: MPIInstall, name: str) -> str | None:
    """The MPI's own ``name`` next to its launcher, else on PATH."""
    beside = Path(mpi.launcher).resolve().parent / name
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    return shutil.which(name)


@functools.lru_cache(maxsize=16)
def _output(argv: tuple[str, ...], env: tuple[tuple[str, str], ...]) -> str | None:
    """A tool's standard output (cached: a run reads each tool once); None when it fails."""
    try:
        out = subprocess.run(
            list(argv),
            capture_output=True,
            text=True,
            timeout=_TIMEOUT_S,
            check=False,
            env={**os.environ, **dict(env)},
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout if out.returncode == 0 else None


def parse_ompi_info(text: str) -> dict[str, tuple[str, str]]:
    """Parameters from ``ompi_info --parsable`` (btl and pml): name -> (value, source)."""
    values: dict[str, str] = {}
    sources: dict[str, str] = {}
    for line in text.splitlines():
        m = _OMPI_LINE.fullmatch(line.strip())
        if m:
            (values if m.group(4) == "value" else sources)[m.group(3)] = m.group(5)
    return {name: (value, sources.get(name, "")) for name, value in values.items()}


def _included(selection: str, name: str, present: bool) -> bool:
    """Whether an MCA component list (``a,b`` or ``^a,b``; empty: all) admits ``name``."""
    names = [n.strip() for n in selection.lstrip("^").split(",") if n.strip()]
    if not names:
        return present
    return (name not in names) == selection.startswith("^") and present


def openmpi_limits(params: Mapping[str, tuple[str, str]], mca: Mapping[str, str]) -> ProtocolLimits:
    """The ob1 eager limits of the BTLs a job may use (from :func:`parse_ompi_info` output)."""
    btls = {name.split("_")[1] for name in params if name.startswith("btl_") and "_eager" in name}
    pml = params.get("pml", ("", ""))[0]
    has_ucx = any(name.startswith("pml_ucx_") for name in params)
    if _included(pml, "ucx", has_ucx):
        settings = {k: params[k][0] for k in ("btl", "pml") if k in params}
        why = "the UCX PML may carry the messages and decides its thresholds itself"
        return ProtocolLimits("Open MPI", (), settings, (f"eager limits unknown: {why}",))
    selection = params.get("btl", ("", ""))[0]
    found: list[EagerLimit] = []
    unknown: list[str] = []
    intra = next((b for b in INTRA_BTLS if _included(selection, b, b in btls)), None)
    inter = "tcp" if _included(selection, "tcp", "tcp" in btls) else None
    settings = {k: params[k][0] for k in ("btl", "pml") if k in params}
    for btl in (intra, inter, "self"):
        settings.update(
            {
                f"btl_{btl}_{f}": params[f"btl_{btl}_{f}"][0]
                for f in OMPI_FIELDS
                if f"btl_{btl}_{f}" in params
            }
        )
    for scope, btl in (("intra-node", intra), ("inter-node", inter)):
        name = f"btl_{btl}_eager_limit"
        value, source = params.get(name, ("", ""))
        if btl is None or not value.isdigit():
            unknown.append(f"{scope} eager limit unknown: no usable BTL listed")
            continue
        set_by = "--mca" if name in mca else source or "default"
        found.append(EagerLimit("Open MPI", btl, scope, name, int(value), set_by))
    return ProtocolLimits("Open MPI", tuple(found), settings, tuple(unknown))


def read_openmpi(mpi: MPIInstall, mca: Mapping[str, str]) -> ProtocolLimits:
    """Open MPI's limits for a job with parameters ``mca``."""
    tool = _tool(mpi, "ompi_info")
    env = tuple(sorted((f"OMPI_MCA_{k}", v) for k, v in mca.items()))
    texts = [
        _output((tool, "--parsable", "--level", "9", "--param", framework, "all"), env)
        for framework in ("btl", "pml")
        if tool
    ]
    if not texts or any(t is None for t in texts):
        return ProtocolLimits("Open MPI", unknown=("eager limits unknown: ompi_info did not run",))
    return openmpi_limits(parse_ompi_info("\n".join(t or "" for t in texts)), mca)


def parse_mpivars(text: str) -> dict[str, str]:
    """``mpivars`` control variables: name -> value as MPI_T reports it."""
    return {m.group(1): m.group(2).strip() for m in _MPIVARS_LINE.finditer(text)}


def mpich_device(version_text: str) -> tuple[str, bool]:
    """(device, whether shared-memory modules are built) from ``mpichversion`` output."""
    device = re.search(r"MPICH Device:\s*(\S+)", version_text)
    name = device.group(1) if device else ""
    mods = re.search(r"--with-ch4-shmmods=(\S+)", version_text)
    chosen = mods.group(1) if mods else "auto"
    # MPICH's configure turns "auto" into none for ch4:ucx (UCX handles local peers itself).
    shm = chosen not in ("none", "no") and not (chosen == "auto" and name == "ch4:ucx")
    return name, shm


def mpich_limits(
    device: str, shm: bool, values: Mapping[str, str], given: Mapping[str, str]
) -> ProtocolLimits:
    """MPICH's limits from its device and the control variables MPI_T read."""
    found: list[EagerLimit] = []
    unknown: list[str] = []

    def add(scope: str, path: str, name: str) -> None:
        value = values.get(name, "")
        if not value.isdigit() or int(value) <= 0:  # -1: the provider or module decides
            unknown.append(
                f"{scope} eager limit unknown: {name}={value or '?'} leaves it to {path}"
            )
            return
        set_by = "--cvar" if name in given else "default"
        found.append(EagerLimit("MPICH", path, scope, name, int(value), set_by))

    if device == "ch4:ucx" and not shm:
        thresh = os.environ.get("UCX_RNDV_THRESH", "auto")
        unknown.append(
            f"eager limits unknown: MPICH ch4:ucx sends everything through UCX, whose"
            f" rendezvous threshold is UCX_RNDV_THRESH={thresh}"
        )
    elif device.startswith("ch4"):
        if shm:
            add("intra-node", "ch4 posix", "MPIR_CVAR_CH4_SHM_POSIX_IQUEUE_CELL_SIZE")
        if device == "ch4:ofi":
            add("inter-node", "ch4 ofi", "MPIR_CVAR_CH4_OFI_EAGER_MAX_MSG_SIZE")
        else:
            unknown.append(f"inter-node eager limit unknown: {device} decides")
    elif device.startswith("ch3"):
        add("intra-node", "ch3 nemesis", "MPIR_CVAR_NEMESIS_SHM_EAGER_MAX_SZ")
        add("inter-node", "ch3", "MPIR_CVAR_CH3_EAGER_MAX_MSG_SIZE")
    else:
        unknown.append(f"eager limits unknown: MPICH device {device or '?'} not known here")
    used = {lim.setting for lim in found}
    shown = {k: v for k, v in values.items() if k in given or k in used}
    return ProtocolLimits("MPICH", tuple(found), shown, tuple(unknown))


def read_mpich(mpi: MPIInstall, cvars: Mapping[str, str]) -> ProtocolLimits:
    """MPICH's limits for a job with control variables ``cvars``."""
    version_tool, vars_tool = _tool(mpi, "mpichversion"), _tool(mpi, "mpivars")
    version = _output((version_tool,), ()) if version_tool else None
    if version is None:
        return ProtocolLimits("MPICH", unknown=("eager limits unknown: mpichversion did not run",))
    env = tuple(sorted(cvars.items()))
    listing = _output((vars_tool,), env) if vars_tool else None
    device, shm = mpich_device(version)
    return mpich_limits(device, shm, parse_mpivars(listing or ""), cvars)


def read(mpi: MPIInstall, mca: Mapping[str, str], cvars: Mapping[str, str]) -> ProtocolLimits:
    """The limits of a job of ``mpi`` with its parameters; unknown when the tools fail."""
    if mpi.family == "openmpi":
        return read_openmpi(mpi, mca)
    if mpi.family == "mpich":
        return read_mpich(mpi, cvars)
    return ProtocolLimits(mpi.family, unknown=(f"eager limits unknown for {mpi.tag}",))
