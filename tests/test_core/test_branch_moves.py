"""The compiled branch-length moves (mbgpu.core.branch_moves) against their specification, the Python
moves of mbgpu.moves.branch: prior invariance under both brlens priors (the MH driver of
tests/test_moves/mh.py through a Move adapter), the exact Hastings terms, valid trees within the
limits, the autotuning rule, and the same distribution of proposals as the Python moves from one
fixed state (chi-square on which branches change, KS on new lengths and log Hastings)."""
import math
from collections import Counter

import numpy as np
import pytest
from scipy import stats

from mbgpu.commands.params import parse_prior_text
from mbgpu.core import branch_moves as bm
from mbgpu.core.trees import from_arrays, to_arrays
from mbgpu.moves import (BRLENS_MIN, MoveContext, Multiplier, NodeSlider, TreeLengthMultiplier,
                          brlen_bounds, check_tree)
from mbgpu.moves.base import Move, aborted, make_proposal
from mbgpu.tree import random_tree
from tests.test_moves.mh import EXP10, GAMMADIR, run_from_prior
from tests.test_moves.test_invariance import N_TIPS, _check_prior

P_MIN = 1e-3
P_SAME = 1e-4     # several comparisons per test of the proposal distributions


class Compiled(Move):
    """A Move whose proposal is a compiled branch move acting on the tree's arrays."""

    def __init__(self, python_move: Move):
        self.python = python_move
        self.name = python_move.name
        self.target = python_move.target
        super().__init__(**python_move.tuning)

    def default_tuning(self):
        return dict(self.python.tuning)

    def propose(self, tree, rng, ctx):
        parent, kids, brlen = to_arrays(tree)
        s = rng.integers(1, 2**63, size=4, dtype=np.uint64)
        lo, hi = brlen_bounds(ctx.brlens_prior)
        lam = self.tuning["lambda"]
        if isinstance(self.python, Multiplier):
            log_h = bm.branch_multiplier(parent, kids, brlen, tree.n_tips, s, lam, lo, hi)
        elif isinstance(self.python, TreeLengthMultiplier):
            log_h = bm.tree_length_multiplier(parent, kids, brlen, tree.n_tips, s, lam, lo, hi)
        else:
            log_h = bm.node_slider(parent, kids, brlen, tree.n_tips, s, lam, lo, hi, ctx.anchor)
        if log_h == -math.inf:
            return aborted(tree)
        return make_proposal(tree, from_arrays(tree.n_tips, parent, brlen), log_h)


MOVES = {"Multiplier": Multiplier, "TLMultiplier": TreeLengthMultiplier, "Nodeslider": NodeSlider}


def _ctx(n_tips, prior=EXP10, anchor=0):
    return MoveContext(n_tips=n_tips, brlens_prior=parse_prior_text(prior), anchor=anchor)


@pytest.mark.parametrize("prior_text", [EXP10, GAMMADIR])
@pytest.mark.parametrize("name", list(MOVES))
def test_compiled_move_leaves_prior_invariant(name, prior_text):
    """As tests/test_moves/test_invariance.py: 1,500 chains from exact prior draws, 16 steps each."""
    seed = 11 + len(name)
    topo, branch, length, acc, moved = run_from_prior(
        [Compiled(MOVES[name]())], [1.0], prior_text, N_TIPS, 1500, 16, seed, {"anchor": 2})
    assert 0.05 < acc and moved > 0.5, (acc, moved)
    _check_prior(topo, branch, length, prior_text, seed)


@pytest.mark.parametrize("n_tips", [4, 5, 9])
@pytest.mark.parametrize("prior", [EXP10, "Unconstrained:Uniform(0.001,0.5)"])
def test_moves_keep_a_valid_tree_within_the_limits(n_tips, prior):
    rng = np.random.default_rng(n_tips)
    ctx = _ctx(n_tips, prior, anchor=n_tips - 1)
    lo, hi = brlen_bounds(ctx.brlens_prior)
    for make in MOVES.values():
        move = Compiled(make(**{"lambda": 3.0}))     # large steps: reflection at the limits matters
        tree = random_tree(n_tips, rng, brlen=lambda g, k: g.uniform(lo, hi, k))
        tree.brlen[1] = 2 * lo                       # near the limits: reflection must keep them inside
        tree.brlen[2] = 0.99 * hi
        n_aborted = 0
        for _ in range(300):
            prop = move.propose(tree, rng, ctx)
            if prop.aborted:
                n_aborted += 1
                continue
            assert math.isfinite(prop.log_hastings)
            check_tree(prop.tree, lo, hi)
            edges = prop.tree.parent >= 0
            assert np.all(prop.tree.brlen[edges] >= lo) and np.all(prop.tree.brlen[edges] <= hi)
            assert np.array_equal(prop.tree.parent, tree.parent) and prop.tree.root == tree.root
            assert prop.tree.brlen[tree.root] == 0.0
            if make is Multiplier:
                assert len(prop.touched) == 1
            elif make is NodeSlider:
                assert len(prop.touched) == 2
            tree = prop.tree
        if make is not TreeLengthMultiplier:
            assert n_aborted == 0


def test_multiplier_and_tree_length_hastings_terms():
    rng = np.random.default_rng(5)
    tree = random_tree(7, rng)
    ctx = _ctx(7)
    for _ in range(20):
        p = Compiled(Multiplier()).propose(tree, rng, ctx)
        (v,) = p.touched
        assert p.log_hastings == pytest.approx(math.log(p.tree.brlen[v] / tree.brlen[v]))
        p = Compiled(TreeLengthMultiplier()).propose(tree, rng, ctx)
        assert p.log_hastings == pytest.approx(11 * math.log(p.tree.total_length() / tree.total_length()))
    big = tree.copy()
    big.brlen[3] = 90.0
    hits = [Compiled(TreeLengthMultiplier()).propose(big, rng, ctx).aborted for _ in range(200)]
    assert any(hits) and not all(hits)           # out-of-range scalings are aborted, as in MrBayes
    # abort exactly when the factor takes a branch past the limit: factor > 100/90, i.e. u > 0.5 + log(10/9)/lambda
    lam = 2 * math.log(2)
    assert np.mean(hits) == pytest.approx(0.5 - math.log(100 / 90) / lam, abs=0.1)


@pytest.mark.parametrize("anchor", [0, 4])
def test_nodeslider_changes_two_adjacent_branches_with_the_mrbayes_ratio(anchor):
    rng = np.random.default_rng(6)
    tree = random_tree(7, rng)
    ctx = _ctx(7, anchor=anchor)
    for _ in range(200):
        p = Compiled(NodeSlider()).propose(tree, rng, ctx)
        a, b = p.touched
        assert a == p.tree.parent[b] or b == p.tree.parent[a] or p.tree.parent[a] == p.tree.parent[b]
        m_old, m_new = tree.brlen[[a, b]].sum(), p.tree.brlen[[a, b]].sum()
        lo = BRLENS_MIN
        expect = math.log((m_new - 2 * lo) / (m_old - 2 * lo)) + 2 * math.log(m_new / m_old)
        assert p.log_hastings == pytest.approx(expect)


def test_nodeslider_reflects_the_summed_length_and_limits_the_split():
    """Near the upper limit: m reflected into [2 lo, 2 hi], split in [max(lo, m - hi), min(hi, m - lo)]."""
    parent, kids, brlen = to_arrays(random_tree(4, np.random.default_rng(1)))
    s = np.array([1, 2, 3, 4], dtype=np.uint64)
    lo, hi = 0.01, 1.0
    for _ in range(2000):
        b = np.where(parent >= 0, 0.95, 0.0)
        log_h = bm.node_slider(parent, kids, b, 4, s, 2.0, lo, hi, 0)
        changed = np.flatnonzero(b != np.where(parent >= 0, 0.95, 0.0))
        assert changed.size == 2
        m = b[changed].sum()
        assert 2 * lo <= m <= 2 * hi and np.all((b[parent >= 0] >= lo) & (b[parent >= 0] <= hi))
        expect = math.log((min(hi, m - lo) - max(lo, m - hi)) / (hi - 0.9)) + 2 * math.log(m / 1.9)
        assert log_h == pytest.approx(expect, rel=1e-9, abs=1e-9)


def test_autotune_follows_mrbayes_rule():
    assert bm.autotune_multiplier(1.0, 0.5, 0.25, 1) == pytest.approx(math.exp(0.01))
    assert bm.autotune_multiplier(1.0, 0.1, 0.25, 10_000) == pytest.approx(math.exp(-0.01))
    assert bm.autotune_multiplier(1.0, 0.25, 0.25, 3) == pytest.approx(math.exp(-0.01))   # not above target
    assert bm.autotune_multiplier(19.9, 0.9, 0.25, 1) == 19.9      # would leave (1e-4, 20): unchanged
    assert bm.autotune_multiplier(1.0001e-4, 0.0, 0.25, 1) == 1.0001e-4
    assert bm.autotune_multiplier_within(1.0, 0.5, 0.25, 1, 1e-4, 1.005) == 1.0      # other limits
    assert bm.autotune_multiplier_within(1.0, 0.5, 0.25, 1, 1e-4, 1.02) == pytest.approx(math.exp(0.01))
    from mbgpu.moves.base import autotune_multiplier
    rng = np.random.default_rng(0)
    for _ in range(200):
        v, r, t, b = math.exp(rng.uniform(-10, 3.1)), rng.random(), rng.random(), int(rng.integers(1, 10**6))
        assert bm.autotune_multiplier(v, r, t, b) == autotune_multiplier(v, r, t, b)


def _proposals(move, tree, ctx, n, seed):
    """n proposals from `tree`: (counts of the changed-node sets, new lengths of changed branches by
    node, log Hastings values, aborted fraction)."""
    rng = np.random.default_rng(seed)
    sets, lengths, logh, n_aborted = Counter(), {}, [], 0
    for _ in range(n):
        p = move.propose(tree, rng, ctx)
        if p.aborted:
            n_aborted += 1
            continue
        t = tuple(int(v) for v in p.touched)
        sets[t] += 1
        for v in t:
            lengths.setdefault(v, []).append(float(p.tree.brlen[v]))
        logh.append(p.log_hastings)
    return sets, lengths, np.array(logh), n_aborted / n


def _same_distribution(py, cc, n):
    sets_p, len_p, lh_p, ab_p = py
    sets_c, len_c, lh_c, ab_c = cc
    keys = sorted(set(sets_p) | set(sets_c))
    table = np.array([[sets_p.get(k, 0) for k in keys], [sets_c.get(k, 0) for k in keys]])
    if len(keys) > 1:
        assert stats.chi2_contingency(table).pvalue > P_SAME, (keys, table)
    for v in len_p:
        if len(len_p[v]) >= 50:
            assert stats.ks_2samp(len_p[v], len_c[v]).pvalue > P_SAME, v
    assert stats.ks_2samp(lh_p, lh_c).pvalue > P_SAME
    se = math.sqrt(max(ab_p * (1 - ab_p), 1e-12) * 2 / n)
    assert abs(ab_p - ab_c) < 4.5 * se + 1e-12, (ab_p, ab_c)


@pytest.mark.parametrize("name, lam, prior, anchor", [
    ("Multiplier", 2 * math.log(2), EXP10, 0),
    ("Multiplier", 6.0, "Unconstrained:Uniform(0.01,0.3)", 0),     # reflection at both limits
    ("TLMultiplier", 2 * math.log(2), EXP10, 0),
    ("TLMultiplier", 1.5, "Unconstrained:Uniform(0.01,0.3)", 0),   # aborts
    ("Nodeslider", 0.191, EXP10, 0),
    ("Nodeslider", 0.191, EXP10, 5),
    ("Nodeslider", 3.0, "Unconstrained:Uniform(0.01,0.3)", 3),     # reflection of the sum, narrow ranges
])
def test_same_proposal_distribution_as_the_python_move(name, lam, prior, anchor):
    rng = np.random.default_rng(42)
    ctx = _ctx(8, prior, anchor)
    lo, hi = brlen_bounds(ctx.brlens_prior)
    tree = random_tree(8, rng, brlen=lambda g, k: g.uniform(lo, hi, k))
    tree.brlen[1], tree.brlen[2] = 1.2 * lo, 0.9 * hi
    n = 4000
    py = _proposals(MOVES[name](**{"lambda": lam}), tree, ctx, n, 1)
    cc = _proposals(Compiled(MOVES[name](**{"lambda": lam})), tree, ctx, n, 2)
    _same_distribution(py, cc, n)
