"""Draining without root: users of Slurm's admin levels, in the virtual cluster (slurmdbd).

Slurm keeps admin levels in its accounting database, so the cluster runs slurmdbd and a
MariaDB (``vcluster up --slurm --accounting``). Three users, none of them root:

- ``csuser`` (no level): ``run matrix --drain`` stops before anything is measured, exit 3,
  one line naming the ``sacctmgr`` command that would give the right;
- ``csop`` (Operator): the same for ``undrain``: Slurm lets an operator manage reservations,
  not nodes (slurmctld refuses its node updates), so commscope says so rather than trying;
- ``csadmin`` (Administrator): the matrix, measured through Slurm as that user, drains the
  node with the slow link (Slurm records csadmin as the one who drained it), and ``undrain``
  measures it again in a maintenance reservation it makes and returns it, its link repaired.

The users run commscope with the system's Python 3 and a copy (hard links) of this
interpreter's packages in a folder they can read: the test's own interpreter may live in
root's home, which other users cannot enter.
"""

from __future__ import annotations

import json
import os
import pwd
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from commscope.measure import vcluster
from commscope.measure.vcluster import accounting
from tests.conftest import have_mpi, need

pytestmark = pytest.mark.cluster
SLOW = "csnode3"
LEVELS = {"csuser": "None", "csop": "Operator", "csadmin": "Administrator"}
SYSTEM_PYTHON = Path("/usr/bin/python3")


def system_python_matches() -> bool:
    """True when /usr/bin/python3 is this interpreter's version (the packages' ABI)."""
    if not SYSTEM_PYTHON.exists():
        return False
    out = subprocess.run(
        [str(SYSTEM_PYTHON), "-c", "import sys; print(sys.version_info[:2])"],
        capture_output=True,
        text=True,
        check=False,
    ).stdout.strip()
    return out == str(sys.version_info[:2])


@pytest.fixture
def users() -> Iterator[Path]:
    """The three users, each with a home under a fresh folder; yields their packages' path."""
    need(shutil.which("useradd") is not None, "useradd is not installed")
    need(system_python_matches(), f"{SYSTEM_PYTHON} is not Python {sys.version_info[:2]}")
    top = Path(tempfile.mkdtemp(prefix="commscope-users-", dir="/tmp"))
    top.chmod(0o755)
    packages = top / "site-packages"
    purelib = sysconfig.get_paths()["purelib"]
    try:  # hard links: instant on one filesystem; a copy where links cannot cross
        subprocess.run(["cp", "-al", purelib, str(packages)], check=True, capture_output=True)
    except subprocess.CalledProcessError:
        shutil.rmtree(packages, ignore_errors=True)
        shutil.copytree(purelib, packages, symlinks=True)
    for name in LEVELS:
        _remove_user(name)
        subprocess.run(
            ["useradd", "-m", "-d", str(top / name), "-s", "/bin/sh", name],
            check=True,
            capture_output=True,
        )
    try:
        yield packages
    finally:
        for name in LEVELS:
            _remove_user(name)
        shutil.rmtree(top, ignore_errors=True)


def _remove_user(name: str) -> None:
    """Remove ``name`` and its home; its processes first (userdel refuses a user in use)."""
    subprocess.run(["pkill", "-KILL", "-u", name], capture_output=True, check=False)
    subprocess.run(["userdel", "-r", name], capture_output=True, check=False)


def as_user(
    packages: Path, user: str, *args: str, timeout: float = 600
) -> subprocess.CompletedProcess:
    """``commscope ARGS`` run as ``user`` (its own uid, gid and home; no groups of root's)."""
    home = pwd.getpwnam(user).pw_dir
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": home,
        "USER": user,
        "LOGNAME": user,
        "PYTHONPATH": str(packages),
        "LANG": "C.UTF-8",
    }
    return subprocess.run(
        [str(SYSTEM_PYTHON), "-m", "commscope", *args],
        user=user,
        group=pwd.getpwnam(user).pw_gid,
        extra_groups=[],
        env=env,
        cwd=home,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def node_reason(node: str) -> str:
    """The Reason field of ``scontrol show node -o`` (it ends with [user@time])."""
    line = subprocess.run(
        ["scontrol", "show", "node", "-o", node], capture_output=True, text=True, check=True
    ).stdout
    return line.split(" Reason=", 1)[1].strip() if " Reason=" in line else ""


def node_state(node: str) -> str:
    out = subprocess.run(
        ["sinfo", "-h", "-n", node, "-o", "%T"], capture_output=True, text=True, check=True
    )
    return out.stdout.strip()


@pytest.mark.parametrize(
    "cluster", [(4, f"200mbit,{SLOW}=50mbit", ("slurm", "accounting"))], indirect=True
)
def test_only_the_administrator_level_drains_and_returns_nodes(cluster, users):
    need(have_mpi("openmpi"), "openmpi is not installed")
    for name, level in LEVELS.items():
        accounting.add_user(name, level)
    matrix = ("run", "matrix", "--slurm", "--nodes", "4", "--sizes", "64K", "--samples", "5")

    refused = as_user(users, "csuser", *matrix, "--drain")
    lines = refused.stderr.strip().splitlines()
    assert refused.returncode == 3 and len(lines) == 1, refused.stderr
    assert "user csuser may not change node states" in lines[0]
    assert "sacctmgr modify user csuser set adminlevel=administrator" in lines[0]
    assert not (Path(pwd.getpwnam("csuser").pw_dir) / ".local/share/commscope").exists()

    operator = as_user(users, "csop", "undrain")
    assert operator.returncode == 3, operator.stderr
    assert "Operator is not enough" in operator.stderr and "csop" in operator.stderr

    drained = as_user(users, "csadmin", *matrix, "--drain", "--json")
    print(drained.stdout[-2000:], drained.stderr[-2000:])
    assert drained.returncode == 2, drained.stderr  # CRITICAL: a node drained
    outcome = json.loads(drained.stdout)["drain"]
    assert [(n["node"], n["action"]) for n in outcome["nodes"]] == [(SLOW, "drained")]
    assert node_state(SLOW) == "drained"
    assert node_reason(SLOW).startswith("commscope: bandwidth ")
    assert "[csadmin@" in node_reason(SLOW)  # Slurm names who drained it: not root

    vcluster.set_rate(SLOW, "200mbit")  # repaired
    # undrain measures it again first, in a reservation csadmin makes and deletes.
    back = as_user(users, "csadmin", "undrain", "--json", "--recheck-wait", "60")
    print(back.stdout[-2000:], back.stderr[-2000:])
    assert back.returncode == 0, back.stderr
    [node] = json.loads(back.stdout)["nodes"]
    assert (node["node"], node["rechecked"], node["outcome"]) == (SLOW, True, "returned")
    assert node_state(SLOW).rstrip("*") == "idle"
