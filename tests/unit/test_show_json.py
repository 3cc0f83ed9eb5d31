"""`show --json`: one header for every run, then only the run's own kinds' sections.

Every output is checked against the JSON Schema the package ships.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import jsonschema
import pytest

from commscope.data.store import Store
from commscope.kinds import show_json
from tests import (
    synthetic_contention,
    synthetic_loggp,
    synthetic_mbw,
    synthetic_runs,
    synthetic_tcp,
)

HEADER = set(show_json.schema()["required"])

# Each run: how it is stored, the keys it must show, and other kinds' keys it must not.
RUNS: dict[str, tuple[Callable[[Path], int], set[str], set[str]]] = {
    "p2p": (
        lambda p: synthetic_runs.store_run(p, "p2p", with_colls=False),
        {"key_figures", "sizes"},
        {"collectives", "loggp", "contention", "matrix", "mbw", "tcp", "node"},
    ),
    "loggp": (
        lambda p: synthetic_loggp.store_run(p, synthetic_loggp.records(synthetic_loggp.Model())),
        {"loggp"},
        {"key_figures", "collectives", "contention", "matrix", "mbw", "tcp"},
    ),
    "contention": (
        lambda p: synthetic_contention.store_run(
            p, synthetic_contention.records("memory", lambda m, cf: 1e-6 * cf, [1024], [1, 2])
        ),
        {"contention"},
        {"key_figures", "loggp", "collectives", "matrix", "mbw", "tcp"},
    ),
    "mbw": (
        lambda p: synthetic_mbw.store_run(p, synthetic_mbw.records(synthetic_mbw.Model())),
        {"mbw"},
        {"key_figures", "loggp", "collectives", "contention", "matrix", "tcp"},
    ),
    "tcp": (
        lambda p: synthetic_tcp.store_tcp_run(p, "tcp"),
        {"tcp"},
        {"loggp", "collectives", "contention", "matrix", "mbw", "node"},
    ),
}


def test_the_schema_is_a_valid_json_schema():
    jsonschema.Draft202012Validator.check_schema(show_json.schema())


@pytest.mark.parametrize("kind", sorted(RUNS))
def test_show_json_has_the_header_and_only_its_own_sections(cli, kind):
    store, own, others = RUNS[kind]
    run_id = store(cli.store)
    shown = json.loads(cli("show", str(run_id), "--json", check=True).stdout)
    jsonschema.validate(shown, show_json.schema())
    assert shown["schema_version"] == show_json.SCHEMA_VERSION == 1
    assert (shown["run"], shown["kind"]) == (run_id, kind)
    assert own <= set(shown), sorted(shown)
    assert not others & set(shown), sorted(others & set(shown))


def test_a_run_of_its_own_kind_without_records_keeps_the_kind_keys(cli):
    with Store.open(cli.store) as store:
        run_id = store.create_run("loggp", "empty", "synthetic", "none", 2, {})
    shown = json.loads(cli("show", str(run_id), "--json", check=True).stdout)
    jsonschema.validate(shown, show_json.schema())
    assert shown["loggp"] == [] and "contention" not in shown


def test_a_header_without_its_schema_version_is_refused():
    bad = {key: None for key in HEADER} | {"schema_version": 2, "run": 1, "kind": "p2p"}
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bad, show_json.schema())
