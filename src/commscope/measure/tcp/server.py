"""Start commscope-tcp servers and always stop them.

``start`` runs a server in its own process group and waits for its "listening ADDR PORT"
line. ``serving`` gives the client an endpoint for a request's placement: a peer the user
runs a server on (nothing to start), loopback (a server here, on a free port), or the
virtual cluster (a server in the second node, the client in the first, through
``ip netns exec``). Whatever happens to the client, the server it started is stopped.
"""

from __future__ import annotations

import queue
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from commscope.errors import LaunchError
from commscope.measure import launch
from commscope.measure.tcp.program import DEFAULT_PORT, server_argv

READY_TIMEOUT_S = 10.0
_PREFIX = "commscope-tcp: "


def _last_error(text: str) -> str:
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    return lines[-1].removeprefix(_PREFIX) if lines else "it exited without a message"


@dataclass
class Server:
    """A running server: its process, where it listens, what it printed."""

    proc: subprocess.Popen[str]
    address: str
    port: int
    log: list[str] = field(default_factory=list)  # stdout lines after "listening"
    _stderr: list[str] = field(default_factory=list)
    _threads: list[threading.Thread] = field(default_factory=list)

    def stop(self) -> str:
        """Stop the server (its whole process group) and return what it wrote on stderr."""
        launch.kill_group(self.proc)
        for thread in self._threads:
            thread.join(timeout=5)
        return "".join(self._stderr)


def start(
    argv: list[str], what: str = "the tcp server", ready_timeout_s: float = READY_TIMEOUT_S
) -> Server:
    """Start a server from ``argv`` and return once it listens.

    Raises:
        LaunchError: it could not start (e.g. its port is in use) or did not listen in time.
    """
    try:
        proc = subprocess.Popen(
            argv,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            text=True,
            start_new_session=True,
        )
    except OSError as err:
        raise LaunchError(f"cannot start {what} ({argv[0]}: {err.strerror})") from None
    assert proc.stdout is not None and proc.stderr is not None
    lines: queue.Queue[str | None] = queue.Queue()
    stderr: list[str] = []

    def pump_out() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.put(line)
        lines.put(None)

    def pump_err() -> None:
        assert proc.stderr is not None
        stderr.append(proc.stderr.read())

    threads = [threading.Thread(target=f, daemon=True) for f in (pump_out, pump_err)]
    for thread in threads:
        thread.start()
    server = Server(proc, "", 0, _stderr=stderr, _threads=threads)
    try:
        line = lines.get(timeout=ready_timeout_s)
    except queue.Empty:
        server.stop()
        raise LaunchError(f"{what} did not start listening within {ready_timeout_s:g} s") from None
    words = (line or "").split()
    if len(words) != 3 or words[0] != "listening" or not words[2].isdigit():
        why = _last_error(server.stop())
        raise LaunchError(f"{what} did not start: {why}")
    server.address, server.port = words[1], int(words[2])

    def keep_log() -> None:  # the pipe must not fill up while sessions run
        while (more := lines.get()) is not None:
            server.log.append(more.rstrip("\n"))

    threads.append(threading.Thread(target=keep_log, daemon=True))
    threads[-1].start()
    return server


@dataclass(frozen=True)
class Endpoint:
    """Where the client connects, and how it is started."""

    host: str
    port: int
    prefix: tuple[str, ...] = ()  # e.g. ("ip", "netns", "exec", "csnode1")
    node: str | None = None  # the client's node name, when commscope chose it


def _vcluster_nodes() -> tuple[Any, Any]:
    from commscope.measure import vcluster

    state = vcluster.status()
    if state is None or not state.healthy or len(state.nodes) < 2:
        why = (
            "none is up"
            if state is None
            else "; ".join(state.problems) or f"it has {len(state.nodes)} node"
        )
        raise LaunchError(
            f"no usable virtual cluster of 2 nodes ({why}); run 'commscope "
            "vcluster up --nodes 2' as root first"
        )
    return state.nodes[0], state.nodes[1]


@contextmanager
def serving(where: dict[str, Any], program: Path) -> Iterator[Endpoint]:
    """Yield the endpoint for a request's placement, with a server running when needed.

    Args:
        where: the request's placement: {"kind": "peer", "host", "port"}, {"kind":
            "loopback"} or {"kind": "vcluster"}.
        program: the commscope-tcp binary.

    Raises:
        LaunchError: the server could not start, or the vcluster is not usable.
    """
    kind = where.get("kind", "peer")
    if kind == "peer":
        yield Endpoint(str(where["host"]), int(where["port"]))
        return
    if kind == "loopback":
        server = start(server_argv(program, "127.0.0.1", 0, once=True))
        endpoint = Endpoint("127.0.0.1", server.port)
    elif kind == "vcluster":
        client, node = _vcluster_nodes()
        argv = [
            "ip",
            "netns",
            "exec",
            node.name,
            *server_argv(program, node.address, DEFAULT_PORT, node.name, once=True),
        ]
        server = start(argv, what=f"the tcp server on {node.name}")
        endpoint = Endpoint(
            node.address, server.port, ("ip", "netns", "exec", client.name), client.name
        )
    else:
        raise LaunchError(f"unknown tcp placement {kind!r}; run the request again")
    try:
        yield endpoint
    finally:
        server.stop()
