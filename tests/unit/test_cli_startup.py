"""The CLI starts without its heavy libraries; the names its --help spells out stay true."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import commscope

# Imported only when a command runs (see commscope/cli/__init__.py).
HEAVY = ("numpy", "scipy", "matplotlib", "jinja2", "jsonschema", "yaml", "rich")

_PROBE = f"""
import json, sys
from commscope.cli import build_parser
build_parser().parse_args(["run", "p2p", "--np", "2"])
print(json.dumps(sorted(m for m in {HEAVY!r} if m in sys.modules)))
"""


def test_building_and_using_the_parser_imports_no_heavy_library():
    # A fresh interpreter: this one has imported numpy and the rest for other tests.
    src = str(Path(commscope.__file__).resolve().parents[1])
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([src, os.environ.get("PYTHONPATH", "")]))
    out = subprocess.run(
        [sys.executable, "-c", _PROBE], capture_output=True, text=True, env=env, check=True
    )
    assert json.loads(out.stdout) == []


def test_predict_and_simulate_help_names_match_their_packages():
    from commscope import predict
    from commscope.cli import predict_cmd, simulate_options
    from commscope.simulate.params import SWEEPABLE

    assert predict_cmd.OPERATIONS == tuple(predict.ALGORITHMS)
    assert predict_cmd.ORDERS == predict.placement.ORDERS
    assert simulate_options.SWEEPABLE_NAMES == tuple(SWEEPABLE)
