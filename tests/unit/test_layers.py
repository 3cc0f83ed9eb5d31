"""The package's layers: what each part may import, as README's architecture section draws it.

Data flows one way: measure -> data (the store) -> analysis / predict -> report; the CLI and the
validation runs sit on top. Imports inside functions count as much as top-level ones.
"""

import ast
from pathlib import Path

import commscope

PACKAGE = Path(commscope.__file__).resolve().parent
BASE = {"errors", "limits", "strict", "units", "safe_write", "__version__"}
# part -> the parts it may import besides itself and BASE
ALLOWED = {
    "data": set(),
    "importers": {"data"},
    "measure": {"data"},
    "analysis": {"data"},
    "predict": {"data", "analysis"},
    "simulate": {"data", "analysis", "predict", "measure"},
    "report": {"data", "analysis", "predict", "simulate"},
    "validate": {"data", "analysis", "predict", "measure"},
    "kinds": {"data", "analysis", "report"},
    "check": {"data", "analysis", "kinds"},
    "cli": {
        "check",
        "data",
        "importers",
        "measure",
        "analysis",
        "predict",
        "simulate",
        "report",
        "kinds",
        "validate",
    },
}
ROOT_MODULES = {"__init__", "__main__", "errors", "limits", "strict", "units", "safe_write"}


def part_of(path: Path) -> str:
    rel = path.relative_to(PACKAGE)
    return rel.parts[0] if len(rel.parts) > 1 else rel.stem


def imported_parts(path: Path) -> set[str]:
    parts = set()
    for node in ast.walk(ast.parse(path.read_text("utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module:
            if node.module == "commscope":
                parts |= {alias.name for alias in node.names}
            elif node.module.startswith("commscope."):
                parts.add(node.module.split(".")[1])
        elif isinstance(node, ast.Import):
            parts |= {a.name.split(".")[1] for a in node.names if a.name.startswith("commscope.")}
    return parts


def test_every_part_imports_only_the_layers_below_it():
    wrong = []
    for path in sorted(PACKAGE.rglob("*.py")):
        part = part_of(path)
        allowed = ALLOWED.get(part, set()) | BASE | {part}
        if part == "__main__":
            allowed |= {"cli"}
        wrong += [
            f"{path.relative_to(PACKAGE)} imports commscope.{p}"
            for p in sorted(imported_parts(path) - allowed)
        ]
    assert not wrong, "\n".join(wrong)


def test_the_package_root_holds_few_modules_and_the_parts_are_known():
    modules = {p.stem for p in PACKAGE.glob("*.py")}
    assert modules == ROOT_MODULES
    parts = {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").is_file()}
    assert parts == set(ALLOWED)


def test_the_layer_table_catches_a_wrong_import(tmp_path):
    leak = tmp_path / "leak.py"
    leak.write_text(
        "def f():\n    from commscope.measure import runner\nfrom commscope import cli, units\n"
    )
    assert imported_parts(leak) == {"measure", "cli", "units"}
