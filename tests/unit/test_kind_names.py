"""No code outside ``kinds/`` branches on a kind's name: it asks the kind.

A comparison of a run's, a request's or a parser's kind (or benchmark) with a kind's name
spelled as a string is what made adding a kind touch a dozen files. Walks every module's
syntax tree, so a comparison written any way (``==``, ``!=``, ``in (...)``) is found.
"""

from __future__ import annotations

import ast
from pathlib import Path

import commscope
from commscope import kinds
from commscope.cli import program_runs, run_node, run_tcp

PACKAGE = Path(commscope.__file__).resolve().parent
NAMES = {k.name for k in kinds.KINDS} | {b.name for k in kinds.KINDS for b in k.benchmarks}
NAMES |= {kinds.DEFAULT_RUN, program_runs.HPL, program_runs.APP}


def _strings(node: ast.expr) -> set[str]:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return {node.value}
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return {s for e in node.elts for s in _strings(e)}
    return set()


def _names_a_kind(node: ast.expr) -> bool:
    """Whether an expression reads a kind or a benchmark: ``run.kind``, ``args.benchmark``..."""
    text = ast.unparse(node).lower()
    return "kind" in text or "benchmark" in text


def kind_name_comparisons(tree: ast.AST) -> list[tuple[int, str]]:
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Compare):
            continue
        sides = [node.left, *node.comparators]
        spelled = set().union(*(_strings(s) for s in sides)) & NAMES
        if spelled and any(_names_a_kind(s) for s in sides if not _strings(s)):
            found.append((node.lineno, ast.unparse(node)))
    return found


def test_no_kind_name_is_compared_outside_kinds():
    wrong = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.relative_to(PACKAGE).parts[0] == "kinds":
            continue
        tree = ast.parse(path.read_text("utf-8"))
        wrong += [
            f"{path.relative_to(PACKAGE)}:{n}: {text}" for n, text in kind_name_comparisons(tree)
        ]
    assert wrong == []


def test_the_walk_finds_each_way_of_comparing():
    code = """
a = run.kind == "node"
b = "tcp" != args.benchmark
c = request["benchmark"] in ("matrix", "p2p")
d = where == "node"  # a place, not a kind: not found
"""
    assert [n for n, _ in kind_name_comparisons(ast.parse(code))] == [2, 3, 4]


def test_the_cli_run_modules_store_the_kinds_that_show_them():
    shown = {k.name for k in kinds.KINDS}
    assert {run_node.KIND, run_tcp.KIND} <= shown
