"""The engine's CMake project is found in the package, or in the checkout of an editable install."""

from __future__ import annotations

from pathlib import Path
from unittest import mock

import pytest

from commscope.errors import EngineError
from commscope.measure import engine

CHECKOUT = Path(__file__).resolve().parents[2]


def test_an_editable_install_builds_from_the_checkouts_engine(tmp_path):
    # In a checkout, measure/engine.py sits three folders below the root that holds engine/.
    module = CHECKOUT / "src" / "commscope" / "measure" / "engine.py"
    assert module.is_file() and module.parents[3] == CHECKOUT
    assert engine._SOURCE_TREE == Path(engine.__file__).resolve().parents[3]
    assert (CHECKOUT / "engine" / "CMakeLists.txt").is_file()
    # No _engine_src beside the package (pip install -e): the checkout's engine/ is used.
    with (
        mock.patch("importlib.resources.files", lambda package: tmp_path),
        mock.patch.object(engine, "_SOURCE_TREE", CHECKOUT),
    ):
        assert engine.engine_sources() == CHECKOUT / "engine"
    with (
        mock.patch("importlib.resources.files", lambda package: tmp_path),
        mock.patch.object(engine, "_SOURCE_TREE", tmp_path),
        pytest.raises(EngineError, match="engine sources are missing"),
    ):
        engine.engine_sources()


def test_the_shipped_sources_come_first(tmp_path):
    shipped = tmp_path / "_engine_src"
    shipped.mkdir()
    (shipped / "CMakeLists.txt").write_text("project(x)\n")
    with mock.patch("importlib.resources.files", lambda package: tmp_path):
        assert engine.engine_sources() == shipped
