"""Other suites' outputs (OSU, IMB, NetPIPE) turned into commscope records and runs.

``load`` reads and checks a whole file first; ``store_imported`` then writes it as one run of
kind "import" with no engine header and request {"imported": {"format", "file", "label"}}.
"""

from __future__ import annotations

import os

from commscope.data.store import Store
from commscope.importers import imb, netpipe, osu
from commscope.importers.common import PAIR_LABELS, Imported, read_lines

FORMATS = ("osu", "imb", "netpipe")

__all__ = ["FORMATS", "PAIR_LABELS", "Imported", "load", "store_imported"]


def load(
    fmt: str, path: str | os.PathLike[str], pair: str = "unknown", nranks: int | None = None
) -> Imported:
    """Read one output file of ``fmt`` (one of FORMATS) into records, storing nothing.

    Args:
        fmt: "osu", "imb" or "netpipe".
        path: the file.
        pair: pair label of point-to-point records (one of PAIR_LABELS).
        nranks: processes the OSU collectives ran on (their output does not say).

    Raises:
        InputError: the file is malformed or a number in it breaks its bounds (the message
            names the file and line).
        UsageError: the file cannot be read, or OSU collectives come without ``nranks``.
        ValueError: ``fmt`` or ``pair`` is unknown.
    """
    if fmt not in FORMATS:
        raise ValueError(f"import format {fmt!r} is not one of {', '.join(FORMATS)}")
    if pair not in PAIR_LABELS:
        raise ValueError(f"pair {pair!r} is not one of {', '.join(PAIR_LABELS)}")
    name = os.fspath(path)
    lines = read_lines(name)
    if fmt == "osu":
        return osu.parse(name, lines, pair, nranks)
    if fmt == "imb":
        return imb.parse(name, lines, pair)
    return netpipe.parse(name, lines, pair)


def store_imported(store: Store, imported: Imported, label: str) -> int:
    """Store ``imported`` as a new complete run and return its id.

    The run is created only now, after the whole file was read, and in one transaction with
    all its points: it is stored whole or, should the store fail, not at all.
    """
    path = os.path.abspath(imported.file)
    request = {"imported": {"format": imported.format, "file": path, "label": label}}
    argv = ["commscope", "import", imported.format, path]
    return store.add_complete_run(
        "import", label, imported.nranks, request, argv, list(imported.records)
    )
