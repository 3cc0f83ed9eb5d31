"""The engine's CMake project is found in the package, or in the checkout of an editable install."""

from __future__ import annotations

from pathlib import Path
from unittest import mock

from commscope.measure import engine

CHECKOUT = Path(__file__).resolve().parents[2]


def test_an_editable_install_builds_from_the_checkouts_engine(tmp_path):
    # No _engine_src beside the package (pip install -e): the checkout's engine/ is used.
    with mock.patch("importlib.resources.files", lambda package: tmp_path):
        assert engine.engine_sources() == CHECKOUT / "engine"
    assert (engine.engine_sources() / "CMakeLists.txt").is_file()


def test_the_shipped_sources_come_first(tmp_path):
    shipped = tmp_path / "_engine_src"
    shipped.mkdir()
    (shipped / "CMakeLists.txt").write_text("project(x)\n")
    with mock.patch("importlib.resources.files", lambda package: tmp_path):
        assert engine.engine_sources() == shipped
