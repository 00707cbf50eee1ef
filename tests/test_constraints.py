"""mbgpu.constraints and its compiled check: MrBayes' constraint syntax, the topology prior they imply
(checked by enumerating every unrooted tree), start trees inside them, and the same verdict from the
interpreted and the compiled check on random trees."""
import itertools
import math

import numpy as np
import pytest

from mbgpu.constraints import Constraint, ConstraintSet, parse_constraint, taxon_list, trivial
from mbgpu.core.constraint_check import constraints_hold, no_constraints
from mbgpu.core.trees import to_arrays
from mbgpu.errors import CommandError, ModelError
from mbgpu.tree import random_tree

TAXA = ["Alpha", "Beta", "Gamma", "Delta", "Eps", "Zeta", "Eta"]


def test_taxon_lists():
    sets = {"front": frozenset({0, 1})}
    assert taxon_list(["Alpha", "3-5"], TAXA, sets) == {0, 2, 3, 4}
    assert taxon_list(["3", "-", "5", "eta"], TAXA, sets) == {2, 3, 4, 6}      # spaced range, any case
    assert taxon_list(["front", "7"], TAXA, sets) == {0, 1, 6}
    assert taxon_list(["all"], TAXA, sets) == set(range(7))
    for bad, why in ((["nosuch"], "neither a taxon"), (["2-9"], "outside 1-7"), (["5-3"], "outside 1-7")):
        with pytest.raises(CommandError, match=why):
            taxon_list(bad, TAXA, sets)


def test_parse_constraint_forms_and_errors():
    assert parse_constraint(["c", "=", "1", "2"], TAXA, {}) == Constraint("c", "hard", frozenset({0, 1}))
    assert parse_constraint(["c", "neg", "=", "1", "2"], TAXA, {}).kind == "negative"
    got = parse_constraint(["c", "partial", "=", "1", "2", ":", "6", "7"], TAXA, {})
    assert (got.kind, got.taxa, got.other) == ("partial", {0, 1}, {5, 6})
    for words, why in ((["c", "partial", "=", "1", "2"], "partial constraint is 'taxa : taxa'"),
                       (["c", "=", "1", ":", "2"], "only a partial constraint"),
                       (["c", "soft", "=", "1", "2"], "not a constraint type"),
                       (["c", "1", "2"], "expected 'constraint NAME"),
                       (["c", "partial", "=", "1", "2", ":", "2"], "both sides")):
        with pytest.raises(CommandError, match=why):
            parse_constraint(words, TAXA, {})


def test_trivial_constraints_are_named():
    n = 7
    assert trivial(Constraint("a", "hard", frozenset({3})), n) == "it refers to a single tip"
    assert trivial(Constraint("a", "hard", frozenset(range(6))), n) == "it refers to a single tip"
    assert trivial(Constraint("a", "negative", frozenset(range(7))), n) == "it includes every taxon"
    assert trivial(Constraint("a", "partial", frozenset({1, 2}), frozenset({3})), n)
    assert trivial(Constraint("a", "hard", frozenset({1, 2})), n) is None


def _all_trees(n: int) -> list[set]:
    """Every unrooted binary tree on n taxa as its set of non-trivial splits (sides without taxon 0),
    by stepwise addition on an edge list (independent of mbgpu.tree)."""
    trees = [[(0, "i0"), (1, "i0"), (2, "i0")]]
    for k in range(3, n):
        trees = [edges[:j] + edges[j + 1:] + [(u, "i%d" % k), ("i%d" % k, v), (k, "i%d" % k)]
                 for edges in trees for j, (u, v) in enumerate(edges)]
    out = []
    for edges in trees:
        splits = set()
        for j, (u, v) in enumerate(edges):
            rest = edges[:j] + edges[j + 1:]
            side, todo = {u}, [u]
            while todo:
                x = todo.pop()
                for a, b in rest:
                    for p, q in ((a, b), (b, a)):
                        if p == x and q not in side:
                            side.add(q)
                            todo.append(q)
            tips = frozenset(t for t in side if isinstance(t, int))
            tips = frozenset(range(n)) - tips if 0 in tips else tips
            if 1 < len(tips) < n - 1:
                splits.add(tips)
        out.append(splits)
    return out


def _holds(splits: set, c: Constraint, n: int) -> bool:
    full = frozenset(range(n))
    if c.kind == "partial":
        return any(c.taxa <= s and not (c.other & s) or c.taxa <= full - s and not (c.other & (full - s))
                   for s in splits)
    side = full - c.taxa if 0 in c.taxa else c.taxa
    return (side in splits) == (c.kind == "hard")


CASES = [[Constraint("a", "hard", frozenset({1, 2, 3}))],
         [Constraint("a", "hard", frozenset({1, 2, 3})), Constraint("b", "hard", frozenset({2, 3}))],
         [Constraint("a", "hard", frozenset({0, 1, 2})), Constraint("b", "hard", frozenset({4, 5}))],
         [Constraint("a", "hard", frozenset({1, 2})), Constraint("n", "negative", frozenset({3, 4}))],
         [Constraint("p", "partial", frozenset({1, 2}), frozenset({5, 6}))]]


@pytest.mark.parametrize("cons", CASES)
def test_prior_counts_the_trees_the_hard_constraints_allow(cons):
    n = 7
    trees = _all_trees(n)
    assert len(trees) == 945 and len({frozenset(t) for t in trees}) == 945
    hard = [c for c in cons if c.kind == "hard"]
    allowed = sum(all(_holds(t, c, n) for c in hard) for t in trees)
    assert ConstraintSet(cons, n).log_topology_prior() == pytest.approx(-math.log(allowed), abs=1e-12)


@pytest.mark.parametrize("cons", CASES)
def test_random_start_trees_satisfy_and_vary(cons):
    n, rng = 7, np.random.default_rng(5)
    cs = ConstraintSet(cons, n)
    seen = set()
    for _ in range(60):
        tree = cs.random_tree(rng, 0.02)
        assert cs.violated(tree) is None and all(_holds(tree.splits(), c, n) for c in cons)
        assert np.allclose(tree.brlen[tree.parent >= 0], 0.02)
        seen.add(frozenset(tree.splits()))
    assert len(seen) > 3


def test_incompatible_hard_constraints_are_refused():
    with pytest.raises(ModelError, match="a and b cannot hold in one tree"):
        ConstraintSet([Constraint("a", "hard", frozenset({1, 2})), Constraint("b", "hard", frozenset({2, 3}))], 7)


@pytest.mark.parametrize("n", [7, 70])
def test_compiled_check_agrees_with_the_interpreted_one(n):
    rng = np.random.default_rng(n)
    kinds = itertools.cycle(["hard", "negative", "partial"])
    verdicts = {True: 0, False: 0}
    for trial in range(400):
        kind = next(kinds)
        tree = random_tree(n, rng, brlen=0.1)
        if kind == "partial":
            picks = rng.permutation(n)[:4]
            c = Constraint("c", kind, frozenset(picks[:2].tolist()), frozenset(picks[2:].tolist()))
        else:                          # a split of the tree half the time, so both verdicts occur
            splits = sorted(tree.splits(), key=sorted)
            side = splits[rng.integers(len(splits))] if trial % 2 else frozenset(rng.permutation(n)[:3].tolist())
            c = Constraint("c", kind, side)
        cs = ConstraintSet([c], n)
        parent, kids, _ = to_arrays(tree)
        want = cs.violated(tree) is None
        assert constraints_hold(parent, kids, n, *cs.arrays()) == want, (kind, c)
        verdicts[want] += 1
    assert min(verdicts.values()) > 40
    parent, kids, _ = to_arrays(random_tree(n, rng))
    assert constraints_hold(parent, kids, n, *no_constraints(n))
