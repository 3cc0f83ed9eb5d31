"""The engine and cluster tests, several times in a row, with a busy loop on one core.

Timing asserts in tests must hold on a busy machine. This runs ``pytest tests/engine
tests/cluster`` (or the paths given) ``--runs`` times in a row while one process spins on one
core at normal priority for the whole time (on a 2-core machine: a third of the CPU the tests
would otherwise have), and prints each run's outcome, its length and the load average seen
around it. It stops at the first failing run (a failure breaks the row). Not a test: it prints
figures.

    flock /tmp/commscope-bench.lock .venv/bin/python bench/tests_under_load.py --runs 5

Takes 27-30 minutes a run on a 2-core machine (engine and cluster tests); each run's pytest
output is kept in ``--logs DIR`` (default: commscope-tests-under-load in the temporary
folder).
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SPIN = "while True: pass"


def one_run(paths: list[str], log: Path) -> tuple[int, str, float]:
    """(pytest's exit status, its summary line, seconds) of one run."""
    start = time.monotonic()
    with log.open("w") as out:
        status = subprocess.run(
            [sys.executable, "-m", "pytest", *paths, "-p", "no:cacheprovider", "-q"],
            stdout=out,
            stderr=subprocess.STDOUT,
            env={**os.environ, "CI": "true"},  # as CI runs them: no skips
        ).returncode
    summary = ""
    for line in log.read_text(errors="replace").splitlines():
        if re.search(r"\d+ (passed|failed|error)", line):
            summary = line.strip("= ")
    return status, summary, time.monotonic() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument(
        "--logs", type=Path, default=Path(tempfile.gettempdir()) / "commscope-tests-under-load"
    )
    parser.add_argument("paths", nargs="*", default=["tests/engine", "tests/cluster"])
    args = parser.parse_args()
    args.logs.mkdir(parents=True, exist_ok=True)
    spinner = subprocess.Popen([sys.executable, "-c", SPIN])
    passed = 0
    try:
        for n in range(1, args.runs + 1):
            before = os.getloadavg()[0]
            status, summary, seconds = one_run(args.paths, args.logs / f"run-{n}.log")
            print(
                f"run {n}: {'PASS' if status == 0 else 'FAIL'} {summary} in {seconds / 60:.1f} min,"
                f" 1-min load average {before:.1f} before / {os.getloadavg()[0]:.1f} after",
                flush=True,
            )
            if status != 0:
                break
            passed += 1
    finally:
        spinner.kill()
    print(f"{passed} of {args.runs} runs in a row passed with one core kept busy")
    return 0 if passed == args.runs else 1


if __name__ == "__main__":
    sys.exit(main())
