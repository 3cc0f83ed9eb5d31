"""One vocabulary on the command line: every parser described, with examples, one spelling each.

The table CONCEPTS is the vocabulary: a concept's one flag, and the spellings it replaced,
which no command may declare again.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import commscope
from commscope.cli import build_parser
from commscope.kinds.run_commands import COMMANDS
from commscope.measure.engine_options import table

# concept: (its flag, spellings no command may use for it)
CONCEPTS = {
    "message sizes in bytes": ("--sizes", ("--size", "--msg-sizes", "--message-sizes")),
    "repetitions of a whole measurement, summarised by their median or mean": (
        "--repeats",
        ("--reps", "--repeat", "--runs", "--bisection-reps", "--rounds", "--solves"),
    ),
    "timed samples per point": (
        "--samples",
        ("--matrix-samples", "--launches", "--sample", "--nsamples"),
    ),
    "calls timed together as one sample": ("--iterations", ("--nruns", "--naive-iters", "--iters")),
    "ranks of a job": ("--np", ("--procs-total", "--nranks-run")),
    "nodes a run takes": ("--nodes", ("--num-nodes",)),
    "nodes of a model made from hwloc": ("--hwloc-nodes", ()),
    "ranks on each node": ("--ranks-per-node", ("--ntasks-per-node", "--ppn", "--per-node")),
    "HPL's matrix order N": ("--matrix-order", ("--n", "--matrix-orders")),
    "HPL's process grid": ("--grid", ("--hpl-grid",)),
    "HPL's block size NB": ("--nb", ("--hpl-nb",)),
    "a model parameter swept": ("--sweep", ()),
    "messages in flight": ("--window", ("--matrix-window",)),
    "random seed": ("--seed", ("--bisection-seed",)),
    "MPIPerf's launches per stage (k)": ("--stage-launches", ("--k",)),
    "MPIPerf's launches of stage 0 (k0)": ("--initial-launches", ("--k0",)),
    "MPIPerf's invalid share that widens the window (g)": ("--invalid-share", ("--g",)),
    "MPIPerf's window margin (gamma)": ("--window-margin", ("--gamma",)),
    "min-RTT search patience (d)": ("--sync-patience", ("--sync-d",)),
    "calibration's correcting simulations": ("--refinements", ("--rounds",)),
    "largest acceptable clock error": ("--max-error", ()),
}
PAPER_SYMBOLS = {
    "--stage-launches": "(k)",
    "--initial-launches": "(k0)",
    "--invalid-share": "(g)",
    "--window-margin": "(gamma)",
    "--sync-patience": "d)",
}
SWEEP_NAMES = (
    "nic-latency",
    "nic-bandwidth",
    "memory-latency",
    "memory-bandwidth",
    "switch-latency",
)


def _parsers(
    parser: argparse.ArgumentParser, path: tuple[str, ...] = ("commscope",)
) -> Iterator[tuple[str, argparse.ArgumentParser]]:
    yield " ".join(path), parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _parsers(sub, (*path, name))


PARSERS = dict(_parsers(build_parser()))
SOURCE = str(Path(commscope.__file__).parents[1])  # the same commscope in the subprocess
RUN_COMMANDS = [c.name for c in COMMANDS]


def _listed(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    return [a for a in parser._actions if a.option_strings and a.help != argparse.SUPPRESS]


def test_every_command_action_and_kind_has_a_description_and_examples():
    assert {"commscope run p2p", "commscope engine info", "commscope validate timers"} <= set(
        PARSERS
    )
    for name, parser in PARSERS.items():
        assert parser.description, f"{name}: no description"
        assert parser.epilog and "examples:" in parser.epilog, f"{name}: no examples"
        assert name.removeprefix("commscope ").split()[0] in parser.epilog or name == "commscope"


def test_no_option_shows_two_defaults():
    for name, parser in PARSERS.items():
        formatter = parser._get_formatter()
        for action in _listed(parser):
            text = formatter._expand_help(action) if action.help else ""
            shown = re.findall(r"[\[(]default", text)
            assert len(shown) <= 1, (name, action.option_strings, text)


def test_no_two_commands_spell_one_concept_differently():
    flags = {
        flag: name for name, p in PARSERS.items() for a in p._actions for flag in a.option_strings
    }
    for concept, (flag, replaced) in CONCEPTS.items():
        assert flag in flags, f"{concept}: {flag} is declared by no command"
        for old in replaced:
            assert old not in flags, f"{concept}: {flags[old]} spells it {old}, not {flag}"


def test_paper_notation_is_named_and_its_symbol_given():
    for name, parser in PARSERS.items():
        for action in _listed(parser):
            flag = action.option_strings[0]
            if flag in PAPER_SYMBOLS:
                assert PAPER_SYMBOLS[flag] in (action.help or ""), (name, flag)


def test_testing_options_are_hidden():
    hidden = {s.run_flag for s in table() if s.hidden}
    assert "--test-distort" in hidden
    for name, parser in PARSERS.items():
        for action in _listed(parser):
            assert not set(action.option_strings) & hidden, (name, action.option_strings)
            assert not (action.help or "").startswith("testing"), (name, action.option_strings)


def test_sweeps_are_spelled_with_hyphens_everywhere():
    for name in ("commscope simulate run", "commscope simulate app", "commscope simulate hpl"):
        sweep = next(a for a in PARSERS[name]._actions if "--sweep" in a.option_strings)
        assert all(n in (sweep.help or "") for n in SWEEP_NAMES), name
        assert "_" not in (sweep.help or ""), name


def _help_lines(*words: str) -> list[str]:
    out = subprocess.run(
        [sys.executable, "-m", "commscope", *words, "--help"],
        capture_output=True,
        text=True,
        check=True,
        env={"COLUMNS": "80", "PATH": "/usr/bin:/bin", "PYTHONPATH": SOURCE},
    )
    return out.stdout.splitlines()


def test_run_help_is_one_screen():
    lines = _help_lines("run")
    assert len(lines) <= 60, len(lines)
    assert all(f"    {kind} " in "\n".join(lines) for kind in RUN_COMMANDS)


@pytest.mark.parametrize("kind", RUN_COMMANDS)
def test_run_kind_help_is_one_screen_with_its_own_options(kind):
    lines = _help_lines("run", kind)
    assert len(lines) <= 60, (kind, len(lines))
    text = "\n".join(lines)
    assert "examples:" in text and f"commscope run {kind}" in text
    assert "--hostfile FILE" not in text  # the shared options are listed by `run --help`


def test_an_action_prints_its_own_help_not_its_parents():
    assert _help_lines("engine", "info")[0].startswith("usage: commscope engine info")
    assert _help_lines("validate", "timers")[0].startswith("usage: commscope validate timers")


def test_the_man_page_has_every_command():
    from commscope.cli import manpage_cmd

    page = manpage_cmd.text()
    assert page.startswith(".TH COMMSCOPE")
    for name in PARSERS:
        roff = name.replace("-", "\\-")  # roff escapes hyphens
        assert f"'{roff}'" in page or name == "commscope", name


def test_the_man_page_has_exit_status_environment_and_every_example():
    import re
    from pathlib import Path

    from commscope.cli import manpage_cmd

    page = manpage_cmd.text()
    for section in ("EXIT STATUS", "ENVIRONMENT", "EXAMPLES"):
        assert f".SH {section}" in page, section
    # Every variable the code reads is explained.
    src = Path(manpage_cmd.__file__).parents[1]
    code = "\n".join(p.read_text() for p in src.rglob("*.py"))
    read = set(re.findall(r'environ(?:\.get\(|\[)"([A-Z][A-Z0-9_]+)"', code))
    read |= set(re.findall(r'env="([A-Z][A-Z0-9_]+)"', code))
    read |= set(re.findall(r'ENV = \{"\w+": "([A-Z][A-Z0-9_]+)"\}', code))
    explained = " ".join(name for name, _ in manpage_cmd.ENVIRONMENT)
    assert {"COMMSCOPE_STORE", "COMMSCOPE_HOME", "SLURM_JOB_ID"} <= read
    assert sorted(v for v in read if v not in explained) == []
    # Every command's and action's examples, as --help prints them.
    examples = {name: p.epilog for name, p in PARSERS.items() if name != "commscope" and p.epilog}
    assert {"commscope check", "commscope baseline create", "commscope run p2p"} <= set(examples)
    for name, epilog in examples.items():
        for line in epilog.splitlines():
            shown = line.replace("\\", "\\e")
            assert shown in page or f"\\&{shown}" in page, (name, line)
