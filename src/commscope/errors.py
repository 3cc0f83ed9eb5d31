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
