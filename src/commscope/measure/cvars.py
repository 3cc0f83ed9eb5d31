"""MPICH's control variables (``MPIR_CVAR_*``): read from ``--cvar``, checked, passed on.

MPICH reads them from the environment of each process, so the launched ranks get them as
environment variables; those already in commscope's environment are recorded with the run too.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence

from commscope import limits
from commscope.errors import UsageError
from commscope.measure.mpi import MPIInstall

PREFIX = "MPIR_CVAR_"
NAME = re.compile(r"MPIR_CVAR_[A-Z0-9_]+")
# C0 and C1 controls, DEL and the Unicode line separators: none belongs in a setting.
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")
EXAMPLE = "--cvar MPIR_CVAR_CH4_OFI_EAGER_MAX_MSG_SIZE=16384"


def parse(items: Sequence[str]) -> dict[str, str]:
    """Settings from repeated ``--cvar NAME=VALUE`` (later ones win); the prefix is optional."""
    out: dict[str, str] = {}
    for item in items:
        name, sep, value = item.partition("=")
        if name and not name.startswith(PREFIX):
            name = PREFIX + name
        if not sep or not NAME.fullmatch(name):
            raise UsageError(
                f"--cvar {_shown(item)}: give NAME=VALUE with NAME in capitals, digits and _,"
                f" e.g. {EXAMPLE}"
            )
        out[name] = check_value(name, value)
    return out


def check_value(name: str, value: str) -> str:
    """``value`` when it is 1 to MAX_SETTING_CHARS printable characters."""
    fix = f"give 1 to {limits.MAX_SETTING_CHARS} printable characters"
    if not value:
        raise UsageError(f"--cvar {name}= has no value; {fix}")
    if len(value) > limits.MAX_SETTING_CHARS:
        raise UsageError(f"--cvar {name} has a value of {len(value)} characters; {fix}")
    bad = _CONTROL.search(value)
    if bad:
        raise UsageError(
            f"--cvar {name} holds the control character \\x{ord(bad.group()):02x}; {fix}"
        )
    return value


def _shown(text: str) -> str:
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text[:80])


def from_environment(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The ``MPIR_CVAR_*`` settings in the environment that are well formed."""
    env = os.environ if environ is None else environ
    return {
        k: v
        for k, v in sorted(env.items())
        if NAME.fullmatch(k) and v and len(v) <= limits.MAX_SETTING_CHARS and not _CONTROL.search(v)
    }


def check(mpi: MPIInstall, cvars: Mapping[str, str] | None) -> None:
    """Control variables are MPICH's: refuse them for Open MPI rather than drop them."""
    if cvars and mpi.family != "mpich":
        raise UsageError(
            f"--cvar {next(iter(cvars))}: MPIR_CVAR_ settings are MPICH's and this run uses"
            f" {mpi.tag}; give Open MPI parameters with --mca NAME=VALUE instead"
        )
