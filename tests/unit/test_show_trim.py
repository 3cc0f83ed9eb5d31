"""`show --trim` changes the table exactly as it changes `--json`."""

from __future__ import annotations

import json
import re

from tests import synthetic_runs


def table_means(text: str) -> dict[tuple[str, int], str]:
    """(op, bytes) -> the T column of the collectives table."""
    rows = {}
    for line in text.splitlines():
        cells = [c.strip() for c in re.split(r"[│|┃]", line) if c.strip()]
        if len(cells) > 6 and cells[0] in ("allreduce", "bcast") and cells[1].isdigit():
            rows[(cells[0], int(cells[1]))] = cells[5].rstrip(" !")
    return rows


def test_show_trim_reaches_the_table_and_its_title(cli):
    run_id = str(synthetic_runs.store_run(cli.store, "trim"))
    seen = {}
    for trim in ("0", "0.4"):
        table = cli("show", run_id, "--trim", trim, "--full", check=True).stdout
        data = json.loads(cli("show", run_id, "--trim", trim, "--json", check=True).stdout)
        assert f"{float(trim):.0%} trimmed" in table
        means = table_means(table)
        assert len(means) == len(data["collectives"]) == 14
        for row in data["collectives"]:
            assert means[(row["op"], row["bytes"])] == f"{row['time_s'] * 1e6:.2f}"
        seen[trim] = means
    # The synthetic launches have outliers: trimming moves some means.
    assert seen["0"] != seen["0.4"]
