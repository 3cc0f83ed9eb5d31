"""Where the store lives when no --store is given (no SQLite import: the CLI reads it at start)."""

from __future__ import annotations

import os


def default_store() -> str:
    """Return the store path: $COMMSCOPE_STORE, else $XDG_DATA_HOME/commscope/store.sqlite."""
    if os.environ.get("COMMSCOPE_STORE"):
        return os.environ["COMMSCOPE_STORE"]
    home = os.path.expanduser("~")
    data = os.environ.get("XDG_DATA_HOME") or os.path.join(home, ".local", "share")
    return os.path.join(data, "commscope", "store.sqlite")


def sudo_store_problem(path: str) -> str | None:
    """Why ``path`` must not be used: root's default store reached through sudo; else None.

    ``sudo`` resets HOME, so without --store (or COMMSCOPE_STORE) a command run as
    ``sudo commscope ...`` would read and write root's store, not the invoking user's:
    runs measured there would be missing from the user's next ``topology latest`` or
    ``report``. The fix names the user's own store.
    """
    import pwd

    user = os.environ.get("SUDO_USER")
    if os.geteuid() != 0 or not user or user == "root" or os.environ.get("COMMSCOPE_STORE"):
        return None
    root_home = pwd.getpwuid(0).pw_dir
    default = os.path.abspath(default_store())
    if os.path.abspath(path) != default or not default.startswith(root_home.rstrip("/") + "/"):
        return None
    theirs = os.path.join(os.path.expanduser(f"~{user}"), ".local", "share", "commscope")
    return (
        f"under sudo the store would be root's ({default}), not {user}'s; give"
        f" --store {os.path.join(theirs, 'store.sqlite')} (or COMMSCOPE_STORE), or drain as a"
        " user with Slurm's Administrator level without sudo (docs/howto/find-bad-nodes.md)"
    )
