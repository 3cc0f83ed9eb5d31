"""Run the commscope-tcp client for a stored request and stream its records into the store.

As with the engine, every point is committed as it arrives: an unreachable peer, a server
that closes mid-run or a timeout ends the run as incomplete with a one-line message, and
what was measured stays stored (``commscope run --resume RUN`` measures the rest).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from commscope.data.record_parse import parse_record
from commscope.data.records import End, Header, Point, Stream
from commscope.data.session import Measuring
from commscope.data.store import Store
from commscope.errors import LaunchError
from commscope.measure import launch
from commscope.measure.runner import Outcome
from commscope.measure.tcp import program as prog
from commscope.measure.tcp.server import serving

_PREFIX = "commscope-tcp: "


def expected_records(options: dict[str, Any]) -> int:
    """Points plus stream records the client writes for these options (before skipping)."""
    mode = options.get("mode", "pingpong")
    sizes = len(options.get("sizes") or []) if mode != "stream" else 0
    return sizes + (1 if mode != "pingpong" else 0)


def _cause(stderr: str, result: launch.JobResult) -> str:
    if result.timed_out:
        return "timed out (raise --timeout)"
    lines = [ln.strip() for ln in stderr.splitlines() if ln.strip()]
    mine = [ln.removeprefix(_PREFIX) for ln in lines if ln.startswith(_PREFIX)]
    if mine:
        return mine[-1]
    return lines[-1] if lines else f"the client exited with status {result.returncode}"


def run(
    store: Store,
    run_id: int,
    request: dict[str, Any],
    progress: Callable[[int, int], None] | None = None,
) -> Outcome:
    """Measure ``request`` (a "tcp" request) and store the records under ``run_id``.

    Keys already stored for the run are skipped, which is how --resume works.

    Raises:
        LaunchError: the peer could not be reached, the session broke off or timed out;
            stored records are kept and the run is marked incomplete.
        EngineError: commscope-tcp is missing and cannot be built.
    """
    program = prog.find()
    options = request["tcp"]
    session = Measuring(store, run_id)
    skip = session.measured()
    total = expected_records(options)
    state: dict[str, Any] = {"header": None, "end": None, "lines": 0, "segment": None}

    def on_line(line: str) -> bool:
        state["lines"] += 1
        record = parse_record(line, where=f"commscope-tcp output line {state['lines']}")
        if isinstance(record, Header):
            state["header"] = record
            session.header(state["segment"], record)
        elif isinstance(record, (Point, Stream)):
            session.add(state["segment"], record)
        elif isinstance(record, End):
            state["end"] = record
        if progress:
            progress(len(skip) + session.new, total)
        return isinstance(record, End)

    try:
        with serving(request["where"], program) as end:
            argv = [
                *end.prefix,
                *prog.client_argv(program, options, end.host, end.port, skip, end.node),
            ]
            with session.segment(argv) as state["segment"]:
                result = launch.run_streaming(
                    launch.Job(argv), on_line, float(request.get("timeout_s", 3600))
                )
                if result.returncode == 0 and state["end"] is not None and not result.timed_out:
                    session.end_segment(state["segment"], None, state["end"].raw)
                    session.complete()
                    return Outcome(run_id, session.new, len(session.measured()))
                raise LaunchError(session.stop(_cause(result.stderr, result)))
    except LaunchError as err:
        if state["segment"] is None:  # the server did not start: nothing was measured
            session.stop(err.one_line())
        raise
