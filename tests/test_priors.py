"""mbgpu.priors.BrlensPrior: the per-shape shortcut gives brlens_log_prior's value bit for bit."""
import numpy as np
import pytest

from mbgpu.commands.params import parse_prior_text
from mbgpu.priors import BrlensPrior, brlens_log_prior
from mbgpu.tree import random_tree


@pytest.mark.parametrize("text", ["Unconstrained:GammaDir(1,0.1,1,1)", "Unconstrained:GammaDir(2,0.5,1.5,0.7)",
                                  "Unconstrained:Exponential(10)", "Unconstrained:Uniform(0,10)"])
def test_brlens_prior_equals_the_direct_formula(text):
    prior = parse_prior_text(text)
    rng = np.random.default_rng(2)
    for n in (4, 7, 30):
        tree = random_tree(n, rng, brlen=lambda g, k: g.exponential(0.1, k))
        shape = BrlensPrior(prior, tree.parent, n)
        edges = np.flatnonzero(tree.parent >= 0)
        for _ in range(20):
            tree.brlen[edges] = rng.exponential(0.1, edges.size)
            assert shape.fits(tree)
            assert shape(tree.brlen) == brlens_log_prior(prior, tree.brlen[edges], edges < n)


def test_a_tree_with_another_root_does_not_fit():
    """The edge list depends on which node is the root: a tree rooted elsewhere gets a new shape."""
    tree = random_tree(8, np.random.default_rng(0))
    shape = BrlensPrior(parse_prior_text("Unconstrained:Exponential(10)"), tree.parent, 8)
    moved = tree.parent.copy()                     # swap the ids of the root and another internal node
    a, b = tree.root, 8
    ids = np.arange(tree.n_nodes)
    ids[a], ids[b] = b, a
    moved = np.where(moved >= 0, ids[np.maximum(moved, 0)], -1)[ids]
    other = type(tree)(8, moved, tree.brlen[ids])
    assert other.root == b and shape.fits(tree) and not shape.fits(other)
    assert not shape.fits(random_tree(9, np.random.default_rng(1)))


def test_gammadir_equals_scipy_densities():
    """gammadir(aT, bT, a, c): Gamma(aT, rate bT) on the tree length, Dirichlet on the proportions (a for
    terminal edges, a*c for internal ones, as MrBayes' LogDirPrior) and the Jacobian TL^-(n-1), written
    with scipy.stats (an independent formula)."""
    from scipy import stats

    prior = parse_prior_text("Unconstrained:GammaDir(2,0.5,1.5,0.7)")
    tree = random_tree(12, np.random.default_rng(4), brlen=lambda g, k: g.exponential(0.1, k))
    edges = np.flatnonzero(tree.parent >= 0)
    b = tree.brlen[edges]
    tl = b.sum()
    alphas = np.where(edges < 12, 1.5, 1.5 * 0.7)
    want = (stats.gamma.logpdf(tl, 2.0, scale=1 / 0.5) + stats.dirichlet.logpdf(b / tl, alphas)
            - (b.size - 1) * np.log(tl))
    assert BrlensPrior(prior, tree.parent, 12)(tree.brlen) == pytest.approx(want, rel=1e-12)
