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
