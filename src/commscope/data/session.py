"""One measurement session: the segments of a run, its new records, and how it ends.

Every producer that measures into the store (the MPI engine, commscope-tcp, the Linpack sweep,
hpcc) writes through a :class:`Measuring`. Each launch is a segment: it is opened before the
launch, every record is committed as it arrives, and it ends complete or incomplete. When a
launch fails or is interrupted, the run is marked incomplete with one message that says why,
what was lost, how many new records were kept and how to measure the rest; that message is
also what the user sees. Imports, which exist whole before they are stored, use
``Store.add_complete_run`` instead: the run appears complete or not at all.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from commscope.data.records import Header, Measured
from commscope.data.store import Store
from commscope.errors import CommscopeError, StoreError, interrupt_cause

RESUME_HINT = "measure the rest with 'commscope run --resume {run_id}'"


def cause_of(err: BaseException) -> str:
    """How an error that stopped a launch is named in the run's message."""
    if isinstance(err, KeyboardInterrupt):
        return interrupt_cause(err)
    if isinstance(err, CommscopeError):
        return err.one_line()
    return f"{type(err).__name__}: {err}"


class Measuring:
    """A run being measured by this process.

    Attributes:
        store: the store the run is in.
        run_id: the run.
        new: records this process stored so far.
        lost: when set, says what a failure at this moment loses ("N=4000 on 2 cores").
    """

    def __init__(self, store: Store, run_id: int, resume_hint: str = RESUME_HINT) -> None:
        self.store = store
        self.run_id = run_id
        self.new = 0
        self.lost: Callable[[], str] | None = None
        self._hint = resume_hint
        self._open: int | None = None

    def measured(self) -> set[tuple[str, str, int]]:
        """Keys already stored for the run: a resumed run skips them."""
        return self.store.measured_keys(self.run_id)

    @contextmanager
    def segment(self, argv: list[str]) -> Iterator[int]:
        """Open a segment for one launch of ``argv``; yield its id.

        An exception inside ends the segment and the run incomplete and is raised again with
        the run's message: a commscope error as the same type, an interrupt with the message
        as its text (the CLI prints it). A store that fails is not written again.
        """
        segment = self.store.start_segment(self.run_id, argv)
        self._open = segment
        try:
            yield segment
        except StoreError:
            raise
        except BaseException as err:
            if self._open != segment:
                raise
            try:
                message = self.stop(cause_of(err))
            except CommscopeError:
                raise err from None
            if isinstance(err, KeyboardInterrupt):
                err.args = (message,)
                raise
            if isinstance(err, CommscopeError):
                raise type(err)(message) from None
            raise
        finally:
            if self._open == segment:
                self._open = None

    def header(self, segment: int, header: Header) -> None:
        """Store a launch's header record."""
        self.store.set_header(self.run_id, segment, header)

    def add(self, segment: int, record: Measured) -> None:
        """Store one measured record (committed at once)."""
        self.store.add_point(self.run_id, segment, record)
        self.new += 1

    def end_segment(
        self, segment: int, note: str | None = None, end: dict[str, Any] | None = None
    ) -> None:
        """End a segment whose launch delivered everything it was asked for."""
        self.store.finish_segment(segment, "complete", note, end)
        if self._open == segment:
            self._open = None

    def complete(self, note: str | None = None) -> None:
        """Mark the run complete: every planned point is stored."""
        self.store.set_run_status(self.run_id, "complete", note)

    def stop(self, cause: str) -> str:
        """End the open segment (if any) and the run incomplete because of ``cause``.

        Returns:
            The run's message: the cause, what was lost, the records kept, how to resume.
        """
        total = len(self.measured())
        parts = [cause]
        if self.lost is not None:
            parts.append(f"lost: {self.lost()}")
        if self.new == 0 and total == 0:
            parts.append("nothing was measured")
        else:
            parts.append(
                f"{self.new} new points stored ({total} in run {self.run_id}), run marked"
                f" incomplete; {self._hint.format(run_id=self.run_id)}"
            )
        message = "; ".join(parts)
        if self._open is not None:
            self.store.finish_segment(self._open, "incomplete", message)
            self._open = None
        self.store.set_run_status(self.run_id, "incomplete", message)
        return message
