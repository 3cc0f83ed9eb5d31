"""Confirm before naming: suspects of a matrix measured again against healthy partners.

NVIDIA's ClusterKit re-tests the nodes and links a first pass found slow before it calls them
bad; so does commscope. After the all-pairs matrix (``analysis/matrix``) names suspects,
a confirmation round measures each suspect node with ``PARTNERS`` partners the first pass
found healthy, both directions, and each suspect link again, in two rounds (two launches,
their pairs labelled ``c1/src->dst`` and ``c2/src->dst``). Each group of pairs measured
together also measures a reference pair of two nodes that are not suspect, so a suspect is
judged against what a healthy pair gave beside it, under the same concurrency and load (on
two shared cores an 8-byte round trip with fewer pairs at once took twice the first pass's
typical, and every latency suspect looked slow again). The typical value is the median of
the round's reference pairs, or the first pass's typical link (the polished level) when the
round has none; the thresholds are the first pass's: worse by more than ``FLOOR`` of the
typical and by ``K_MADS`` of its spread, scaled to the typical:

* a node is **bad** when most of its pairs with healthy partners are slow again;
* a link is **bad** when it is slow again while its two nodes' pairs with healthy partners
  are not (a node whose pairs are slow explains its links);
* a suspect slow in the first pass and not in every round of the confirmation is
  **transient**.

A pair is slow when its median is past the threshold and even its least disturbed sample
is worse than the typical value: a pair held up while its ranks waited for a core still has
samples that keep up with the references beside it (two healthy 4-node runs of 20 named an
8-byte link whose median was 5-20 times its references' while a fifth of its samples kept
up with them), and a slow link has none. The best sample is not held to the threshold, as
the first pass holds it: the threshold's margin comes from the first pass's spread, which
a loaded machine widens, and a token-bucket link lets its best 64 KiB sample run above its
rate (its bucket's bytes go at the line rate). On a slower machine a node at a quarter of
its partners' rate (a best sample of 6.7 MB/s, a median of 4.3, references of 21.9) was
called transient because the best sample passed that margin.

The evidence of each verdict: the figure, the typical value, the partners, the rounds and
the share of the confirmation's samples that agree (worse than the threshold).
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from commscope.analysis.matrix import FLOOR, K_MADS, Matrix, best_value
from commscope.data.records import Point
from commscope.units import rate_text, time_text

Pair = tuple[int, int]
PARTNERS = 3  # healthy partners each suspect node is measured with, both directions
# Label prefixes of the confirmation rounds' pairs, one launch each: a suspect is bad only
# when every round finds it slow, so a moment of load on a busy node (a scheduling delay
# that multiplies an 8-byte latency) is not taken for a fault.
PREFIXES = ("c1/", "c2/")
PREFIX = PREFIXES[0]


def round_of(pair: str) -> str | None:
    """The confirmation round's prefix of a pair label; None for a first-pass pair."""
    return next((p for p in PREFIXES if pair.startswith(p)), None)


@dataclass(frozen=True)
class Confirmation:
    """The verdict on one suspect."""

    where: str  # "node" or "link"
    name: str  # the node, or "a->b"
    verdict: str  # "bad" or "transient"
    op: str
    bytes: int
    typical: float  # the round's reference pairs' median (or the first pass's typical link)
    first: float  # the suspect's first-pass value (median of its links for a node)
    again: float  # the same in the confirmation
    partners: tuple[str, ...]
    rounds: int
    slow_pairs: int  # confirmation pairs slow again
    pairs: int  # confirmation pairs measured
    agreeing: float  # share of the confirmation's samples worse than the threshold
    references: int = 0  # reference pairs measured beside the suspect; 0: the first pass's

    def text(self) -> str:
        """One line: what, the verdict and its evidence."""
        shown = time_text if self.op == "matrix_lat" else rate_text
        what = "bandwidth" if self.op == "matrix_bw" else "latency"
        return (
            f"{self.where} {self.name}: {self.verdict.upper()}: {what} at {self.bytes} B"
            f" {shown(self.again)} again ({shown(self.first)} first) where {self._typical()}"
            f" {shown(self.typical)}; {self.slow_pairs} of {self.pairs} pairs slow"
            f" with {', '.join(self.partners) or 'the link alone'},"
            f" {self.rounds} round{'s' if self.rounds != 1 else ''},"
            f" {self.agreeing:.0%} of samples agree"
        )

    def _typical(self) -> str:
        if not self.references:
            return "a typical link of the first pass gives"
        return (
            f"{self.references} reference pair{'s' if self.references != 1 else ''} beside it give"
        )

    def to_json(self) -> dict[str, Any]:
        """The verdict and its evidence."""
        return {
            "where": self.where,
            "name": self.name,
            "verdict": self.verdict,
            "op": self.op,
            "bytes": self.bytes,
            "typical": self.typical,
            "first": self.first,
            "again": self.again,
            "partners": list(self.partners),
            "rounds": self.rounds,
            "slow_pairs": self.slow_pairs,
            "pairs": self.pairs,
            "agreeing": self.agreeing,
            "references": self.references,
        }


def suspects(matrices: Sequence[Matrix]) -> tuple[list[str], list[tuple[str, str]]]:
    """The nodes and the links (a, b) the first pass named, in matrix order.

    A link stays a suspect when another matrix (another figure) names one of its nodes: a
    matrix never names a link whose row or column it names itself, so the node's figure and
    the link's are different ones, and each is judged on its own (on two shared cores an
    8-byte latency row was named beside the bandwidth link a slowed htb class made).
    """
    nodes: list[str] = []
    links: list[tuple[str, str]] = []
    for m in matrices:
        for o in m.outliers:
            if o.where == "link":
                a, b = o.name.split("->")
                if (a, b) not in links:
                    links.append((a, b))
            elif o.name not in nodes:
                nodes.append(o.name)
    return nodes, links


def partners_of(names: Sequence[str], node: str, bad: set[str], count: int) -> list[str]:
    """``count`` healthy partners of ``node``: the next healthy nodes after it, cyclically."""
    start = names.index(node)
    ring = [names[(start + k) % len(names)] for k in range(1, len(names))]
    return [n for n in ring if n not in bad][:count]


def rounds_of(pairs: Sequence[tuple[int, int]]) -> list[list[tuple[int, int]]]:
    """Ordered rank pairs packed greedily into rounds: a rank sends once, receives once each."""
    out: list[tuple[list[tuple[int, int]], set[int], set[int]]] = []
    for a, b in pairs:
        for members, senders, receivers in out:
            if a not in senders and b not in receivers:
                members.append((a, b))
                senders.add(a)
                receivers.add(b)
                break
        else:
            out.append(([(a, b)], {a}, {b}))
    return [members for members, _, _ in out]


def is_reference(
    a: str, b: str, nodes: Collection[str], links: Collection[tuple[str, str]]
) -> bool:
    """Whether the pair a -> b is a healthy reference: no suspect node, not a suspect link."""
    return a not in nodes and b not in nodes and (a, b) not in links and (b, a) not in links


def with_references(
    groups: list[list[Pair]], names: Sequence[str], nodes: Sequence[str],
    links: Sequence[tuple[str, str]],
) -> list[list[Pair]]:  # fmt: skip
    """Each group of pairs with one reference pair beside it, where a free one exists.

    The reference's sender sends nothing else in the group and its receiver receives nothing
    else; it prefers nodes that are no suspect link's ends, and a pair no other group uses.
    """
    suspect_nodes, suspect_links = set(nodes), set(links)
    ends = {x for link in links for x in link}
    clean = sorted(
        (i for i, n in enumerate(names) if n not in suspect_nodes),
        key=lambda i: (names[i] in ends, i),
    )
    out = []
    used: set[Pair] = set()
    for group in groups:
        senders, receivers = {a for a, _ in group}, {b for _, b in group}

        def free(senders: set[int] = senders, receivers: set[int] = receivers) -> Iterator[Pair]:
            return (
                (a, b)
                for a in clean
                for b in clean
                if a != b and a not in senders and b not in receivers
                and is_reference(names[a], names[b], suspect_nodes, suspect_links)
            )  # fmt: skip

        # A pair not yet used elsewhere, so the rounds' references cover more healthy links.
        reference = next((p for p in free() if p not in used), None) or next(free(), None)
        if reference:
            used.add(reference)
        out.append(group + [reference] if reference else group)
    return out


def plan(names: Sequence[str], nodes: Sequence[str], links: Sequence[tuple[str, str]]) -> str:
    """The engine's --matrix-plan of the confirmation round (empty when nothing is suspect)."""
    index = {n: i for i, n in enumerate(names)}
    bad = set(nodes) | {x for link in links for x in link}
    pairs: list[tuple[int, int]] = []
    for node in nodes:
        for h in partners_of(names, node, bad, PARTNERS):
            pairs += [(index[node], index[h]), (index[h], index[node])]
    for a, b in links:
        pairs.append((index[a], index[b]))
        for end in (a, b):  # each end with healthy partners: does the node explain the link?
            for h in partners_of(names, end, bad, 1):
                pairs += [(index[end], index[h]), (index[h], index[end])]
    pairs = list(dict.fromkeys(pairs))
    if not pairs:
        return ""
    groups = with_references(rounds_of(pairs), names, nodes, links)
    return "pairs:" + ";".join(",".join(f"{a}>{b}" for a, b in r) for r in groups)


def _threshold(m: Matrix, typical: float) -> tuple[float, float]:
    """(limit, sign): a value v is slow when sign * (v - limit) > 0.

    The first pass's margin, scaled to ``typical`` (its spread is relative to its level).
    """
    spread = m.mad * typical / m.median if m.median > 0 else m.mad
    margin = max(FLOOR * typical, K_MADS * spread)
    return (typical + margin, 1.0) if m.op == "matrix_lat" else (typical - margin, -1.0)


def _value(p: Point) -> float:
    return p.latency_s if p.op == "matrix_lat" else p.bandwidth_Bps


def _sample_values(p: Point) -> np.ndarray:
    samples = np.asarray(p.samples_s, dtype=float)
    return samples if p.op == "matrix_lat" else p.bytes_per_sample / samples


def judge(
    matrices: Sequence[Matrix], confirmation: Sequence[Point], names: Sequence[str]
) -> list[Confirmation]:
    """The verdict on each suspect of each matrix that the confirmation rounds measured.

    Each round is judged on its own; a suspect is bad when every round measured found it
    bad, and transient otherwise. Its evidence adds up the rounds.
    """
    rounds: dict[str, list[Point]] = {}
    for p in confirmation:
        prefix = round_of(p.pair)
        if prefix is not None:
            rounds.setdefault(prefix, []).append(p)
    found: dict[tuple[str, str, str, int], list[Confirmation]] = {}
    for points in rounds.values():
        for c in _judge_round(matrices, points, names):
            found.setdefault((c.where, c.name, c.op, c.bytes), []).append(c)
    return [_merged(cs, len(rounds)) for cs in found.values()]


def _merged(verdicts: Sequence[Confirmation], rounds: int) -> Confirmation:
    """One suspect's verdicts of several rounds as one: bad only when bad in every round."""
    first = verdicts[0]
    if len(verdicts) == 1 and rounds == 1:
        return first
    bad = len(verdicts) == rounds and all(v.verdict == "bad" for v in verdicts)
    pairs = sum(v.pairs for v in verdicts)
    return replace(
        first,
        verdict="bad" if bad else "transient",
        again=float(np.median([v.again for v in verdicts])),
        typical=float(np.median([v.typical for v in verdicts])),
        references=sum(v.references for v in verdicts),
        rounds=len(verdicts),
        slow_pairs=sum(v.slow_pairs for v in verdicts),
        pairs=pairs,
        agreeing=sum(v.agreeing * v.pairs for v in verdicts) / pairs if pairs else 0.0,
    )


def _judge_round(
    matrices: Sequence[Matrix], confirmation: Sequence[Point], names: Sequence[str]
) -> list[Confirmation]:
    """The verdict on each suspect that one confirmation round measured."""
    out = []
    nodes, links = suspects(matrices)
    bad = set(nodes) | {x for link in links for x in link}
    suspect_nodes, suspect_links = set(nodes), set(links)
    for m in matrices:
        again = {
            (names[p.ranks[0]], names[p.ranks[1]]): p
            for p in confirmation
            if p.op == m.op and p.bytes == m.bytes
        }
        if not again:
            continue
        reference = [
            _value(p)
            for (a, b), p in again.items()
            if is_reference(a, b, suspect_nodes, suspect_links)
        ]
        typical = float(np.median(reference)) if reference else m.median
        limit, sign = _threshold(m, typical)
        ref = (typical, len(reference))

        def slow(
            p: Point, limit: float = limit, sign: float = sign, typical: float = typical
        ) -> bool:
            # The median past the limit, and no sample keeping up with the references (a
            # pair held up while its ranks waited for a core has samples that do).
            return bool(sign * (_value(p) - limit) > 0 and sign * (best_value(p) - typical) > 0)

        first = {
            (m.names[i], m.names[j]): v
            for i, row in enumerate(m.values)
            for j, v in enumerate(row)
            if v is not None
        }
        named = {o.name for o in m.outliers}
        for node in nodes:
            if node not in named:
                continue
            partners = partners_of(names, node, bad, PARTNERS)
            mine = [again[k] for h in partners for k in ((node, h), (h, node)) if k in again]
            before = [v for (a, b), v in first.items() if node in (a, b)]
            out.append(_verdict(m, "node", node, mine, before, partners, slow, sign, limit, ref))
        for a, b in links:
            if f"{a}->{b}" not in named or (a, b) not in again:
                continue
            link = again[(a, b)]
            verdict = _verdict(m, "link", f"{a}->{b}", [link], [first.get((a, b), np.nan)],
                               (), slow, sign, limit, ref)  # fmt: skip
            ends = []  # an end slow with healthy partners too explains the link: that node is bad
            for end in (a, b):
                partners = partners_of(names, end, bad, 1)
                mine = [again[k] for h in partners for k in ((end, h), (h, end)) if k in again]
                judged = _verdict(m, "node", end, mine, [first.get((a, b), np.nan)], partners,
                                  slow, sign, limit, ref)  # fmt: skip
                if judged.verdict == "bad":
                    ends.append(judged)
            out += ends if verdict.verdict == "bad" and ends else [verdict]
    return out


def _verdict(
    m: Matrix,
    where: str,
    name: str,
    pairs: Sequence[Point],
    before: Sequence[float],
    partners: Sequence[str],
    slow: Any,
    sign: float,
    limit: float,
    typical: tuple[float, int],
) -> Confirmation:
    n_slow = sum(1 for p in pairs if slow(p))
    samples = np.concatenate([_sample_values(p) for p in pairs]) if pairs else np.empty(0)
    agreeing = float(np.mean(sign * (samples - limit) > 0)) if samples.size else 0.0
    return Confirmation(
        where=where,
        name=name,
        verdict="bad" if pairs and n_slow * 2 > len(pairs) else "transient",
        op=m.op,
        bytes=m.bytes,
        typical=typical[0],
        first=float(np.nanmedian(before)) if len(before) else float("nan"),
        again=float(np.median([_value(p) for p in pairs])) if pairs else float("nan"),
        partners=tuple(partners),
        rounds=1,
        slow_pairs=n_slow,
        pairs=len(pairs),
        agreeing=agreeing,
        references=typical[1],
    )
