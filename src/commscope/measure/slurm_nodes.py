"""Slurm's nodes: read node states and reasons, drain and return nodes to service.

Every command is an argument list (never a shell string): ``scontrol update NodeName=X
State=DRAIN Reason=...`` and ``State=RESUME``; states and reasons come from ``sinfo -h -N -o
%N|%T|%E``. Which nodes to drain is not decided here (:mod:`commscope.analysis.drain`); this
module only checks that Slurm is there and that this user may change node states, and runs
the commands. Every failure is a :class:`LaunchError` naming the command and the fix; the
CLI reports it as UNKNOWN (exit 3), as ``commscope check`` does.

Who may run ``scontrol update`` on a node: root, the SlurmUser, and users Slurm's accounting
gives the Administrator level (``sacctmgr show user NAME format=adminlevel``). The Operator
level is not enough: it may create, change and delete reservations, but slurmctld refuses
its node updates ("Security violation, UPDATE_NODE RPC", seen with Slurm 22.05 and its
slurmdbd; Slurm's user_permissions page: only an Admin "can alter anything on a served
slurmctld as if they were the SlurmUser or root"). :func:`require` checks that before
anything is measured or changed.
"""

from __future__ import annotations

import os
import pwd
import re
import shutil
import subprocess
import time
from dataclasses import dataclass

from commscope.errors import LaunchError
from commscope.measure.slurm import slurm_text

TOOLS = ("scontrol", "sinfo")
COMMAND_TIMEOUT_S = 60.0
# A node name as Slurm and a matrix run name it; anything else is not put into a command.
NODE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
ADMIN_LEVELS = ("administrator",)
_RIGHTS = (
    "scontrol update needs root, the SlurmUser or the Administrator level: run it as root (sudo)"
)


@dataclass(frozen=True)
class NodeState:
    """A Slurm node: its name, state (sinfo's %T, e.g. ``idle``, ``drained``) and reason."""

    name: str
    state: str
    reason: str

    @property
    def drained(self) -> bool:
        """True when the node is drained or draining (whatever else its state says)."""
        return "drain" in self.state


def drain_argv(node: str, reason: str) -> list[str]:
    """``scontrol update NodeName=node State=DRAIN Reason=reason``, as an argument list.

    Raises:
        LaunchError: a node name that is not one, or a reason with a line break.
    """
    _check_name(node)
    if "\n" in reason or "\r" in reason or not reason.strip():
        raise LaunchError(f"drain reason {reason[:40]!r}: give one line of text")
    return ["scontrol", "update", f"NodeName={node}", "State=DRAIN", f"Reason={reason}"]


def resume_argv(node: str) -> list[str]:
    """``scontrol update NodeName=node State=RESUME``, as an argument list."""
    _check_name(node)
    return ["scontrol", "update", f"NodeName={node}", "State=RESUME"]


def _check_name(node: str) -> None:
    if not NODE_NAME.fullmatch(node):
        raise LaunchError(
            f"node {node[:40]!r} is not a node name (letters, digits, '.', '-', '_'): "
            "give the node as Slurm names it"
        )


def _run(
    argv: list[str],
    what: str,
    fix: str = "check that slurmctld is up ('scontrol ping') and its log",
    timeout_s: float = COMMAND_TIMEOUT_S,
) -> str:
    """Run a Slurm command; its stdout, or LaunchError naming ``what``, the answer and ``fix``."""
    if shutil.which(argv[0]) is None:
        raise LaunchError(
            f"{what}: '{argv[0]}' is not installed, so this is not a Slurm cluster here; run it"
            " on a Slurm login node (Debian: apt-get install slurm-client), or leave it out"
        )
    try:
        done = subprocess.run(
            argv, capture_output=True, timeout=timeout_s, stdin=subprocess.DEVNULL, check=False
        )
    except subprocess.TimeoutExpired:
        raise LaunchError(
            f"{what}: '{argv[0]}' hung for {timeout_s:.0f} s: check that slurmctld is up"
            " ('scontrol ping')"
        ) from None
    except OSError as err:
        raise LaunchError(f"{what}: '{argv[0]}' did not start ({err.strerror})") from None
    if done.returncode != 0:
        said = slurm_text(done.stderr or done.stdout)
        lines = [ln.strip() for ln in said.splitlines() if ln.strip()]
        detail = lines[-1] if lines else f"exit status {done.returncode}"
        raise LaunchError(f"{what}: {argv[0]} {argv[1]} failed ({detail}): {fix}")
    return slurm_text(done.stdout)


def current_user() -> str:
    """This process' user name (its effective uid's; the uid when it has no name)."""
    try:
        return pwd.getpwuid(os.geteuid()).pw_name
    except KeyError:
        return str(os.geteuid())


def may_change_nodes() -> bool:
    """True when this user may change node states: root, SlurmUser or Administrator level.

    Raises:
        LaunchError: ``scontrol show config`` failed.
    """
    if os.geteuid() == 0:
        return True
    user = current_user()
    config = _run(["scontrol", "show", "config"], "reading Slurm's configuration")
    match = re.search(r"^SlurmUser\s*=\s*(\S+?)(?:\((\d+)\))?\s*$", config, re.MULTILINE)
    if match and (match.group(1) == user or match.group(2) == str(os.geteuid())):
        return True
    if shutil.which("sacctmgr") is None:
        return False
    try:
        out = _run(
            ["sacctmgr", "-n", "-P", "show", "user", user, "format=adminlevel"],
            "reading this user's Slurm admin level",
        )
    except LaunchError:
        return False  # no accounting: only root and SlurmUser may
    return out.strip().lower() in ADMIN_LEVELS


def require_reachable(what: str) -> None:
    """Check that Slurm's commands are here and slurmctld answers.

    Raises:
        LaunchError: no scontrol/sinfo, or slurmctld not reachable; the message names
            ``what`` and the fix.
    """
    missing = [tool for tool in TOOLS if shutil.which(tool) is None]
    if missing:
        raise LaunchError(
            f"{what}: {', '.join(missing)} not found, so this is not a Slurm cluster here; run"
            " it on a Slurm login node (Debian: apt-get install slurm-client), or leave it out"
        )
    fix = "start slurmctld or fix SlurmctldHost in slurm.conf, then try again"
    ping = _run(["scontrol", "ping"], what, fix)
    if not re.search(r"\bis UP\b", ping):
        said = " ".join(ping.split()) or "nothing"
        raise LaunchError(
            f"{what}: slurmctld does not answer (scontrol ping: {said}); start it or fix"
            " SlurmctldHost, then try again"
        )


def require(what: str) -> None:
    """Check that Slurm answers here and that this user may change node states.

    Raises:
        LaunchError: no scontrol/sinfo, slurmctld not reachable, or no right to run
            ``scontrol update`` on nodes; the message names ``what`` and the fix.
    """
    require_reachable(what)
    if not may_change_nodes():
        user = current_user()
        raise LaunchError(
            f"{what}: user {user} may not change node states (scontrol update needs root,"
            " the SlurmUser or the Administrator level; Operator is not enough): run it as"
            f" root (sudo) or ask for 'sacctmgr modify user {user} set adminlevel=administrator'"
        )


def nodes() -> dict[str, NodeState]:
    """Every Slurm node by name, with its state and reason (``none`` reads as empty).

    Raises:
        LaunchError: sinfo failed.
    """
    return node_states(_run(["sinfo", "-h", "-N", "-o", "%N|%T|%E"], "reading Slurm's node states"))


def node_states(out: str) -> dict[str, NodeState]:
    """``sinfo -h -N -o %N|%T|%E``'s lines as nodes by name (``none`` reads as no reason)."""
    found: dict[str, NodeState] = {}
    for line in out.splitlines():
        name, _, rest = line.partition("|")
        state, _, why = rest.partition("|")
        name, why = name.strip(), why.strip()
        if name and name not in found:  # a node in several partitions is listed once each
            found[name] = NodeState(name, state.strip().lower(), "" if why == "none" else why)
    return found


def find(node: str, known: dict[str, NodeState]) -> NodeState | None:
    """Slurm's node for a host name: the same name, or its short form (``n1.example`` -> n1)."""
    return known.get(node) or known.get(node.split(".", 1)[0])


def drain(node: str, reason: str) -> None:
    """Drain ``node`` with ``reason``.

    Raises:
        LaunchError: scontrol refused (the message gives its answer).
    """
    _run(drain_argv(node, reason), f"draining {node}", _RIGHTS)


def resume(node: str) -> None:
    """Return ``node`` to service.

    Raises:
        LaunchError: scontrol refused (the message gives its answer).
    """
    _run(resume_argv(node), f"returning {node} to service", _RIGHTS)


# sinfo's states (%T, before its suffixes) under which Slurm starts no job on a node.
CLOSED_STATES = ("down", "drain", "fail", "inval", "future")
# ...and those in which only a reservation's jobs start.
RESERVED_STATES = ("maint", "reserved")


@dataclass(frozen=True)
class Reservation:
    """A Slurm reservation: its name, node list (a Slurm host list), flags and whether active."""

    name: str
    nodes: str
    flags: tuple[str, ...]
    active: bool

    @property
    def maintenance(self) -> bool:
        """True for a maintenance reservation (``Flags=MAINT``)."""
        return "MAINT" in self.flags


def reservations() -> list[Reservation]:
    """Slurm's reservations (``scontrol -o show reservation``), active or not.

    Raises:
        LaunchError: scontrol failed.
    """
    out = _run(["scontrol", "-o", "show", "reservation"], "reading Slurm's reservations")
    return parse_reservations(out)


def parse_reservations(text: str) -> list[Reservation]:
    """The reservations of ``scontrol -o show reservation``'s lines (one per reservation)."""
    found = []
    for line in text.splitlines():
        fields = dict(re.findall(r"(?:^|\s)([A-Za-z]+)=(\S*)", line))
        if "ReservationName" not in fields:
            continue  # "No reservations in the system"
        nodes = "" if fields.get("Nodes") == "(null)" else fields.get("Nodes", "")
        flags = tuple(f for f in fields.get("Flags", "").split(",") if f and f != "(null)")
        found.append(
            Reservation(fields["ReservationName"], nodes, flags, fields.get("State") == "ACTIVE")
        )
    return found


def closed(state: NodeState, holding: list[Reservation], own: str | None) -> str | None:
    """Why Slurm would start no job of ours on a node now (None: it would).

    ``state``: the node's; ``holding``: the active reservations that hold it; ``own``: the
    reservation the job asks for. Drained, draining, down or failed is closed whatever the
    job asks; a maintenance reservation closes it to a job that does not ask for that one,
    another reservation (or sinfo's ``maint``/``reserved``) to a job in none that holds it.
    """
    base = re.match(r"[a-z_]*", state.state)
    name = base.group() if base else state.state
    said = state.state + (f" ({state.reason})" if state.reason else "")
    if name.startswith(CLOSED_STATES):
        return said
    maintenance = [r.name for r in holding if r.maintenance and r.name != own]
    if maintenance:
        return f"in maintenance reservation {maintenance[0]}"
    if own and any(r.name == own for r in holding):
        return None
    if holding:
        return f"in reservation {holding[0].name}"
    if name.startswith(RESERVED_STATES) or "$" in state.state:
        return said
    return None


RESERVATION_FLAGS = "MAINT,IGNORE_JOBS"
RESERVATION_DELETE_S = 30.0  # how long a reservation whose job is still ending may refuse deletion
RESERVATION_RETRY_S = 1.0


def reserve_argv(name: str, nodes: list[str], minutes: int, user: str) -> list[str]:
    """``scontrol create reservation`` of ``nodes`` for ``user`` from now, as an argument list.

    A maintenance reservation (``Flags=MAINT,IGNORE_JOBS``): Slurm starts no other job on its
    nodes, takes it whatever runs there now, and ``minutes`` bounds it should nobody delete it.
    """
    for node in nodes:
        _check_name(node)
    if not NODE_NAME.fullmatch(name) or not NODE_NAME.fullmatch(user):
        raise LaunchError(f"reservation {name[:40]!r} for {user[:40]!r}: not a Slurm name")
    return [
        "scontrol", "create", "reservation", f"ReservationName={name}", "StartTime=now",
        f"Duration={max(1, minutes)}", f"Nodes={','.join(nodes)}", f"Users={user}",
        f"Flags={RESERVATION_FLAGS}",
    ]  # fmt: skip


def unreserve_argv(name: str) -> list[str]:
    """``scontrol delete ReservationName=name``, as an argument list."""
    return ["scontrol", "delete", f"ReservationName={name}"]


def reserve(name: str, nodes: list[str], minutes: int) -> None:
    """Create maintenance reservation ``name`` of ``nodes`` for this user, from now.

    Raises:
        LaunchError: scontrol refused (a reservation of that name exists, no right...).
    """
    _run(
        reserve_argv(name, nodes, minutes, current_user()),
        f"reserving {','.join(nodes)}",
        f"if a reservation {name} is left from a recheck that was killed, delete it"
        f" ('scontrol delete ReservationName={name}'); reservations need root or the SlurmUser",
    )


def unreserve(name: str) -> None:
    """Delete reservation ``name``, retrying while a job that just ended still holds it.

    Raises:
        LaunchError: scontrol still refused after :data:`RESERVATION_DELETE_S` seconds.
    """
    deadline = time.monotonic() + RESERVATION_DELETE_S
    while True:
        try:
            _run(
                unreserve_argv(name),
                f"deleting reservation {name}",
                f"delete it with 'scontrol delete ReservationName={name}'",
            )
            return
        except LaunchError:
            if time.monotonic() >= deadline:
                raise
            time.sleep(RESERVATION_RETRY_S)
