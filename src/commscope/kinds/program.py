"""The program kind: whole MPI programs, simulated or measured.

Simulated on a SimGrid model (`simulate app`, `simulate hpl`), or measured on real hosts
(`run hpl`, its data marked ``measured``).

A run of kind ``app`` or ``hpl`` has no records; what it measured (simulated and wall time,
the program's output, HPL's solve and residual, the switch's load) is the run's data under
its kind's name, read into ``RunData.program``.
"""

from __future__ import annotations

from typing import Any

from rich.table import Table

from commscope.data.run_data import RunData
from commscope.kinds.base import Kind, View
from commscope.report import summary_card

# Shown by `show`: the tail of the program's output, not all the stored 64 KiB.
OUTPUT_LINES = 20


def summarize(run: RunData, view: View) -> dict[str, Any] | None:
    """The run's program data; None for runs of other kinds."""
    return run.program if isinstance(run.program, dict) else None


def to_json(found: dict[str, Any] | None) -> dict[str, Any]:
    """``show --json``: the program's data, or None."""
    return {"program": found}


def _figure(value: Any, form: str = "{:.6g}") -> str:
    return "" if value is None else form.format(value)


def rows(found: dict[str, Any]) -> list[tuple[str, str]]:
    """(name, value) of the figures a program run has, in the order shown."""
    if found.get("measured"):
        out = [
            ("wall time (s)", _figure(found.get("wall_s"), "{:.3f}")),
            ("MPI", str(found.get("mpi") or "")),
            ("hosts", ", ".join(found.get("hosts") or ())),
        ]
    else:
        out = [
            ("simulated time (s)", _figure(found.get("simulated_s"))),
            ("wall time (s)", _figure(found.get("wall_s"), "{:.3f}")),
            ("host flop/s (dgemm)", _figure(found.get("host_flops"), "{:.4g}")),
            ("model core flop/s", _figure(found.get("core_flops"), "{:.4g}")),
        ]
    if "gflops" in found:
        out = [
            ("grid", f"{found['p']}x{found['q']}"),
            ("N, NB", f"{found['n']}, {found['nb']}"),
            ("GFLOPS", _figure(found["gflops"], "{:.4g}")),
            ("HPL time (s)", _figure(found.get("hpl_time_s"))),
            (
                "residual",
                f"{_figure(found.get('residual'), '{:.4g}')} "
                + ("PASSED" if found.get("passed") else "FAILED"),
            ),
            *out,
        ]
    switch = (found.get("netload") or {}).get("switch")
    if switch:
        out += [
            ("switch messages", str(switch["messages"])),
            ("switch mean message (B)", _figure(switch.get("mean_message_bytes"), "{:.0f}")),
            ("switch load (Mbit/s)", _figure(switch.get("mbit_per_s"), "{:.1f}")),
        ]
    return out


def terminal(found: dict[str, Any]) -> list[Any]:
    """The figures, then the tail of the program's output."""
    what = found.get("kind", "program")
    how = "measured" if found.get("measured") else "simulated"
    table = Table(title=f"{how} {what}: {found.get('source') or found.get('grid') or ''}")
    table.add_column("figure")
    table.add_column("value", justify="right")
    for name, value in rows(found):
        table.add_row(name, value)
    out: list[Any] = [table]
    lines = str(found.get("output") or "").splitlines()[-OUTPUT_LINES:]
    if lines and what == "app":
        out.append("program output (last lines):\n" + "\n".join(lines))
    return out


def report(found: dict[str, Any]) -> dict[str, Any]:
    """The report entry: the figures' rows."""
    how = "Measured" if found.get("measured") else "Simulated"
    return {"kind": found.get("kind", "program"), "how": how, "rows": rows(found)}


KIND = Kind(
    name="program",
    records=(),
    summarize=summarize,
    to_json=to_json,
    terminal=terminal,
    report=report,
    template="program_section.html.j2",
    card_figures=summary_card.program_figures,
)
