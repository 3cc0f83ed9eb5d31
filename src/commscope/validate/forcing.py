"""Which MPI settings make a real run use the collective algorithm a prediction models.

A prediction prices one algorithm's steps (``predict.patterns``); the MPI library picks its own
algorithm per size and process count unless told otherwise. Open MPI's tuned component obeys
``coll_tuned_use_dynamic_rules`` with ``coll_tuned_<op>_algorithm N`` (numbers as
``ompi_info --param coll tuned --level 9`` lists them in Open MPI 4.1); MPICH obeys
``MPIR_CVAR_<OP>_INTRA_ALGORITHM`` (names as ``mpivars`` lists them in MPICH 4.0) once the
device is kept from overriding it (``MPIR_CVAR_<OP>_DEVICE_COLLECTIVE=0``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from commscope.errors import UsageError
from commscope.predict.patterns import ALGORITHMS

# (op, algorithm) -> Open MPI 4.1 coll_tuned algorithm number.
OPENMPI_ALGORITHMS: dict[tuple[str, str], int] = {
    ("bcast", "binomial-fanout"): 6,
    ("reduce", "binomial"): 5,
    ("allreduce", "recursive-doubling"): 3,
    ("allreduce", "ring"): 4,
    ("allgather", "ring"): 4,
    ("gather", "linear"): 1,
    ("alltoall", "pairwise"): 2,
}
# Trees that Open MPI pipelines in segments when given a segment size: 0 sends each message
# whole, as the pattern has it.
OPENMPI_SEGMENTED = ("bcast", "reduce")
# (op, algorithm) -> MPICH 4.0 intra-communicator algorithm name.
MPICH_ALGORITHMS: dict[tuple[str, str], str] = {
    ("bcast", "binomial-halving"): "binomial",  # MPICH's tree sends farthest first
    ("reduce", "binomial"): "binomial",
    ("allreduce", "recursive-doubling"): "recursive_doubling",
    ("allgather", "ring"): "ring",
    ("alltoall", "pairwise"): "pairwise",
}
# Why Open MPI cannot run an algorithm the way the pattern has it.
OPENMPI_CANNOT = {
    ("bcast", "binomial-halving"): "Open MPI 4.1's binomial Bcast (coll_tuned_bcast_algorithm"
    " 6) is the nearest-first tree; farthest first is MPICH's order: use --algorithm"
    " binomial-fanout",
    ("bcast", "binomial"): "Open MPI 4.1's binomial Bcast (coll_tuned_bcast_algorithm 6) sends"
    " to all of a rank's children at once, not child by child: use --algorithm binomial-fanout",
}
# Why MPICH cannot run an algorithm the way the pattern has it.
MPICH_CANNOT = {
    ("bcast", "binomial"): "MPICH 4.0's binomial Bcast sends to the farthest child first:"
    " that is --algorithm binomial-halving",
    ("bcast", "binomial-fanout"): "MPICH 4.0's binomial Bcast sends to one child at a time,"
    " farthest first: that is --algorithm binomial-halving",
    ("allreduce", "ring"): "MPICH 4.0 offers no ring Allreduce (MPIR_CVAR_ALLREDUCE_INTRA_"
    "ALGORITHM: recursive_doubling, reduce_scatter_allgather, smp, nb)",
    ("gather", "linear"): "MPICH 4.0 offers no linear Gather (MPIR_CVAR_GATHER_INTRA_ALGORITHM:"
    " binomial, nb)",
}
# The engine's hand-written block All-to-all needs no setting: it is the algorithm itself.
OWN_ALGORITHMS = {("alltoall", "block"): "alltoall_block"}


@dataclass(frozen=True)
class Forced:
    """The engine operation and the MPI settings that run one modelled algorithm."""

    op: str
    algorithm: str
    engine_op: str
    mca: dict[str, str] = field(default_factory=dict)
    cvar: dict[str, str] = field(default_factory=dict)

    def describe(self) -> str:
        """One line, e.g. ``bcast binomial: --mca coll_tuned_use_dynamic_rules=1 ...``."""
        settings = [f"--mca {k}={v}" for k, v in self.mca.items()]
        settings += [f"--cvar {k}={v}" for k, v in self.cvar.items()]
        how = " ".join(settings) or "the engine's own implementation, nothing to force"
        return f"{self.op} {self.algorithm} (engine op {self.engine_op}): {how}"

    def to_json(self) -> dict[str, Any]:
        """Plain dict with full key names."""
        return {
            "op": self.op,
            "algorithm": self.algorithm,
            "engine_op": self.engine_op,
            "mca": dict(self.mca),
            "cvar": dict(self.cvar),
        }


BLOCK_ALLTOALL = Forced("alltoall", "block", "alltoall_block")  # what validate ran before --op


def algorithm_of(op: str, algorithm: str | None, family: str | None = None) -> str:
    """The modelled algorithm: ``algorithm``, or the op's first that ``family`` can run."""
    if op not in ALGORITHMS:
        raise UsageError(f"--op {op}: choose one of {', '.join(ALGORITHMS)}")
    known = ALGORITHMS[op]
    if algorithm is None:
        cannot = {"openmpi": OPENMPI_CANNOT, "mpich": MPICH_CANNOT}.get(family or "", {})
        return next((a for a in known if (op, a) not in cannot), next(iter(known)))
    if algorithm not in known:
        raise UsageError(f"--algorithm {algorithm}: {op} is modelled as {', '.join(known)}")
    return algorithm


def forced(op: str, algorithm: str, family: str, procs: int) -> Forced:
    """Settings that make ``family`` (openmpi or mpich) run ``op`` with ``algorithm``.

    Raises:
        UsageError: the MPI cannot be made to run that algorithm as the model has it.
    """
    key = (op, algorithm)
    if key in OWN_ALGORITHMS:
        return Forced(op, algorithm, OWN_ALGORITHMS[key])
    if family == "openmpi":
        if key in OPENMPI_CANNOT:
            raise UsageError(f"--op {op} --algorithm {algorithm}: {OPENMPI_CANNOT[key]}")
        mca = {
            "coll_tuned_use_dynamic_rules": "1",
            f"coll_tuned_{op}_algorithm": str(OPENMPI_ALGORITHMS[key]),
        }
        if op in OPENMPI_SEGMENTED:
            mca[f"coll_tuned_{op}_algorithm_segmentsize"] = "0"
        return Forced(op, algorithm, op, mca=mca)
    if family == "mpich":
        if key in MPICH_CANNOT:
            raise UsageError(
                f"--op {op} --algorithm {algorithm}: {MPICH_CANNOT[key]}; use Open MPI"
            )
        if key == ("alltoall", "pairwise") and procs & (procs - 1) == 0:
            raise UsageError(
                f"--op alltoall --algorithm pairwise --np {procs}: for a power of two MPICH"
                " exchanges with rank XOR k, not the modelled rank + k; give a --np that is"
                " not a power of two or use Open MPI"
            )
        upper = op.upper()
        cvar = {
            f"MPIR_CVAR_{upper}_DEVICE_COLLECTIVE": "0",
            f"MPIR_CVAR_{upper}_INTRA_ALGORITHM": MPICH_ALGORITHMS[key],
        }
        return Forced(op, algorithm, op, cvar=cvar)
    raise UsageError(
        f"--op {op}: forcing a collective algorithm needs Open MPI or MPICH, not {family}"
    )


def merged(given: dict[str, str], forced_settings: dict[str, str], flag: str) -> dict[str, str]:
    """``given`` settings plus the forced ones; refuses a given one that contradicts them."""
    for name, value in forced_settings.items():
        if name in given and given[name] != value:
            raise UsageError(
                f"{flag} {name}={given[name]}: validate predict sets it to {value} to run"
                " the modelled algorithm; drop it"
            )
    return {**given, **forced_settings}
