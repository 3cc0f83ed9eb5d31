"""One Linpack point: solve a dense random Ax = b of order N by LU with partial pivoting.

The solver is LAPACK's ``dgetrf`` (LU with partial pivoting, the 2/3 N^3 flops) followed by
``dgetrs`` (the two triangular solves), called through ``scipy.linalg.lapack`` on the OpenBLAS
that SciPy ships. These are the routines behind ``scipy.linalg.lu_factor``/``lu_solve``; they are
called directly, on a Fortran-ordered copy that LAPACK may overwrite, so the timed region holds
only the factorisation and the solve, as in HPL, and no wrapper's copy or finiteness scan.
The one-call driver ``dgesv`` would do the same work, but the OpenBLAS bundled with SciPy ran it
on one thread whatever the thread limit (user CPU time equal to wall time on two threads), while
its ``dgetrf`` uses every thread it is given.

The matrix and right-hand side are uniform in [-0.5, 0.5), as HPL's generator. Performance is
counted with (2/3 N^3 + 2 N^2) / t (the LINPACK operation count: factorisation plus the two
triangular solves; HPL's own code counts 3/2 N^2 for the second term, under 1 % apart for
N >= 100). Each solution is checked as HPL checks it:

    ||Ax - b||_inf / (eps * (||A||_inf * ||x||_inf + ||b||_inf) * N) < 16

with eps = 2^-53 (the unit roundoff HPL prints as 1.110223e-16). A solution failing it raises
ComputeError: a wrong answer is never stored as a point.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray
from scipy.linalg import lapack

from commscope.errors import ComputeError

ROUTINE = "dgetrf+dgetrs"
THRESHOLD = 16.0
EPS = 2.0**-53
_NORM_BLOCK = 256  # columns per block when summing |A| by rows (bounds the temporary)

Matrix = NDArray[np.float64]


def hpl_flops(n: int) -> float:
    """Floating-point operations credited to one solve of order ``n``: 2/3 n^3 + 2 n^2."""
    return 2.0 / 3.0 * n**3 + 2.0 * n**2


def gflops(n: int, seconds: float) -> float:
    """GFLOPS of one solve of order ``n`` that took ``seconds``."""
    return hpl_flops(n) / seconds / 1e9


def matrix_bytes(n: int) -> int:
    """Memory one point holds: A kept for the residual and the copy LAPACK overwrites."""
    return 2 * 8 * n * n


@dataclass
class Problem:
    """A random system of order n; ``a`` is Fortran-ordered and never overwritten."""

    a: Matrix = field(repr=False)
    b: Matrix = field(repr=False)
    a_norm: float  # ||A||_inf, computed once

    @property
    def n(self) -> int:
        """The order of the system."""
        return int(self.b.shape[0])


def inf_norm(a: Matrix) -> float:
    """||A||_inf (largest absolute row sum), in column blocks so no n x n temporary is made."""
    rows = np.zeros(a.shape[0])
    for j in range(0, a.shape[1], _NORM_BLOCK):
        rows += np.abs(a[:, j : j + _NORM_BLOCK]).sum(axis=1)
    return float(rows.max()) if rows.size else 0.0


def make_problem(n: int, seed: int) -> Problem:
    """A random system of order ``n``, entries uniform in [-0.5, 0.5), reproducible by seed."""
    rng = np.random.default_rng([seed, n])
    a = rng.random((n, n)).T  # the transpose of a C-ordered array is Fortran-ordered
    a -= 0.5
    b = rng.random(n) - 0.5
    return Problem(a, b, inf_norm(a))


def scaled_residual(a: Matrix, x: Matrix, b: Matrix, a_norm: float | None = None) -> float:
    """HPL's scaled residual ||Ax - b||_inf / (eps (||A||_inf ||x||_inf + ||b||_inf) n)."""
    n = int(b.shape[0])
    r = float(np.max(np.abs(a @ x - b)))
    norm_a = inf_norm(a) if a_norm is None else a_norm
    scale = EPS * (norm_a * float(np.max(np.abs(x))) + float(np.max(np.abs(b)))) * n
    if not np.isfinite(r) or scale == 0.0:
        return float("inf")
    return r / scale


def check_residual(value: float, n: int, cores: int, threshold: float = THRESHOLD) -> None:
    """Raise ComputeError when a scaled residual fails HPL's test (or is not a number)."""
    if not value < threshold:  # also catches NaN
        raise ComputeError(
            f"N={n} on {cores} core{'s' if cores != 1 else ''}: scaled residual {value:.3g}"
            f" is not below {threshold:g}, the solution is wrong; suspect the BLAS/LAPACK"
            " library or the memory (the point was not stored)"
        )


@dataclass(frozen=True)
class Solve:
    """One timed solve: wall and CPU seconds and the solution."""

    seconds: float
    cpu_seconds: float  # CPU time of every thread of the process: / seconds = threads at work
    x: Matrix = field(repr=False)


def solve(problem: Problem, work: Matrix) -> Solve:
    """Time dgetrf + dgetrs on a fresh copy of A in ``work`` (same shape, Fortran order).

    Raises:
        ComputeError: LAPACK reports an illegal argument or an exactly singular U.
    """
    np.copyto(work, problem.a)
    rhs = problem.b.copy()
    c0, t0 = time.process_time(), time.perf_counter()
    lu, piv, info = lapack.dgetrf(work, overwrite_a=1)
    if info == 0:
        x, info = lapack.dgetrs(lu, piv, rhs, overwrite_b=1)
    t1, c1 = time.perf_counter(), time.process_time()
    if info != 0:
        raise ComputeError(
            f"N={problem.n}: LAPACK returned info={info}"
            f" ({'singular matrix' if info > 0 else 'bad argument'})"
        )
    return Solve(t1 - t0, c1 - c0, x)
