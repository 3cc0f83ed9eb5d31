"""A kind registered from a test alone reaches `show`, `show --json` and the report.

The toy kind counts a run's p2p points per pair; it lives only here: no file of the package
names it.
"""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import pytest
from rich.table import Table

from commscope import kinds
from commscope.cli import main
from commscope.data.run_data import RunData
from commscope.kinds import registry, show_json
from commscope.report import html
from tests import synthetic_runs

TEMPLATE = """{% if run.toy %}<h3>Toy section</h3>
<p class="toy">{% for pair, n in run.toy.items() %}{{ pair }}: {{ n }} points; {% endfor %}</p>
{% endif %}"""


def count(run: RunData, view: kinds.View) -> dict[str, int] | None:
    found: dict[str, int] = {}
    for p in run.points:
        found[p.pair] = found.get(p.pair, 0) + 1
    return found or None


def table(counted: dict[str, int]) -> list[Any]:
    out = Table(title="toy: points per pair")
    out.add_column("pair")
    out.add_column("points")
    for pair, n in counted.items():
        out.add_row(pair, str(n))
    return [out]


TOY = kinds.Kind(
    name="toy",
    benchmarks=(kinds.Benchmark("toy"),),
    records=(),
    summarize=count,
    to_json=lambda counted: {"toy_points": counted or {}},
    terminal=table,
    report=lambda counted: counted,
    template=html.environment().from_string(TEMPLATE),
)


@pytest.fixture
def toy_store(tmp_path, monkeypatch):
    """A store with one stored run of the toy kind, and the toy kind registered."""
    monkeypatch.setattr(registry, "KINDS", (*registry.KINDS, TOY))
    path = tmp_path / "s.sqlite"
    points = [
        *synthetic_runs.points("intra-socket", (0, 1)),
        *synthetic_runs.points("inter-node", (0, 2)),
    ]
    run_id = synthetic_runs.store_records(path, "toy", points, "toy run", 4)
    monkeypatch.setenv("COMMSCOPE_STORE", str(path))
    return run_id, len(points) // 2


def shown(capsys, *argv: str) -> str:
    assert main(list(argv)) == 0
    return str(capsys.readouterr().out)


def test_show_prints_the_toy_table(toy_store, capsys):
    run_id, per_pair = toy_store
    text = shown(capsys, "show", str(run_id))
    assert "toy: points per pair" in text and f"intra-socket │ {per_pair}" in text


def test_show_json_has_the_toy_section_under_the_common_header(toy_store, capsys):
    run_id, per_pair = toy_store
    out = json.loads(shown(capsys, "show", str(run_id), "--json"))
    jsonschema.validate(out, show_json.schema())
    assert (out["kind"], out["schema_version"]) == ("toy", 1)
    assert out["toy_points"] == {"intra-socket": per_pair, "inter-node": per_pair}


def test_the_report_draws_the_toy_section(toy_store, capsys):
    run_id, per_pair = toy_store
    page = shown(capsys, "report", str(run_id), "-o", "-")
    assert "<h3>Toy section</h3>" in page
    assert f"intra-socket: {per_pair} points" in page


def test_without_registration_nothing_knows_the_toy(tmp_path, monkeypatch, capsys):
    path = tmp_path / "s.sqlite"
    run_id = synthetic_runs.store_records(path, "toy", [], "toy run", 4)
    monkeypatch.setenv("COMMSCOPE_STORE", str(path))
    out = json.loads(shown(capsys, "show", str(run_id), "--json"))
    assert "toy_points" not in out
