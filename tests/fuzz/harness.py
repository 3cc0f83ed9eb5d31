"""Run commscope in-process on generated input and check what it may do with it.

The property every fuzz test checks: no traceback ever; a refused input is exit 2 (or 1
where a valid input names something absent, such as a run id) with exactly one line on
stderr and nothing stored; an accepted import is a complete run whose every number is
finite and every time positive.

Every test is derandomized: each run of the suite feeds the same inputs, so the counts here
are what a regression test needs. For a longer campaign multiply them:
``COMMSCOPE_FUZZ_SCALE=5 .venv/bin/python -m pytest tests/fuzz`` (about 14,000 inputs).
"""

from __future__ import annotations

import contextlib
import io
import itertools
import math
import os
from collections import Counter
from pathlib import Path
from typing import Any, NamedTuple

from hypothesis import HealthCheck, settings

from commscope.cli import main
from commscope.data.store import Store
from commscope.limits import MAX_MESSAGE_BYTES

# Inputs each fuzz test ran, and how many of them were accepted, printed at the end of the
# session (tests/fuzz/conftest.py).
COUNTS: Counter[str] = Counter()
ACCEPTED: Counter[str] = Counter()


def accepted(name: str) -> None:
    """Count one input of ``name`` that commscope accepted (stored, priced or launched)."""
    ACCEPTED[name] += 1


def fuzz_settings(examples: int) -> settings:
    """Reproducible settings: derandomized, no example database, no deadline.

    ``examples`` times ``$COMMSCOPE_FUZZ_SCALE`` (default 1) inputs.
    """
    scale = float(os.environ.get("COMMSCOPE_FUZZ_SCALE", "1"))
    return settings(
        max_examples=max(1, round(examples * scale)),
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=[
            HealthCheck.too_slow,
            HealthCheck.filter_too_much,
            HealthCheck.function_scoped_fixture,
            HealthCheck.data_too_large,
        ],
    )


class Outcome(NamedTuple):
    """Exit status and what one command printed."""

    code: int
    out: str
    err: str


def call(name: str | None, store: Path, *argv: str) -> Outcome:
    """Run ``commscope --store STORE ARGV...`` in this process; count it under ``name``.

    ``name`` None: a command that only sets up or checks, not a generated input. An
    exception other than SystemExit (argparse's exit) escapes: it is the traceback a user
    would have seen.
    """
    if name is not None:
        COUNTS[name] += 1
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(["--store", str(store), *argv])
        except SystemExit as done:
            code = done.code if isinstance(done.code, int) else 2
    return Outcome(code, out.getvalue(), err.getvalue())


def assert_one_line_refusal(outcome: Outcome, codes: tuple[int, ...] = (2,)) -> None:
    """The command refused its input: a status in ``codes`` and one line on stderr."""
    assert outcome.code in codes, outcome
    lines = outcome.err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("commscope"), outcome
    assert "Traceback" not in outcome.err and "\x1b" not in outcome.err, outcome


def numbers(data: Any) -> list[float]:
    """Every int and float inside decoded JSON ``data``."""
    if isinstance(data, bool):
        return []
    if isinstance(data, (int, float)):
        return [data]
    if isinstance(data, dict):
        return [x for v in data.values() for x in numbers(v)]
    if isinstance(data, (list, tuple)):
        return [x for v in data for x in numbers(v)]
    return []


def assert_sane_run(store: Path, run_id: int) -> None:
    """A stored run is complete, every number finite, every time positive, sizes bounded."""
    with Store.open(store) as s:
        info = s.get_run(run_id)
        assert info.status == "complete", info
        points, colls = s.points(run_id), s.colls(run_id)
    assert points or colls
    for p in points:
        assert all(math.isfinite(x) for x in numbers(p.raw)), p.raw
        assert all(t > 0 for t in p.samples_s), p.raw
        assert 0 <= p.bytes <= MAX_MESSAGE_BYTES and p.iters_per_sample >= 1, p.raw
    for c in colls:
        assert all(math.isfinite(x) for x in numbers(c.raw)), c.raw
        assert all(t > 0 for t in c.times_s), c.raw
        assert 0 <= c.bytes <= MAX_MESSAGE_BYTES and c.nranks >= 1, c.raw


def run_ids(store: Path) -> list[int]:
    """Ids of the stored runs (none when the store does not exist yet)."""
    if not store.exists():
        return []
    with Store.open(store) as s:
        return [r.id for r in s.list_runs()]


def fresh_store(folder: Path) -> Path:
    """A store path not used before in ``folder``; earlier ones are removed."""
    for old in folder.glob("store*.sqlite*"):
        old.unlink()
    return folder / f"store{next(_STORES)}.sqlite"


_STORES = itertools.count()
