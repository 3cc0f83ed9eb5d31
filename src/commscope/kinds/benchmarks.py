"""What ``commscope run NAME`` measures through the engine: one entry per name.

A kind lists the benchmarks it measures in ``Kind.benchmarks`` (the matrix kind measures
``matrix`` and ``bisection``). Code outside ``kinds/`` asks these entries what a benchmark
does instead of comparing its name.
"""

from __future__ import annotations

from dataclasses import dataclass

DEFAULT_RUN = "all"  # `commscope run` with no kind: every benchmark with ``in_default_run``


@dataclass(frozen=True)
class Benchmark:
    """One ``commscope run NAME`` of the engine.

    Attributes:
        name: the name after ``commscope run``, stored as the run's benchmark.
        in_default_run: measured by ``commscope run`` with no kind (``all``).
        paired: pairs every rank with others, one rank per node (or per socket); needs two
            ranks at least.
        drains: names nodes to drain (``--drain``) and confirms its suspects after the run.
        one_sided: MPI one-sided communication (Open MPI across nodes needs its osc chosen).
    """

    name: str
    in_default_run: bool = False
    paired: bool = False
    drains: bool = False
    one_sided: bool = False
