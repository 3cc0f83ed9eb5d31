"""The shipped alert rules (docs/monitoring/commscope-alerts.yml), by Prometheus' own promtool.

`promtool check rules` reads them as the server would; `promtool test rules` evaluates them
over a check's series (tests/monitoring/alert_rules_test.yml): a CRITICAL night alerts, an
UNKNOWN check alerts as UNKNOWN and not as a regression, a check missing for 26 h alerts.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from tests.conftest import need

HERE = Path(__file__).parent
RULES = HERE.parent.parent / "docs" / "monitoring" / "commscope-alerts.yml"


def promtool(*args: str) -> subprocess.CompletedProcess[str]:
    need(shutil.which("promtool") is not None, "promtool is not installed (Debian: prometheus)")
    return subprocess.run(
        ["promtool", *args], cwd=HERE, capture_output=True, text=True, timeout=120
    )


def test_the_rules_load_and_fire_as_their_tests_say() -> None:
    checked = promtool("check", "rules", str(RULES))
    assert checked.returncode == 0 and "SUCCESS: 4 rules found" in checked.stdout, checked
    tested = promtool("test", "rules", "alert_rules_test.yml")
    assert tested.returncode == 0, tested.stdout + tested.stderr
