"""One exception hierarchy; every message is one line that names the input and the fix."""

from __future__ import annotations


class CommscopeError(Exception):
    """Base of every error commscope reports to the user.

    Attributes:
        exit_code: process exit status the CLI uses for this error.
    """

    exit_code = 1

    def one_line(self) -> str:
        """Return the message joined with its cause chain, on one line."""
        parts: list[str] = []
        err: BaseException | None = self
        while err is not None:
            text = " ".join(str(err).split())
            if text and text not in parts:
                parts.append(text)
            err = err.__cause__
        return ": ".join(parts)


class UsageError(CommscopeError):
    """Bad command-line input."""

    exit_code = 2


class InputError(UsageError):
    """A file or value from the user breaks its format or the input rules.

    A number not in ASCII digits, not finite or out of its stated bounds
    (:mod:`commscope.limits`), a label with control characters. Raised before anything is
    stored.
    """


class StoreError(CommscopeError):
    """The SQLite store cannot be opened, is not ours, or a run is missing."""


class RecordError(CommscopeError):
    """A record from the engine (or an import) does not match the schema."""


class EngineError(CommscopeError):
    """The engine cannot be found, built, or failed while measuring."""


class LaunchError(CommscopeError):
    """The MPI launcher failed, timed out, or lost a rank."""


class ClusterError(CommscopeError):
    """The virtual cluster cannot be built, used or removed."""


class ComputeError(CommscopeError):
    """The node compute benchmark failed: a wrong solution, or threads or cpus not applied."""


class PredictError(CommscopeError):
    """A cluster model, placement, pattern or cost input for a prediction is unusable."""

    exit_code = 2


class SimulateError(CommscopeError):
    """SimGrid is missing, a simulation parameter is unusable, or a simulated run failed."""


class Interrupted(KeyboardInterrupt):
    """A termination signal (SIGTERM, SIGHUP, SIGINT) received by the CLI.

    A subclass of KeyboardInterrupt, so every cleanup path written for Ctrl-C (killing the MPI
    job's process group, marking the run incomplete) runs for it too.

    Attributes:
        signum: the signal's number; the CLI exits with 128 + signum, as shells do.
        signame: its name, e.g. "SIGTERM".
    """

    def __init__(self, signum: int) -> None:
        import signal  # a built-in module: no cost at start

        self.signum = signum
        try:
            self.signame = signal.Signals(signum).name
        except ValueError:
            self.signame = f"signal {signum}"
        super().__init__(f"interrupted by {self.signame}")

    @property
    def exit_code(self) -> int:
        """128 + the signal's number (143 for SIGTERM, 129 for SIGHUP, 130 for SIGINT)."""
        return 128 + self.signum


def interrupt_cause(err: BaseException) -> str:
    """How an interrupt is named in run messages: "interrupted by SIGTERM", or "interrupted"."""
    return f"interrupted by {err.signame}" if isinstance(err, Interrupted) else "interrupted"
