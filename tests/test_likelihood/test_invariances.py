"""Likelihood invariances: rooting, scaling, brute force, 2000 taxa, compact vs partial tips."""
import itertools

import numpy as np
import pytest

from mbgpu.likelihood import PartitionLikelihood
from mbgpu.models import ModelSpec, build_model
from mbgpu.tree import Tree, random_tree

GTR_IG = ModelSpec(datatype="dna", nst=6, revmat=(1.0, 4.0, 0.5, 0.8, 3.5, 1.0),
                   statefreqs=(0.3, 0.2, 0.25, 0.25), rates="invgamma", alpha=0.6, pinvar=0.15)


def random_tips(rng, n_tips, n_patterns, n_states, p_ambiguous=0.1, p_missing=0.05):
    """One-hot tips with some ambiguous (two states) and missing (all states) cells."""
    tips = np.zeros((n_tips, n_patterns, n_states))
    states = rng.integers(n_states, size=(n_tips, n_patterns))
    np.put_along_axis(tips, states[..., None], 1.0, axis=2)
    amb = rng.random((n_tips, n_patterns)) < p_ambiguous
    other = (states + 1 + rng.integers(n_states - 1, size=states.shape)) % n_states
    tips[amb, other[amb]] = 1.0
    tips[rng.random((n_tips, n_patterns)) < p_missing] = 1.0
    return tips


def root_on_edge(tree: Tree, node: int, fraction: float) -> Tree:
    """A rooted tree: the root placed on node's parent branch at `fraction` of its length from node."""
    n = tree.n_nodes
    parent = np.append(tree.parent, -1)
    brlen = np.append(tree.brlen, 0.0)
    old_parent, length = parent[node], brlen[node]
    parent[node], brlen[node] = n, fraction * length
    # reverse the path from old_parent to the old root
    prev, prev_len, v = n, (1 - fraction) * length, old_parent
    while v != -1:
        nxt, nxt_len = parent[v], brlen[v]
        parent[v], brlen[v] = prev, prev_len
        prev, prev_len, v = v, nxt_len, nxt
    return Tree(tree.n_tips, parent, brlen)


@pytest.fixture(scope="module")
def dna_case():
    rng = np.random.default_rng(11)
    tree = random_tree(9, rng)
    tips = random_tips(rng, 9, 60, 4)
    weights = rng.integers(1, 4, 60).astype(float)
    return tree, PartitionLikelihood(tips, weights, build_model(GTR_IG)), tips, weights


def test_root_position_does_not_matter(dna_case):
    tree, part, _, _ = dna_case
    ref = part.log_likelihood(tree)
    assert np.isfinite(ref)
    for v in range(tree.n_tips, tree.n_nodes):
        assert part.log_likelihood(tree.reroot(v)) == pytest.approx(ref, rel=1e-12)
    for node, frac in ((0, 0.3), (5, 0.9), (tree.n_tips + 1, 0.5)):
        rooted = root_on_edge(tree, node, frac)
        assert len(rooted.children()[rooted.root]) == 2
        assert part.log_likelihood(rooted) == pytest.approx(ref, rel=1e-12)


def test_scaled_equals_unscaled_protein():
    rng = np.random.default_rng(12)
    tree = random_tree(30, rng)
    tips = random_tips(rng, 30, 40, 20)
    model = build_model(ModelSpec(datatype="protein", aamodel="wag", rates="invgamma", alpha=0.5, pinvar=0.1))
    values = [PartitionLikelihood(tips, np.ones(40), model, scaling=s).log_likelihood(tree)
              for s in (True, False, 3)]
    assert np.isfinite(values[1])
    assert values[0] == pytest.approx(values[1], rel=1e-10)
    assert values[2] == pytest.approx(values[1], rel=1e-10)


def brute_force(tree: Tree, tips: np.ndarray, model) -> np.ndarray:
    """Site likelihoods by summing over every assignment of states to the internal nodes."""
    internal = list(range(tree.n_tips, tree.n_nodes))
    s = model.n_states
    edges = [v for v in range(tree.n_nodes) if tree.parent[v] >= 0]
    pmats = model.transition_matrices(tree.brlen[edges])            # (E, C, S, S)
    root = tree.root
    site = np.zeros(tips.shape[1])
    for c, (rate, w) in enumerate(zip(model.category_rates, model.category_weights)):
        total = np.zeros(tips.shape[1])
        for assignment in itertools.product(range(s), repeat=len(internal)):
            state = dict(zip(internal, assignment))
            term = np.full(tips.shape[1], model.frequencies[state[root]])
            for e, v in enumerate(edges):
                p = pmats[e, c, state[int(tree.parent[v])]]
                term = term * (p[state[v]] if v in state else tips[v] @ p)
            total += term
        site += w * total
    inv = (np.prod(tips, axis=0) @ model.frequencies)
    return model.pinvar * inv + (1 - model.pinvar) * site


@pytest.mark.parametrize("rooted", [False, True])
def test_brute_force_five_taxa(rooted):
    rng = np.random.default_rng(13)
    tree = random_tree(5, rng, brlen=lambda g, n: g.uniform(0.05, 0.6, n))
    if rooted:
        tree = root_on_edge(tree, 2, 0.4)
    tips = random_tips(rng, 5, 30, 4, p_ambiguous=0.2)
    tips[:, 0, :] = 0.0
    tips[:, 0, 1] = 1.0                                 # one constant pattern (+I matters)
    model = build_model(GTR_IG)
    expected = np.log(brute_force(tree, tips, model))
    got = PartitionLikelihood(tips, np.ones(30), model).site_log_likelihoods(tree)
    assert got == pytest.approx(expected, rel=1e-12)


def test_2000_taxa_no_underflow():
    rng = np.random.default_rng(14)
    tree = random_tree(2000, rng, brlen=lambda g, n: g.exponential(0.05, n))
    tips = random_tips(rng, 2000, 50, 4, p_ambiguous=0.02, p_missing=0.02)
    model = build_model(ModelSpec(datatype="dna", nst=6, revmat=(1, 3, 1, 1, 3, 1), rates="gamma", alpha=0.5))
    every = PartitionLikelihood(tips, np.ones(50), model, scaling=True).log_likelihood(tree)
    sparse = PartitionLikelihood(tips, np.ones(50), model, scaling=25).log_likelihood(tree)
    with np.errstate(under="ignore"):
        never = PartitionLikelihood(tips, np.ones(50), model, scaling=False).log_likelihood(tree)
    assert np.isfinite(every) and every < -50 * 1000
    assert sparse == pytest.approx(every, rel=1e-10)
    assert never == -np.inf                              # the unscaled computation does underflow


def test_mkv_correction_matches_direct_formula():
    rng = np.random.default_rng(15)
    tree = random_tree(7, rng)
    tips = random_tips(rng, 7, 20, 3, p_ambiguous=0.0, p_missing=0.1)
    weights = rng.integers(1, 3, 20).astype(float)
    spec = ModelSpec(datatype="standard", n_states=3, rates="gamma", alpha=0.8)
    mk = PartitionLikelihood(tips, weights, build_model(spec)).log_likelihood(tree)
    mkv = PartitionLikelihood(tips, weights, build_model(ModelSpec(**{**spec.__dict__, "coding": "variable"})))
    binary = PartitionLikelihood(np.stack([np.tile([1.0, 0.0], (7, 1)), np.tile([0.0, 1.0], (7, 1))], axis=1),
                                 np.ones(2), build_model(ModelSpec(**{**spec.__dict__, "n_states": 2})))
    p0 = np.exp(binary.site_log_likelihoods(tree)).sum()
    assert 0 < p0 < 1
    assert mkv.log_likelihood(tree) == pytest.approx(mk - weights.sum() * np.log(1 - p0), rel=1e-13)


def test_rate_multiplier_scales_branch_lengths(dna_case):
    tree, part, tips, weights = dna_case
    scaled = Tree(tree.n_tips, tree.parent, tree.brlen * 2.5)
    faster = PartitionLikelihood(tips, weights, part.model, rate_multiplier=2.5)
    assert faster.log_likelihood(tree) == pytest.approx(part.log_likelihood(scaled), rel=1e-13)
    assert faster.log_likelihood(tree) != pytest.approx(part.log_likelihood(tree), rel=1e-6)
    missing = PartitionLikelihood(np.ones((9, 1, 4)), np.ones(1), part.model)
    assert missing.log_likelihood(tree) == pytest.approx(0.0, abs=1e-12)     # all-missing site: L = 1


@pytest.mark.parametrize("rates, extra", [("equal", {}), ("gamma", {"alpha": 0.4}),
                                          ("invgamma", {"alpha": 0.7, "pinvar": 0.3})])
def test_unobserved_probability_equals_the_two_binary_dummy_patterns(rates, extra):
    """mbgpu.likelihood.mkv's closed-form binary pruning = the all-0 / all-1 patterns under a binary Mk
    model on the numpy backend (MrBayes' two dummy characters), unrooted and rooted trees."""
    from mbgpu.likelihood.mkv import unobserved_probability

    rng = np.random.default_rng(21)
    model = build_model(ModelSpec(datatype="standard", n_states=2, rates=rates, **extra))
    tips = np.stack([np.tile([1.0, 0.0], (9, 1)), np.tile([0.0, 1.0], (9, 1))], axis=1)
    for tree in (random_tree(9, rng), Tree(3, np.array([3, 3, 4, 4, -1]), np.array([0.1, 0.2, 0.3, 0.05, 0.0]))):
        tips_n = tips[:tree.n_tips]
        want = np.exp(PartitionLikelihood(tips_n, np.ones(2), model, 1.7).site_log_likelihoods(tree)).sum()
        got = unobserved_probability(tree.n_tips, tree.parent, tree.brlen, model.category_rates,
                                     model.category_weights, model.pinvar, 1.7)
        assert got == pytest.approx(want, rel=1e-13)


def test_mkv_correction_follows_the_model_of_a_proposal():
    """A chain's likelihood after a new gamma shape is corrected with the new shape's categories (the
    interpreted sampler kept the start's until session 45)."""
    from mbgpu.likelihood.numpy_backend import NumpyBackend
    from mbgpu.sampler.incremental import IncrementalPartition

    rng = np.random.default_rng(3)
    tree, tips, w = random_tree(7, rng), random_tips(rng, 7, 20, 3, p_ambiguous=0.0, p_missing=0.1), np.ones(20)
    start, new = (build_model(ModelSpec(datatype="standard", n_states=3, rates="gamma", alpha=a, coding="variable"))
                  for a in (0.3, 5.0))
    inc = IncrementalPartition(tips, w, start, 1.0, NumpyBackend, 7)
    inc.propose(tree)
    inc.accept()
    assert inc.propose(tree, model=new) == pytest.approx(PartitionLikelihood(tips, w, new).log_likelihood(tree),
                                                         rel=1e-12)
