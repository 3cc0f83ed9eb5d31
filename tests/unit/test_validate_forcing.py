"""Which settings force each modelled collective algorithm, on Open MPI and on MPICH."""

from __future__ import annotations

import pytest

from commscope.errors import UsageError
from commscope.predict import ALGORITHMS
from commscope.validate import forcing
from commscope.validate.predict import pattern_of

# The numbers `ompi_info --param coll tuned --level 9` lists in Open MPI 4.1.
OPENMPI = {
    ("bcast", "binomial-fanout"): ("coll_tuned_bcast_algorithm", "6"),
    ("reduce", "binomial"): ("coll_tuned_reduce_algorithm", "5"),
    ("allreduce", "recursive-doubling"): ("coll_tuned_allreduce_algorithm", "3"),
    ("allreduce", "ring"): ("coll_tuned_allreduce_algorithm", "4"),
    ("allgather", "ring"): ("coll_tuned_allgather_algorithm", "4"),
    ("gather", "linear"): ("coll_tuned_gather_algorithm", "1"),
    ("alltoall", "pairwise"): ("coll_tuned_alltoall_algorithm", "2"),
}
# The names `mpivars` lists in MPICH 4.0.
MPICH = {
    ("bcast", "binomial-halving"): ("MPIR_CVAR_BCAST_INTRA_ALGORITHM", "binomial"),
    ("reduce", "binomial"): ("MPIR_CVAR_REDUCE_INTRA_ALGORITHM", "binomial"),
    ("allreduce", "recursive-doubling"): (
        "MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM",
        "recursive_doubling",
    ),
    ("allgather", "ring"): ("MPIR_CVAR_ALLGATHER_INTRA_ALGORITHM", "ring"),
    ("alltoall", "pairwise"): ("MPIR_CVAR_ALLTOALL_INTRA_ALGORITHM", "pairwise"),
}


def modelled() -> list[tuple[str, str]]:
    return [
        (op, alg)
        for op, algs in ALGORITHMS.items()
        for alg in algs
        if (op, alg) not in forcing.OPENMPI_CANNOT
    ]


@pytest.mark.parametrize(("op", "algorithm"), modelled())
def test_every_modelled_algorithm_runs_under_open_mpi(op, algorithm):
    f = forcing.forced(op, algorithm, "openmpi", 6)
    assert (f.op, f.algorithm) == (op, algorithm)
    assert not f.cvar
    if (op, algorithm) == ("alltoall", "block"):
        assert f.engine_op == "alltoall_block" and not f.mca  # the engine's own loop
        return
    assert f.engine_op == op
    name, number = OPENMPI[(op, algorithm)]
    assert f.mca["coll_tuned_use_dynamic_rules"] == "1"
    assert f.mca[name] == number
    # A segmented tree pipelines the buffer, which the pattern does not: segments are off.
    segmented = f"{name}_segmentsize"
    assert (f.mca.get(segmented) == "0") == (op in ("bcast", "reduce"))
    assert set(f.mca) <= {"coll_tuned_use_dynamic_rules", name, segmented}


@pytest.mark.parametrize(("op", "algorithm"), sorted(MPICH))
def test_mpich_gets_the_algorithm_cvar_and_keeps_the_device_from_overriding_it(op, algorithm):
    f = forcing.forced(op, algorithm, "mpich", 6)
    name, value = MPICH[(op, algorithm)]
    assert f.engine_op == op and not f.mca
    assert f.cvar == {name: value, f"MPIR_CVAR_{op.upper()}_DEVICE_COLLECTIVE": "0"}
    assert f"--cvar {name}={value}" in f.describe()


def test_block_alltoall_needs_nothing_forced_on_mpich_either():
    f = forcing.forced("alltoall", "block", "mpich", 4)
    assert f == forcing.BLOCK_ALLTOALL and not f.mca and not f.cvar
    assert "nothing to force" in f.describe()


@pytest.mark.parametrize(
    ("op", "algorithm", "procs", "why"),
    [
        ("allreduce", "ring", 6, "no ring Allreduce"),
        ("gather", "linear", 6, "no linear Gather"),
        ("alltoall", "pairwise", 8, "rank XOR k"),
        ("bcast", "binomial", 6, "farthest child first"),
        ("bcast", "binomial-fanout", 6, "one child at a time"),
    ],
)
def test_mpich_refuses_what_it_cannot_run_as_modelled(op, algorithm, procs, why):
    with pytest.raises(UsageError, match=why) as err:
        forcing.forced(op, algorithm, "mpich", procs)
    assert "\n" not in str(err.value) and f"--op {op}" in str(err.value)


def test_each_mpi_gets_the_bcast_tree_it_runs():
    # MPICH's binomial tree sends farthest first (binomial-halving); Open MPI's is the
    # nearest-first tree whose parents send to all their children at once (binomial-fanout).
    assert forcing.algorithm_of("bcast", None, "mpich") == "binomial-halving"
    assert forcing.algorithm_of("bcast", None, "openmpi") == "binomial-fanout"
    for algorithm in ("binomial-halving", "binomial"):
        with pytest.raises(UsageError, match="use --algorithm binomial-fanout$"):
            forcing.forced("bcast", algorithm, "openmpi", 4)


def test_algorithm_defaults_to_the_predictors_first_and_refuses_unknown_names():
    assert forcing.algorithm_of("allreduce", None) == "recursive-doubling"
    assert forcing.algorithm_of("alltoall", None) == "block"
    assert forcing.algorithm_of("allreduce", "ring") == "ring"
    with pytest.raises(UsageError, match="--algorithm ring: bcast is modelled as binomial"):
        forcing.algorithm_of("bcast", "ring")
    with pytest.raises(UsageError, match="--op scan: choose one of"):
        forcing.algorithm_of("scan", None)


def test_given_settings_keep_unless_they_contradict_the_forced_ones():
    f = forcing.forced("bcast", "binomial-fanout", "openmpi", 4)
    given = {"btl_tcp_flags": "send", "coll_tuned_use_dynamic_rules": "1"}
    assert forcing.merged(given, f.mca, "--mca") == {**given, **f.mca}
    with pytest.raises(UsageError, match="--mca coll_tuned_bcast_algorithm=7: .* sets it to 6"):
        forcing.merged({"coll_tuned_bcast_algorithm": "7"}, f.mca, "--mca")


@pytest.mark.parametrize(("op", "algorithm"), modelled())
def test_the_predicted_pattern_is_the_forced_algorithm(op, algorithm):
    f = forcing.forced(op, algorithm, "openmpi", 4)
    pattern = pattern_of(f, 4, 1 << 20, 0)
    assert (pattern.op, pattern.algorithm) == (op, algorithm)
