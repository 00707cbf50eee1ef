"""Unit tests of the proposals: structure, limits, input untouched, and that log_hastings is the
reverse/forward proposal probability ratio (Monte Carlo over the discrete choices, lambda = 0)."""
import math
from collections import Counter

import numpy as np
import pytest

from mbgpu.commands.params import parse_prior_text
from mbgpu.moves import (BRLENS_MAX, BRLENS_MIN, NNI, ExtSPR, ExtTBR, MoveContext, Multiplier, NodeSlider,
                          ParsSPR, TreeLengthMultiplier, autotune_multiplier, check_tree, default_tree_moves,
                          dirty_nodes)
from mbgpu.tree import random_tree
from tests.test_moves.mh import EXP10, state_key
from tests.test_moves.test_invariance import random_data


def _ctx(n_tips, seed=1, data=True):
    kw = random_data(seed, n_tips, 25) if data else {}
    return MoveContext(n_tips=n_tips, brlens_prior=parse_prior_text(EXP10), **kw)


@pytest.mark.parametrize("n_tips", [4, 5, 9])
def test_moves_keep_a_valid_tree_and_never_touch_the_input(n_tips):
    rng = np.random.default_rng(n_tips)
    ctx = _ctx(n_tips)
    for move in default_tree_moves():
        tree = random_tree(n_tips, rng)
        tree.brlen[1] = 2e-8                      # near the limits: reflection must keep them inside
        tree.brlen[2] = 99.0
        for _ in range(300):
            before = tree.copy()
            prop = move.propose(tree, rng, ctx)
            assert np.array_equal(tree.parent, before.parent) and np.array_equal(tree.brlen, before.brlen)
            if prop.aborted:
                assert prop.log_hastings == -math.inf
                continue
            assert math.isfinite(prop.log_hastings)
            check_tree(prop.tree, BRLENS_MIN, BRLENS_MAX)
            assert prop.tree.root == tree.root
            changed = np.flatnonzero((tree.parent != prop.tree.parent) | (tree.brlen != prop.tree.brlen))
            assert np.array_equal(np.sort(prop.touched), changed)
            tree = prop.tree


def test_tbr_cannot_move_on_four_taxa_and_aborts():
    tree = random_tree(4, np.random.default_rng(0))
    assert ExtTBR().propose(tree, np.random.default_rng(0), _ctx(4)).aborted


def _balance(move, tree, ctx, n, seed, n_targets):
    """Check q(T->T') exp(log_h) == q(T'->T) for the most frequent destinations T'.

    A destination is keyed with the pruned subtree where the move reports one: SPR moves are mixtures
    over the pruned branch (drawn independently of the state), and each reverses only through it.
    """
    rng = np.random.default_rng(seed)
    key0 = state_key(tree)
    fwd, logh, trees = Counter(), {}, {}
    for _ in range(n):
        p = move.propose(tree, rng, ctx)
        if p.aborted:                                  # nothing proposed (ParsSPR: R has two tips)
            continue
        k = (state_key(p.tree), p.detail.get("subtree"))
        fwd[k] += 1
        if k in logh:
            assert logh[k] == pytest.approx(p.log_hastings, abs=1e-9)
        logh[k], trees[k] = p.log_hastings, p.tree
    assert all(k[0] != key0 for k in fwd)            # the topology always changes
    targets = sorted(fwd, key=lambda k: -fwd[k] * math.exp(min(logh[k], 0.0)))[:n_targets]
    nonzero = [k for k in fwd if abs(logh[k]) > 1e-9 and fwd[k] >= 8]
    checked = 0
    for k in targets + nonzero[:2]:
        back = 0
        for _ in range(n):
            q = move.propose(trees[k], rng, ctx)
            back += state_key(q.tree) == key0 and q.detail.get("subtree") == k[1]
        assert back > 0
        z = (math.log(back) - math.log(fwd[k]) - logh[k]) / math.sqrt(1 / back + 1 / fwd[k])
        assert abs(z) < 4.5, (fwd[k], back, logh[k])
        checked += 1
    return checked, len(nonzero)


@pytest.mark.parametrize("make", [lambda: NNI(), lambda: ExtSPR(**{"lambda": 0.0}),
                                  lambda: ExtTBR(**{"lambda": 0.0}),
                                  lambda: ParsSPR(**{"lambda": 0.0, "r": 0.0})],
                         ids=["NNI", "ExtSPR", "ExtTBR", "ParsSPR"])
def test_log_hastings_is_the_reverse_over_forward_probability(make):
    rng = np.random.default_rng(3)
    tree = random_tree(6, rng, brlen=lambda g, k: g.uniform(0.01, 0.2, k))
    checked, _ = _balance(make(), tree, _ctx(6, 4), 6000, 7, 3)
    assert checked >= 3


@pytest.mark.parametrize("make", [lambda: ExtSPR(p_ext=0.8, **{"lambda": 0.0}),
                                  lambda: ExtTBR(p_ext=0.8, **{"lambda": 0.0})], ids=["ExtSPR", "ExtTBR"])
def test_extending_moves_tip_constraint_terms(make):
    """With p_ext != 0.5 the +-log(2 (1 - p_ext)) terms are non-zero; they must still balance."""
    tree = random_tree(6, np.random.default_rng(3), brlen=lambda g, k: g.uniform(0.01, 0.2, k))
    _, nonzero = _balance(make(), tree, _ctx(6), 5000, 8, 1)
    assert nonzero > 0


def test_multiplier_and_tree_length_hastings_terms():
    rng = np.random.default_rng(5)
    tree = random_tree(7, rng)
    ctx = _ctx(7, data=False)
    p = Multiplier().propose(tree, rng, ctx)
    (v,) = p.touched
    assert p.log_hastings == pytest.approx(math.log(p.tree.brlen[v] / tree.brlen[v]))
    p = TreeLengthMultiplier().propose(tree, rng, ctx)
    assert p.log_hastings == pytest.approx(11 * math.log(p.tree.total_length() / tree.total_length()))
    big = tree.copy()
    big.brlen[3] = 90.0
    hits = [TreeLengthMultiplier().propose(big, rng, ctx).aborted for _ in range(200)]
    assert any(hits) and not all(hits)           # out-of-range scalings are aborted, as in MrBayes


def test_nodeslider_changes_two_adjacent_branches_with_the_mrbayes_ratio():
    rng = np.random.default_rng(6)
    tree = random_tree(7, rng)
    ctx = _ctx(7, data=False)
    for _ in range(50):
        p = NodeSlider().propose(tree, rng, ctx)
        a, b = p.touched
        assert a == p.tree.parent[b] or b == p.tree.parent[a] or p.tree.parent[a] == p.tree.parent[b]
        m_old, m_new = tree.brlen[[a, b]].sum(), p.tree.brlen[[a, b]].sum()
        lo = BRLENS_MIN
        expect = math.log((m_new - 2 * lo) / (m_old - 2 * lo)) + 2 * math.log(m_new / m_old)
        assert p.log_hastings == pytest.approx(expect)


def test_dirty_nodes_cover_changed_branches_and_their_ancestors():
    rng = np.random.default_rng(9)
    tree = random_tree(8, rng)
    p = ExtSPR().propose(tree, rng, _ctx(8))
    dirty = dirty_nodes(tree, p.tree).tolist()
    for v in p.touched.tolist():
        u = int(p.tree.parent[v])
        while u >= 0:
            assert u in dirty
            u = int(p.tree.parent[u])
    assert dirty[-1] == p.tree.root


def test_autotune_follows_mrbayes_rule():
    assert autotune_multiplier(1.0, 0.5, 0.25, 1) == pytest.approx(math.exp(0.01))
    assert autotune_multiplier(1.0, 0.1, 0.25, 10_000) == pytest.approx(math.exp(-0.01))
    assert autotune_multiplier(19.9, 0.9, 0.25, 1) == 19.9      # would leave (1e-4, 20): unchanged
    m = Multiplier()
    m.tune(0.9)
    assert m.tuning["lambda"] > 2 * math.log(2) and m.batches == 1
    n = NNI()
    n.tune(0.9)
    assert n.tuning == {}


def test_pars_spr_hastings_when_costs_over_and_underflow():
    """Costs so far apart that every target but the joined branch underflows: after renormalising, the
    joined branch's weight overflows; log Hastings must stay finite (was -inf: the move always rejected)."""
    import math

    from mbgpu.moves.pars_spr import _log_sum

    logw = np.array([800.0, 0.0, -3.0, -5.0])            # joined branch (index 0) overflows exp()
    with np.errstate(over="ignore"):
        back = np.exp(logw)
    back[1] = 0.0
    got = _log_sum(back, logw, 1)
    assert math.isfinite(got) and got == pytest.approx(800.0 + math.log1p(math.exp(-803.0) + math.exp(-805.0)))
    assert _log_sum(np.exp(np.array([0.0, -1.0])), np.array([0.0, -1.0]), 1) == pytest.approx(math.log(1 + math.exp(-1)))


@pytest.mark.parametrize("count", [1, 3, 8, 40])
def test_perturbed_weights_add_plus_or_minus_one_per_site_with_probability_r(count):
    """MrBayes' ParsSPR weights: each site of a pattern adds +1 w.p. r and -1 w.p. r, independently."""
    from mbgpu.moves.weight_noise import perturbed_weights

    r, n = 0.05, 40000
    step = perturbed_weights(np.full(n, float(count)), r, np.random.default_rng(count)) - count
    assert np.all(step == np.round(step)) and np.abs(step).max() <= count
    assert abs(step.mean()) < 4 * math.sqrt(2 * r * count / n)            # mean 0
    assert step.var() == pytest.approx(2 * r * count, rel=0.05)            # variance 2 r count
    if count == 1:
        assert np.mean(step == 1) == pytest.approx(r, abs=0.005) and np.mean(step == -1) == pytest.approx(r, abs=0.005)
    assert np.all(perturbed_weights(np.zeros(5), r, np.random.default_rng(0)) == 0)
