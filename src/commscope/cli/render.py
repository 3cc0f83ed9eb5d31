"""Terminal lines every run shares: its title, where it ran, load warnings.

Each kind's tables are built by its module in ``commscope.kinds``; :func:`summary` puts
them together for `show` and `run`: summary first, every table with ``full``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.text import Text

from commscope.analysis import load as load_analysis
from commscope.analysis import tcp_loss
from commscope.data import mpi_config
from commscope.data.store import RunInfo

if TYPE_CHECKING:
    from commscope.data.run_data import RunData
    from commscope.kinds import View


def run_title(run: RunInfo) -> str:
    """One line naming the run, its status, MPI and size.

    Plain text: the label is the user's, so print it with ``common.console()``, which prints
    strings literally and neutralises control characters.
    """
    from commscope import kinds  # numpy and SciPy: not for building the parser

    label = f" '{run.label}'" if run.label else ""
    alone = kinds.one_process(run.kind)
    if alone is not None:  # one process, no MPI
        return f"run {run.id}{label}: {alone}, {run.status}"
    mpi = f"{run.mpi}, " if run.mpi else ""  # TCP and imported runs have no MPI
    settings = mpi_config.settings_text(run.request)
    title = f"run {run.id}{label}: {run.kind}, {run.status}, {mpi}{run.nranks} ranks"
    return title + where_text(run.request) + (f", {settings}" if settings else "")


# Where a Slurm run was asked for, as `show` names it (every key: docs/reference/slurm.md).
SLURM_SHOWN = ("partition", "reservation", "account", "qos", "constraint")


def where_text(request: dict[str, Any]) -> str:
    """Where a run's ranks ran, when not on this machine alone (empty otherwise)."""
    if request.get("slurm"):
        part = request["slurm"]
        job = part.get("job") or "its own allocation"
        nodes = part.get("nodes") or []
        on = f" on {','.join(nodes[:8])}" + (f" and {len(nodes) - 8} more" if nodes[8:] else "")
        asked = [f"{key} {part[key]}" for key in SLURM_SHOWN if part.get(key)]
        asked.append(f"srun --mpi={part.get('plugin')}")
        return f", in Slurm job {job}{on if nodes else ''} ({', '.join(asked)})"
    if request.get("placement"):
        hosts = request["placement"]["hosts"]
        shown = ", ".join(f"{name}:{count}" for name, count in hosts[:4])
        return f", on {shown}" + (f" and {len(hosts) - 4} more hosts" if len(hosts) > 4 else "")
    if request.get("vcluster"):
        vc = request["vcluster"]
        return f", on the vcluster ({vc.get('nodes')} nodes x {vc.get('ranks_per_node')})"
    return ""


def congestion_control(console: Console, ends: list[dict[str, Any] | None]) -> None:
    """Lines naming the TCP settings of a run across nodes that its timings depend on."""
    text = tcp_loss.congestion_text(ends)
    if text:
        console.print(Text(f"TCP congestion control: {text}"))
    queue = tcp_loss.socket_queue_text(ends)
    if queue:
        console.print(Text(f"TCP socket queue limit (tcp_limit_output_bytes): {queue}"))
    restart = tcp_loss.idle_restart_text(ends)
    if restart:
        console.print(Text(f"TCP slow start after idle (tcp_slow_start_after_idle): {restart}"))
    restarting = tcp_loss.idle_restart_nodes(ends)
    if restarting:
        console.print(
            Text(
                f"  on {', '.join(restarting)} a connection idle past its RTO (>= 200 ms) "
                "sends again from 10 segments, which costs round trips where a link holds more "
                "than that per round trip ('run contention --idle S' measures it)"
            )
        )


def summary(console: Console, run: RunData, view: View, full: bool = False) -> None:
    """A run as `show` and `run` print it: title, settings, warnings, each kind's figures.

    By default each kind prints its short form (key figures, verdicts, each warning once);
    ``full`` prints every table.
    """
    from commscope import kinds  # numpy and SciPy: only when figures are printed

    console.print(run_title(run.info))
    if run.protocol_limits:
        console.print(f"eager limits (recorded): {run.protocol_limits.text()}")
    if run.info.message:
        console.print(run.info.message)
    congestion_control(console, run.ends)
    load_warnings(console, run.ends)
    for item in kinds.terminal(kinds.summaries(run, view), full):
        console.print(item)


def load_warnings(console: Console, ends: list[dict[str, Any] | None]) -> None:
    """One ``!`` line per host that other processes, extra ranks or lost TCP segments disturbed."""
    for text in load_analysis.warnings(ends):
        console.print(Text(f"! {text}: timings include waiting for a core", style="yellow"))
    for text in tcp_loss.warnings(ends):
        console.print(Text(f"! {text}: timings include waiting for lost segments", style="yellow"))
