"""Suspects measured again: bad nodes, bad links and transients; the pair plans' sizes."""

from __future__ import annotations

import numpy as np
import pytest

from commscope.analysis import confirm, pair_plans
from commscope.analysis import matrix as mx
from commscope.errors import InputError
from tests.unit.test_matrix import bw_matrix, point

NAMES = tuple(f"n{i}" for i in range(6))


def first_pass(slow_node: int | None = None, slow_link: tuple[int, int] | None = None):
    def rate(a: int, b: int) -> float:
        if slow_node is not None and slow_node in (a, b):
            return 5e6
        return 5e6 if (a, b) == slow_link else 22e6

    return mx.matrices(bw_matrix(6, rate, noise=0.02), NAMES)


def again(pairs, rate, prefix=confirm.PREFIX) -> list:
    """Confirmation points of rank pairs (a, b) at rate(a, b), in the round of ``prefix``."""
    out = []
    for a, b in pairs:
        p = point("matrix_bw", a, b, rate(a, b), prefix=prefix)
        out.append(p)
    return out


def groups(plan: str) -> list[list[tuple[int, int]]]:
    """The plan's groups of pairs measured together."""
    assert plan.startswith("pairs:")
    return [[tuple(map(int, x.split(">"))) for x in r.split(",")] for r in plan[6:].split(";")]


def planned(plan: str) -> list[tuple[int, int]]:
    return [pair for group in groups(plan) for pair in group]


def test_a_node_slow_with_its_healthy_partners_is_bad():
    found = first_pass(slow_node=2)
    nodes, links = confirm.suspects(found)
    assert nodes == ["n2"] and links == []
    plan = confirm.plan(NAMES, nodes, links)
    pairs = planned(plan)
    suspect = [p for p in pairs if 2 in p]
    assert sorted(suspect) == sorted([(2, 3), (3, 2), (2, 4), (4, 2), (2, 5), (5, 2)])
    # Beside the suspect's pairs, each group measures one pair of nodes that are not suspect.
    for group in groups(plan):
        (reference,) = [p for p in group if 2 not in p]
        assert len({a for a, _ in group}) == len({b for _, b in group}) == len(group)

    def slow_node(a: int, b: int) -> float:
        return 5e6 if 2 in (a, b) else 22e6

    (verdict,) = confirm.judge(found, again(pairs, slow_node), NAMES)
    assert (verdict.where, verdict.name, verdict.verdict) == ("node", "n2", "bad")
    assert verdict.partners == ("n3", "n4", "n5") and verdict.slow_pairs == verdict.pairs == 6
    assert verdict.agreeing == 1.0 and verdict.references == 3
    assert verdict.typical == pytest.approx(22e6, rel=0.01)
    assert "node n2: BAD" in verdict.text() and "n3, n4, n5" in verdict.text()
    assert "3 reference pairs beside it give" in verdict.text()


def test_a_suspect_as_slow_as_the_reference_beside_it_is_transient():
    # Latency, two shared cores: with fewer pairs at once a round trip takes twice the first
    # pass's typical, the suspect's and the healthy reference's alike. Against the first
    # pass's typical every suspect would be slow again; against its reference it is not.
    found = first_pass(slow_link=(1, 4))
    pairs = planned(confirm.plan(NAMES, *confirm.suspects(found)))
    (verdict,) = confirm.judge(found, again(pairs, lambda a, b: 11e6), NAMES)
    assert (verdict.name, verdict.verdict) == ("n1->n4", "transient")
    assert verdict.references >= 1 and verdict.typical == pytest.approx(11e6)
    # Without a reference in the round, the first pass's typical is the measure again.
    bare = [p for p in again(pairs, lambda a, b: 11e6) if p.ranks in ((1, 4),)]
    (alone,) = confirm.judge(found, bare, NAMES)
    assert alone.verdict == "bad" and alone.references == 0
    assert "a typical link of the first pass gives" in alone.text()


def test_a_slowdown_gone_in_the_confirmation_is_transient():
    found = first_pass(slow_node=2)
    pairs = planned(confirm.plan(NAMES, *confirm.suspects(found)))
    (verdict,) = confirm.judge(found, again(pairs, lambda a, b: 22e6), NAMES)
    assert verdict.verdict == "transient" and verdict.slow_pairs == 0


def test_one_slow_link_is_named_as_a_link_not_its_nodes():
    found = first_pass(slow_link=(1, 4))
    nodes, links = confirm.suspects(found)
    assert nodes == [] and links == [("n1", "n4")]
    pairs = planned(confirm.plan(NAMES, nodes, links))
    assert (1, 4) in pairs
    verdicts = confirm.judge(found, again(pairs, lambda a, b: 5e6 if (a, b) == (1, 4) else 22e6),
                             NAMES)  # fmt: skip
    assert [(v.where, v.name, v.verdict) for v in verdicts] == [("link", "n1->n4", "bad")]


def test_a_link_whose_node_is_slow_with_others_names_the_node():
    found = first_pass(slow_link=(1, 4))
    pairs = planned(confirm.plan(NAMES, *confirm.suspects(found)))
    verdicts = confirm.judge(found, again(pairs, lambda a, b: 5e6 if 4 in (a, b) else 22e6),
                             NAMES)  # fmt: skip
    assert [(v.where, v.name, v.verdict) for v in verdicts] == [("node", "n4", "bad")]


def test_a_suspect_is_bad_only_when_every_confirmation_round_finds_it_slow():
    found = first_pass(slow_link=(1, 4))
    pairs = planned(confirm.plan(NAMES, *confirm.suspects(found)))
    c1, c2 = confirm.PREFIXES

    def slow_link(a, b):
        return 5e6 if (a, b) == (1, 4) else 22e6

    both = confirm.judge(found, [*again(pairs, slow_link, c1), *again(pairs, slow_link, c2)],
                         NAMES)  # fmt: skip
    assert [(v.name, v.verdict, v.rounds, v.pairs) for v in both] == [("n1->n4", "bad", 2, 2)]
    assert "2 rounds" in both[0].text()
    once = confirm.judge(
        found, [*again(pairs, slow_link, c1), *again(pairs, lambda a, b: 22e6, c2)], NAMES
    )
    assert [(v.name, v.verdict, v.rounds, v.slow_pairs) for v in once] == [
        ("n1->n4", "transient", 2, 1)
    ]


def test_rounds_let_a_rank_send_once_and_receive_once():
    pairs = [(0, 1), (0, 2), (1, 0), (2, 0), (1, 2)]
    for r in confirm.rounds_of(pairs):
        assert len({a for a, _ in r}) == len(r) == len({b for _, b in r})
    assert sorted(p for r in confirm.rounds_of(pairs) for p in r) == sorted(pairs)


@pytest.mark.parametrize("n", [4, 16, 64, 256, 1024])
def test_quick_mode_measures_n_log_n_pairs(n):
    measured = pair_plans.quick_pairs(n)
    assert measured == n * int(np.log2(n))  # a power of two: every mask pairs every rank
    assert measured <= n * (n - 1) / 10 or n <= 32


def test_a_pairs_file_is_checked_line_by_line():
    plan = pair_plans.file_plan("# comment\na b\nb a\na c  # trailing\n", "--pairs f")
    assert plan.startswith("names:") and "a>b" in plan and "b>a" in plan and "a>c" in plan
    for text, words in (
        ("a\n", "two node names"),
        ("a a\n", "paired with itself"),
        ("a b\na b\n", "listed twice"),
        ("# nothing\n", "no pairs"),
        ("a b;c\n", "not a node name"),
    ):
        with pytest.raises(InputError, match=words):
            pair_plans.file_plan(text, "--pairs f")
    with pytest.raises(InputError, match="not one of the run's nodes"):
        pair_plans.file_plan("a z\n", "--pairs f", hosts=("a", "b"))


def test_run_matrix_refuses_bad_pairs_before_measuring(cli, tmp_path):
    bad = tmp_path / "pairs.txt"
    bad.write_text("n1 n1\n")
    for args, words in (
        (("--pairs", str(bad)), "paired with itself"),
        (("--pairs", str(tmp_path / "none.txt")), "no such file"),
        (("--pairs", "quick", "--partners", "2"), "give one of them"),
    ):
        out = cli("run", "matrix", "--np", "2", *args)
        assert out.returncode == 2, out.stderr
        assert len(out.stderr.strip().splitlines()) == 1 and words in out.stderr
    assert not cli.store.exists() or "matrix" not in cli("runs").stdout


def test_pairs_that_would_fail_at_launch_are_refused_before_a_run_is_stored(tmp_path, monkeypatch):
    # A NUL or a control character in a name, or more pairs than one argument of the
    # engine's command line holds, used to be accepted, then fail at launch: an empty run.
    from tests.fuzz.harness import assert_one_line_refusal, call

    monkeypatch.setenv("PATH", str(tmp_path))  # no MPI either way: nothing can launch
    names = [f"node{i:04d}" for i in range(200)]
    big = "".join(f"{a} {b}\n" for a in names for b in names if a != b)
    with pytest.raises(InputError, match="more than one command-line argument holds"):
        pair_plans.file_plan(big, "--pairs f")
    cases = {
        "nul.txt": ("n1 n\x002\n", "'n\\x002' is not a node name"),
        "escape.txt": ("n1 n\x1b[2J\n", "is not a node name"),
        "big.txt": (big, f"its {len(names) * (len(names) - 1)} pairs make a plan of"),
    }
    store = tmp_path / "store.sqlite"
    for name, (text, words) in cases.items():
        (tmp_path / name).write_text(text)
        out = call(None, store, "run", "matrix", "--np", "2", "--pairs", str(tmp_path / name))
        assert_one_line_refusal(out)
        assert words in out.err, out
    for bad in ("", "all", "intra-node,intra-node", "intra-node, inter-node"):
        out = call(None, store, "run", "p2p", "--np", "2", "--pairs", bad)
        assert_one_line_refusal(out)
        assert "give auto or a comma list of intra-socket" in out.err, out
    assert not store.exists()  # no run, not even an empty store


def test_a_link_stays_a_suspect_when_another_figure_names_its_node():
    # Bandwidth names the link n1 -> n4; the 8-byte latency names n1's row (a moment of load
    # on a busy host). Each is judged on its own figure: the node transient, the link bad.
    def lat(a: int, b: int) -> float:
        return 300e-6 if a == 1 else 30e-6

    def bw(a: int, b: int) -> float:
        return 5e6 if (a, b) == (1, 4) else 22e6

    first = bw_matrix(6, bw, noise=0.02) + [
        point("matrix_lat", a, b, lat(a, b)) for a in range(6) for b in range(6) if a != b
    ]
    found = mx.matrices(first, NAMES)
    nodes, links = confirm.suspects(found)
    assert nodes == ["n1"] and links == [("n1", "n4")]
    pairs = planned(confirm.plan(NAMES, nodes, links))
    assert (1, 4) in pairs
    measured = [
        *[point("matrix_bw", a, b, bw(a, b), prefix=confirm.PREFIX) for a, b in pairs],
        *[point("matrix_lat", a, b, 30e-6, prefix=confirm.PREFIX) for a, b in pairs],
    ]
    verdicts = {(v.where, v.name, v.op): v.verdict for v in confirm.judge(found, measured, NAMES)}
    assert verdicts == {
        ("node", "n1", "matrix_lat"): "transient",
        ("link", "n1->n4", "matrix_bw"): "bad",
    }


def test_a_pair_held_up_but_with_fast_samples_is_not_slow_again():
    # Its median is slow, but its fastest sample keeps up with the references: its ranks
    # waited for a core, the link did not slow them (as in the first pass).
    found = first_pass(slow_link=(1, 4))
    pairs = planned(confirm.plan(NAMES, *confirm.suspects(found)))
    measured = [
        point("matrix_bw", a, b, 5e6 if (a, b) == (1, 4) else 22e6, prefix=confirm.PREFIX,
              fastest=0.99 if (a, b) != (1, 4) else 0.2)
        for a, b in pairs
    ]  # fmt: skip
    (verdict,) = confirm.judge(found, measured, NAMES)
    assert (verdict.name, verdict.verdict) == ("n1->n4", "transient")


def test_a_slow_node_whose_best_sample_passes_a_wide_margin_is_still_bad():
    # A loaded first pass spreads its links by 30 %: its margin is wide. The node at a
    # quarter of the rate has a best sample a third above its median (a token bucket lets
    # some bytes through at the line rate): past that margin, far below its references.
    wide = mx.matrices(bw_matrix(6, lambda a, b: 5e6 if 3 in (a, b) else 22e6, noise=0.3), NAMES)
    (m,) = wide
    assert "n3" in {o.name for o in m.outliers}
    pairs = planned(confirm.plan(NAMES, *confirm.suspects(wide)))
    measured = [
        point("matrix_bw", a, b, 4.3e6 if 3 in (a, b) else 21.9e6, prefix=confirm.PREFIX,
              fastest=0.65 if 3 in (a, b) else 0.99)
        for a, b in pairs
    ]  # fmt: skip
    margin = max(mx.FLOOR * 21.9e6, mx.K_MADS * m.mad * 21.9e6 / m.median)
    assert 4.3e6 / 0.65 > 21.9e6 - margin  # the best sample passes the first pass's margin
    verdicts = {(v.where, v.name): v.verdict for v in confirm.judge(wide, measured, NAMES)}
    assert verdicts[("node", "n3")] == "bad"
