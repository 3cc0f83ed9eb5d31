"""One exit-code scheme for what monitoring reads: check, undrain, check-store, run --drain.

They exit with the monitoring-plugins statuses alone (0 OK, 1 WARNING, 2 CRITICAL,
3 UNKNOWN): a usage error, argparse's own included, is UNKNOWN, never 2, which monitoring
would read as CRITICAL. Every other command keeps argparse's 2 for a usage error.
"""

from __future__ import annotations

from typing import Any

import pytest

from commscope.cli import monitored

MONITORED_USAGE = [
    ("check", "--bogus"),
    ("check",),  # --baseline missing
    ("check", "--baseline", "b", "--timeout", "-1"),
    ("undrain", "--bogus"),
    ("check-store", "--bogus"),
    ("run", "matrix", "--drain", "--bogus"),
    ("run", "matrix", "--drain", "--samples", "x"),
    ("--store", "/nonexistent/x.sqlite", "check", "--bogus"),
]


@pytest.mark.parametrize("argv", MONITORED_USAGE, ids=" ".join)
def test_a_usage_error_of_a_monitored_command_is_unknown(cli: Any, argv: tuple[str, ...]) -> None:
    out = cli(*argv)
    assert out.returncode == 3, out.stderr
    assert len(out.stderr.strip().splitlines()) == 1 and "error:" in out.stderr


@pytest.mark.parametrize("argv", [("run", "--bogus"), ("run", "matrix", "--samples", "x")])
def test_other_commands_keep_argparse_status(cli: Any, argv: tuple[str, ...]) -> None:
    assert cli(*argv).returncode == 2


def test_an_error_of_a_monitored_command_is_unknown(cli: Any, tmp_path) -> None:
    missing = tmp_path / "none.sqlite"
    out = cli("--store", str(missing), "check-store")
    assert out.returncode == 3 and "none.sqlite" in out.stderr, out.stderr


def test_which_command_lines_are_monitored() -> None:
    assert monitored(["--store", "s.db", "check", "--baseline", "b"])
    assert monitored(["run", "matrix", "--drain"]) and monitored(["run", "matrix", "--drain=yes"])
    assert not monitored(["run", "matrix", "--drain-nodes"]) and not monitored(["run"])
    assert not monitored(["--store", "check"]) and not monitored([])
