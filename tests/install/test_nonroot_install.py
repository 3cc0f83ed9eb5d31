"""`pip install .` as a user who is not root, with the site's MPI on PATH (issue 51, item 6).

A copy of the source tree is installed into a fresh virtualenv by the unprivileged ``nobody``
account, so nothing may need root: not the engine's CMake build against the system mpicc, not
writing into the package. ``--no-deps``: the dependencies are ordinary wheels; what is checked
here is the build and install of commscope itself (about a minute on 2 cores).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import need

pytestmark = pytest.mark.mpi
ROOT = Path(__file__).parents[2]
USER = "nobody"
# What a user's login gives: no root-only folders (pyenv shims under /root), the site's MPI.
PATH = ":".join(p for p in os.environ.get("PATH", "").split(":") if not p.startswith("/root"))
SYSTEM_PYTHON = "/usr/bin/python3"
IMPORT = "import commscope; print(commscope.__version__)"
SKIP = (".git", ".venv", "build", "dist", "__pycache__", "*.egg-info", ".pytest_cache")


@pytest.fixture
def shared_dir() -> Iterator[Path]:
    # pytest's tmp_path sits in a folder only root may enter.
    path = Path(tempfile.mkdtemp(prefix="commscope-nonroot-", dir="/tmp"))
    path.chmod(0o777)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def as_user(argv: list[str], home: Path, timeout: float) -> subprocess.CompletedProcess[str]:
    env = {
        "HOME": str(home),
        "PATH": PATH,
        "PIP_CACHE_DIR": str(home / "pip-cache"),
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
        "LANG": "C.UTF-8",
    }
    command = ["runuser", "-u", USER, "--", "env", "-i", *(f"{k}={v}" for k, v in env.items())]
    return subprocess.run(
        [*command, *argv], capture_output=True, text=True, timeout=timeout, cwd=home
    )


def test_pip_install_as_a_user_builds_the_engine_against_the_site_mpi(shared_dir):
    need(os.geteuid() == 0, "switching to an unprivileged user needs root")
    need(shutil.which("runuser") is not None, "runuser (util-linux) is not installed")
    need(shutil.which("mpicc", path=PATH) is not None, "no MPI compiler wrapper (mpicc) on PATH")
    need(os.access(SYSTEM_PYTHON, os.X_OK), f"{SYSTEM_PYTHON} (with venv) is not installed")
    source = shared_dir / "commscope"
    shutil.copytree(ROOT, source, ignore=shutil.ignore_patterns(*SKIP))
    subprocess.run(["chmod", "-R", "a+rwX", str(shared_dir)], check=True)
    venv = shared_dir / "venv"
    made = as_user([SYSTEM_PYTHON, "-m", "venv", str(venv)], shared_dir, 120)
    assert made.returncode == 0, made.stderr[-2000:]
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--no-deps", str(source)]
    out = as_user(pip, shared_dir, 600)
    assert out.returncode == 0, (out.stdout + out.stderr)[-3000:]
    installed = list((venv / "lib").glob("python*/site-packages/commscope/_bin/commscope-engine"))
    assert installed and os.access(installed[0], os.X_OK)
    assert installed[0].stat().st_uid != 0  # written by the user, not root
    linked = subprocess.run(["ldd", str(installed[0])], capture_output=True, text=True)
    assert "libmpi" in linked.stdout and "/root" not in linked.stdout, linked.stdout
    imported = as_user([str(venv / "bin" / "python"), "-c", IMPORT], shared_dir, 60)
    assert imported.returncode == 0 and imported.stdout.strip(), imported.stderr[-2000:]
