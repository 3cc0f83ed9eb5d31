"""Nothing in tests/ skips but through ``need()``, which fails instead in CI (CI=true).

CI runs as root with every part installed; a skip there would hide a test that did not run.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests import conftest

TESTS = Path(__file__).resolve().parents[1]
# Attributes and names that skip a test, mark it skipped or expect it to fail.
SKIPPING = {"skip", "skipif", "importorskip", "xfail", "SkipTest"}
# The one sanctioned skip: the body of tests/conftest.py's need().
SANCTIONED = ("conftest.py", "need")


# Where a skip can come from: pytest.skip, pytest.mark.skipif, unittest.SkipTest...
MODULES = {"pytest", "_pytest", "unittest"}


def _root(node: ast.expr) -> str:
    while isinstance(node, ast.Attribute):
        node = node.value
    return node.id if isinstance(node, ast.Name) else ""


def _skipping(node: ast.AST) -> bool:
    """``node`` names a skip of pytest's or unittest's (a variable called skip does not)."""
    if isinstance(node, ast.Attribute):
        return node.attr in SKIPPING and _root(node) in MODULES
    if isinstance(node, ast.ImportFrom):
        module = (node.module or "").split(".")[0]
        return module in MODULES and any(a.name in SKIPPING for a in node.names)
    return isinstance(node, ast.Name) and node.id == "SkipTest"


def _skips(path: Path, root: Path = TESTS) -> list[str]:
    """``file:line`` of every skip in ``path`` outside the sanctioned helper."""
    where = path.relative_to(root).as_posix()
    tree = ast.parse(path.read_text(encoding="utf-8"), where)
    allowed: set[int] = set()
    if where == SANCTIONED[0]:
        for fn in ast.walk(tree):
            if isinstance(fn, ast.FunctionDef) and fn.name == SANCTIONED[1]:
                allowed.update(id(node) for node in ast.walk(fn))
    return [
        f"{where}:{getattr(node, 'lineno', '?')}"
        for node in ast.walk(tree)
        if id(node) not in allowed and _skipping(node)
    ]


def test_no_test_skips_but_through_need():
    found = [hit for path in sorted(TESTS.rglob("*.py")) for hit in _skips(path)]
    assert not found, f"skips outside tests/conftest.py need(): {found}"


def test_the_scan_finds_each_way_to_skip(tmp_path):
    sources = [
        "import pytest\npytest.skip('x')\n",
        "import pytest\n@pytest.mark.skipif(True, reason='x')\ndef test(): pass\n",
        "import pytest\nnp = pytest.importorskip('numpy')\n",
        "from pytest import skip\n",
        "import unittest\nraise unittest.SkipTest('x')\n",
        "import pytest\n@pytest.mark.xfail\ndef test(): pass\n",
        "from unittest import SkipTest\n",
    ]
    for k, text in enumerate(sources):
        path = tmp_path / f"t{k}.py"
        path.write_text(text)
        assert _skips(path, tmp_path), text
    plain = tmp_path / "plain.py"
    plain.write_text("skip = {1}\nargs.skip = 2\nrows.skipif = 3\n")
    assert _skips(plain, tmp_path) == []
    helper = tmp_path / "conftest.py"
    helper.write_text(
        "import pytest\ndef need(c, r):\n    pytest.skip(r)\ndef other():\n    pass\n"
    )
    assert _skips(helper, tmp_path) == []


def test_need_fails_in_ci_and_skips_elsewhere(monkeypatch):
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="CI must provide this: a part"):
        conftest.need(False, "a part")
    conftest.need(True, "a part")
    monkeypatch.setenv("CI", "false")
    with pytest.raises(BaseException, match="SKIPPED, NOT TESTED: a part") as skipped:
        conftest.need(False, "a part")
    assert type(skipped.value).__name__ == "Skipped"
