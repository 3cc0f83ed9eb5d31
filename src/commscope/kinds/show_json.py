"""What ``show --json`` prints: a common header, then the sections of the run's own kinds.

The header (``schema_version``, ``run``, ``kind`` and the run's facts) is the same for every
run; a kind's sections follow when the run is of that kind or holds something for it. The
JSON Schema ``schema/show-v1.schema.json`` ships with the package and describes the header;
each kind documents its own keys (``docs/reference/<kind>.md``).
"""

from __future__ import annotations

import json
from importlib import resources
from typing import Any

from commscope.kinds import measures
from commscope.kinds.base import Kind

SCHEMA_VERSION = 1  # raised when a header key changes meaning or goes
SCHEMA_FILE = "show-v1.schema.json"


def schema() -> dict[str, Any]:
    """The JSON Schema of ``show --json``, as shipped in the package."""
    text = (resources.files("commscope.kinds") / "schema" / SCHEMA_FILE).read_text("utf-8")
    found: dict[str, Any] = json.loads(text)
    return found


def owns(kind: Kind[Any], run_kind: str) -> bool:
    """Whether a run of ``run_kind`` is the kind's own (by its name or its benchmarks)."""
    return run_kind == kind.name or any(measures(run_kind, b.name) for b in kind.benchmarks)


def sections(found: list[tuple[Kind[Any], Any]], run_kind: str) -> dict[str, Any]:
    """The keys of the kinds a run of ``run_kind`` owns, and of any other kind that has data."""
    out: dict[str, Any] = {}
    for kind, summary in found:
        keys = kind.to_json(summary)
        if owns(kind, run_kind) or keys != kind.to_json(None):
            out.update(keys)
    return out


def document(header: dict[str, Any], found: list[tuple[Kind[Any], Any]]) -> dict[str, Any]:
    """The whole ``show --json`` output: the schema version, ``header``, then the sections."""
    return {"schema_version": SCHEMA_VERSION, **header, **sections(found, header["kind"])}
