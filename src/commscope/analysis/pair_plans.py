"""Which node pairs a matrix measures: all of them, a quick cover, a sample, or a file's list.

Every mode becomes the engine's ``--matrix-plan`` (engine/src/ops/pairs.c):

* ``all``: every ordered pair, in n - 1 shifted rounds (mpiGraph): n (n - 1) pairs.
* ``quick``: the hypercube's rounds (rank i with i XOR 2^j, each direction in a round of its
  own): every node meets ceil(log2 n) partners, n ceil(log2 n) ordered pairs in all, as
  ClusterKit's quick mode scales with N rather than N^2. The confirmation rounds then
  measure the suspects against more healthy partners.
* ``sample K``: K shifts drawn at random (from the matrix's seed): K partners per node each
  way, n K pairs.
* a file: one pair of node names per line ("a b": a sends to b; "#" starts a comment),
  packed into rounds in which a node sends once and receives once. Names are host names as
  a hostfile's (:data:`commscope.strict.HOST_NAME`), and the plan is one argument of the
  engine's command line, so it must fit in one (:data:`commscope.limits.MAX_ARGUMENT_BYTES`):
  both are checked before a run is stored, never found out at launch.
"""

from __future__ import annotations

from collections.abc import Sequence

from commscope import limits, strict
from commscope.analysis.confirm import rounds_of
from commscope.errors import InputError

MAX_XOR_BITS = 20  # masks up to 2^19: a million ranks; masks past the ranks measure nothing
MAX_FILE_PAIRS = 100_000


def quick_plan() -> str:
    """The hypercube rounds: masks 1, 2, 4, ... (the engine skips those past the ranks)."""
    return "xor:" + ",".join(str(1 << j) for j in range(MAX_XOR_BITS))


def sample_plan(k: int) -> str:
    """K shifts drawn at random by the engine, alike on every rank."""
    return f"sample:{k}"


def quick_pairs(n: int) -> int:
    """How many ordered pairs quick mode measures on n ranks."""
    return sum(1 for m in range(MAX_XOR_BITS) for i in range(n) if (i ^ (1 << m)) < n)


def file_plan(text: str, where: str, hosts: Sequence[str] = ()) -> str:
    """The names plan of a pairs file's text; ``hosts``, when known, are the run's nodes.

    Raises:
        InputError: a line is not two names, a name is not a host name (a NUL or another
            control character in it), a node is paired with itself, a pair is listed twice,
            a name is not one of ``hosts``, there are no pairs, or more than one command
            line's argument holds.
    """
    pairs: list[tuple[str, str]] = []
    seen: set[tuple[str, str]] = set()
    for number, line in enumerate(text.splitlines(), 1):
        words = line.split("#", 1)[0].split()
        if not words:
            continue
        at = f"{where} line {number}"
        if len(words) != 2:
            raise InputError(f"{at}: give two node names, 'sender receiver'")
        a, b = words
        for name in (a, b):
            if not strict.HOST_NAME.fullmatch(name):
                raise InputError(
                    f"{at}: {strict.shown(name)} is not a node name; give host names"
                    " (letters, digits, '.', '-', '_') as a hostfile does"
                )
            if hosts and name not in hosts:
                raise InputError(
                    f"{at}: node {name!r} is not one of the run's nodes ({', '.join(hosts)});"
                    " fix the name or the hosts"
                )
        if a == b:
            raise InputError(f"{at}: {a} is paired with itself; pair two nodes")
        if (a, b) in seen:
            raise InputError(f"{at}: {a} {b} is listed twice; list each pair once")
        seen.add((a, b))
        pairs.append((a, b))
        if len(pairs) > MAX_FILE_PAIRS:
            raise InputError(f"{where}: more than {MAX_FILE_PAIRS} pairs; split the file")
    if not pairs:
        raise InputError(f"{where}: no pairs; give one 'sender receiver' per line")
    names = sorted({x for p in pairs for x in p})
    index = {n: i for i, n in enumerate(names)}
    packed = rounds_of([(index[a], index[b]) for a, b in pairs])
    plan = "names:" + ";".join(",".join(f"{names[a]}>{names[b]}" for a, b in r) for r in packed)
    if len(plan) > limits.MAX_ARGUMENT_BYTES:  # ASCII names: a character is a byte
        most = len(pairs) * limits.MAX_ARGUMENT_BYTES // len(plan)
        raise InputError(
            f"{where}: its {len(pairs)} pairs make a plan of {len(plan)} bytes, more than"
            f" one command-line argument holds ({limits.MAX_ARGUMENT_BYTES}); give at most"
            f" about {most} of these pairs a run, or use --pairs quick or --partners K"
        )
    return plan
