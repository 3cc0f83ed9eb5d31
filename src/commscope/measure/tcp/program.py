"""Find or build ``commscope-tcp``; parse peers and socket-buffer lists; build argument lists.

The program is installed with the package beside the engine. It needs no MPI, so a missing
one (e.g. when running from a source tree) is compiled with the C compiler alone into
``$COMMSCOPE_HOME/tcp/<sources hash>/`` (``commscope.measure.cprogram``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from commscope.errors import UsageError
from commscope.measure.cprogram import CProgram
from commscope.measure.launch import flag_argv
from commscope.units import parse_size

PROGRAM = "commscope-tcp"
DEFAULT_PORT = 5220
MAX_SOCKBUF = 1 << 30
# Request options in the client's own flag spelling.
CLIENT_FLAGS = {
    "mode": "--mode",
    "sizes": "--sizes",
    "sockbuf": "--sockbuf",
    "warmup": "--warmup",
    "min_samples": "--min-samples",
    "max_samples": "--max-samples",
    "target_rse": "--target-rse",
    "point_budget_s": "--point-budget",
    "sample_min_s": "--sample-min-time",
    "duration_s": "--duration",
    "interval_s": "--interval",
    "mean_bytes": "--mean-size",
    "max_bytes": "--max-message",
    "seed": "--seed",
    "connect_timeout_s": "--connect-timeout",
}
TCP_PROGRAM = CProgram(PROGRAM, ("tcp/*.c", "tcp/*.h", "include/commscope.h", "src/jsonl.c"), "tcp")
_HOST = re.compile(r"[A-Za-z0-9_.:%-]+")


def built_path() -> Path:
    """Where the program built from these sources lives."""
    return TCP_PROGRAM.built_path()


def build(dest: Path | None = None) -> Path:
    """Compile the program with ``$CC`` (default ``cc``) into ``dest`` and return its path.

    Raises:
        EngineError: no compiler, or the compilation failed.
    """
    return TCP_PROGRAM.build(dest)


def check(path: Path) -> Path:
    """Return ``path`` if it is a commscope-tcp writing this schema version.

    Raises:
        EngineError: it does not run or writes another schema version.
    """
    return TCP_PROGRAM.check(path)


def find(build_missing: bool = True) -> Path:
    """Return the program: the packaged one, else one built from the shipped sources.

    Raises:
        EngineError: none is installed and it cannot (or may not) be built.
    """
    return TCP_PROGRAM.find(build_missing)


def parse_peer(text: str, default_port: int = DEFAULT_PORT) -> tuple[str, int]:
    """Split "HOST", "HOST:PORT", "[IPV6]:PORT" or a bare IPv6 address into (host, port).

    Raises:
        UsageError: an empty host, a bad port, or characters no host name has.
    """
    spec = text.strip()
    host, port_text = spec, None
    if spec.startswith("["):
        close = spec.find("]")
        host = spec[1:close] if close > 0 else ""
        rest = spec[close + 1 :] if close > 0 else ""
        if rest and not rest.startswith(":"):
            host = ""
        port_text = rest[1:] if rest else None
    elif spec.count(":") == 1:
        host, port_text = spec.split(":")
    if not host or not _HOST.fullmatch(host):
        raise UsageError(f"--peer {text!r}: give HOST, HOST:PORT or [IPV6]:PORT")
    if port_text is None:
        return host, default_port
    if not re.fullmatch(r"[0-9]{1,5}", port_text) or not 1 <= int(port_text) <= 65535:
        raise UsageError(f"--peer {text!r}: the port must be a number from 1 to 65535")
    return host, int(port_text)


def parse_sockbufs(text: str) -> list[int]:
    """Parse "default,16K,64K": socket buffer sizes in bytes, 0 for the system default.

    Raises:
        UsageError: an item is neither "default" nor a size from 1 byte to 1 GiB.
    """
    out: list[int] = []
    for item in (part.strip() for part in text.split(",")):
        if item.lower() in ("default", "0"):
            value = 0
        else:
            value = parse_size(item) if item else -1
            if not 1 <= value <= MAX_SOCKBUF:
                raise UsageError(
                    f"--sockbuf {text!r}: give 'default' or sizes like 16K,64K,256K (at most 1 GiB)"
                )
        if value not in out:
            out.append(value)
    return out


def client_argv(
    program: Path,
    options: dict[str, Any],
    host: str,
    port: int,
    skip: Iterable[tuple[str, str, int]] = (),
    node: str | None = None,
) -> list[str]:
    """The client's argument list for request options (never a shell string).

    ``skip`` holds keys already stored: ping-pong sizes and the stream are not measured again.
    """
    argv = [
        str(program),
        "client",
        "--peer",
        host,
        "--port",
        str(port),
        *flag_argv(options, CLIENT_FLAGS),
    ]
    done = sorted({"stream" if op == "stream" else str(size) for op, _, size in skip})
    if done:
        argv += ["--skip", ",".join(done)]
    if node:
        argv += ["--node", node]
    return argv


def server_argv(
    program: Path, bind: str | None, port: int, node: str | None = None, once: bool = False
) -> list[str]:
    """The server's argument list; port 0 lets the kernel pick a free one."""
    argv = [str(program), "serve", "--port", str(port)]
    if bind:
        argv += ["--bind", bind]
    if node:
        argv += ["--node", node]
    if once:
        argv.append("--once")
    return argv
