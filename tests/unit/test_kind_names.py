"""No code outside ``kinds/`` branches on a kind's name: it asks the kind.

A comparison of a run's, a request's or a parser's kind (or benchmark) with a kind's name
spelled as a string is what made adding a kind touch a dozen files. Walks every module's
syntax tree, so a comparison written any way (``==``, ``!=``, ``in (...)``) is found, and so
is one against a module's constant that spells a kind's name (``KIND = "node"``, in the same
module or imported: ``programs.HPL``), which is the same comparison under another name.
"""

from __future__ import annotations

import ast
from pathlib import Path

import commscope
from commscope import kinds
from commscope.cli import run_node, run_tcp
from commscope.jobs import programs
from commscope.kinds import run_commands

PACKAGE = Path(commscope.__file__).resolve().parent
NAMES = {k.name for k in kinds.KINDS} | {b.name for k in kinds.KINDS for b in k.benchmarks}
NAMES |= {c.name for c in run_commands.COMMANDS} | {programs.APP}

Constants = dict[str, dict[str, set[str]]]  # module -> its names bound to strings -> the strings


def _strings(node: ast.expr) -> set[str]:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return {node.value}
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return {s for e in node.elts for s in _strings(e)}
    return set()


def module_name(path: Path) -> str:
    """``commscope.cli.run_node`` for ``cli/run_node.py``; a package's ``__init__``: the package."""
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def module_constants(tree: ast.Module) -> dict[str, set[str]]:
    """The module-level names bound to a string or a tuple of strings, and those strings."""
    out = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target, value = node.targets[0], node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            target, value = node.target, node.value
        else:
            continue
        if isinstance(target, ast.Name) and _strings(value):
            out[target.id] = _strings(value)
    return out


def package_constants() -> Constants:
    """Every module's string constants, by module name."""
    return {
        module_name(p): module_constants(ast.parse(p.read_text("utf-8")))
        for p in sorted(PACKAGE.rglob("*.py"))
    }


class Resolver:
    """The strings an expression of one module stands for: a literal, or a constant's value.

    A constant is the module's own (``KIND``), imported by name (``from m import KIND``), or
    read from an imported module (``programs.HPL``).
    """

    def __init__(self, tree: ast.Module, here: str, constants: Constants) -> None:
        self.names = dict(constants.get(here, {}))
        self.modules: dict[str, str] = {}  # local name -> module
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module:
                for alias in node.names:
                    local = alias.asname or alias.name
                    full = f"{node.module}.{alias.name}"
                    if full in constants:
                        self.modules[local] = full
                    elif alias.name in constants.get(node.module, {}):
                        self.names[local] = constants[node.module][alias.name]
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.asname and alias.name in constants:
                        self.modules[alias.asname] = alias.name
        self.constants = constants

    def strings(self, node: ast.expr) -> set[str]:
        if isinstance(node, ast.Name):
            return self.names.get(node.id, set())
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            module = self.modules.get(node.value.id)
            return self.constants.get(module or "", {}).get(node.attr, set())
        return _strings(node)


def _names_a_kind(node: ast.expr) -> bool:
    """Whether an expression reads a kind or a benchmark: ``run.kind``, ``args.benchmark``..."""
    text = ast.unparse(node).lower()
    return "kind" in text or "benchmark" in text


def kind_name_comparisons(
    tree: ast.Module, here: str = "", constants: Constants | None = None
) -> list[tuple[int, str]]:
    """Each comparison of ``tree`` (the module ``here``) of a kind with a kind's name."""
    resolve = Resolver(tree, here, constants or {})
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Compare):
            continue
        sides = [(s, resolve.strings(s)) for s in [node.left, *node.comparators]]
        spelled = set().union(*(strings for _, strings in sides)) & NAMES
        if spelled and any(_names_a_kind(s) for s, strings in sides if not strings):
            found.append((node.lineno, ast.unparse(node)))
    return found


def test_no_kind_name_is_compared_outside_kinds():
    constants = package_constants()
    wrong = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.relative_to(PACKAGE).parts[0] == "kinds":
            continue
        tree = ast.parse(path.read_text("utf-8"))
        wrong += [
            f"{path.relative_to(PACKAGE)}:{n}: {text}"
            for n, text in kind_name_comparisons(tree, module_name(path), constants)
        ]
    assert wrong == []


def test_the_walk_finds_each_way_of_comparing():
    code = """
from commscope.jobs import programs
from commscope.report.tcp_section import TCP_KIND as TCP
KIND = "node"
PLACES = ("node", "socket")
a = run.kind == "node"
b = "tcp" != args.benchmark
c = request["benchmark"] in ("matrix", "p2p")
d = where == "node"  # a place, not a kind: not found
e = getattr(args, "benchmark", None) == KIND
f = what["kind"] == programs.HPL
g = info.kind != TCP
h = run.kind in PLACES
i = where in PLACES  # not found
j = run.kind == programs.OTHER  # a constant of no kind's name: not found
"""
    tree = ast.parse(code)
    constants = {
        "here": module_constants(tree),
        "commscope.jobs.programs": {"HPL": {"hpl"}, "OTHER": {"elsewhere"}},
        "commscope.report.tcp_section": {"TCP_KIND": {"tcp"}},
    }
    found = [n for n, _ in kind_name_comparisons(tree, "here", constants)]
    assert found == [6, 7, 8, 10, 11, 12, 13]


def test_the_cli_run_modules_store_the_kinds_that_show_them():
    shown = {k.name for k in kinds.KINDS}
    assert {run_node.KIND, run_tcp.KIND} <= shown
