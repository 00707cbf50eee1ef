"""The compiled topology moves (mbgpu.core.tree_moves) against the specification, the Python moves.

Adapters (Move subclasses) run the compiled functions on a Tree's arrays, so the statistical checks of
tests/test_moves apply unchanged: invariance of the prior for each move alone (EXP10, GAMMADIR), mixing
over the 15 topologies of 5 taxa, Monte Carlo detailed balance on 6 taxa (p_ext 0.8 for the tip terms).
Direct array tests: consistent arrays, same root, lengths in the limits, exact Hastings terms, aborts.
And the compiled and Python moves must propose the same distribution from one fixed tree.
"""
import math
from collections import Counter

import numpy as np
import pytest
from scipy import stats

from mbgpu.core import tree_moves as tm
from mbgpu.core.trees import from_arrays, is_consistent, root_of, to_arrays
from mbgpu.moves import NNI, ExtSPR, ExtTBR, Multiplier
from mbgpu.moves.base import Move, aborted, brlen_bounds, make_proposal
from mbgpu.moves.graph import check_tree
from mbgpu.tree import Tree, random_tree
from tests.test_moves.mh import EXP10, GAMMADIR, run_chain, run_from_prior, state_key
from tests.test_moves.test_invariance import N_TIPS, P_MIN, _check_prior
from tests.test_moves.test_proposals import _balance, _ctx


# ---------------------------------------------------------------------- adapters
def _state(rng: np.random.Generator) -> np.ndarray:
    return rng.integers(1, 2**63, size=4, dtype=np.uint64)


class _Compiled(Move):
    """Runs the compiled move on the arrays of `tree` (input untouched); a Proposal as the Python move."""

    def call(self, parent, kids, brlen, n_tips, s, lo, hi):
        raise NotImplementedError

    def propose(self, tree, rng, ctx):
        parent, kids, brlen = to_arrays(tree)
        lo, hi = brlen_bounds(ctx.brlens_prior)
        log_h, detail = self.call(parent, kids, brlen, tree.n_tips, _state(rng), lo, hi)
        if log_h == -math.inf:
            return aborted(tree)
        prop = make_proposal(tree, from_arrays(tree.n_tips, parent, brlen), log_h)
        prop.detail = detail
        return prop


class CNNI(_Compiled):
    name = "NNI(Tau,V) compiled"

    def call(self, parent, kids, brlen, n_tips, s, lo, hi):
        return tm.nni(parent, kids, brlen, n_tips, s), {}


class CExtSPR(_Compiled):
    name = "ExtSPR(Tau,V) compiled"
    default_tuning = ExtSPR.default_tuning

    def call(self, parent, kids, brlen, n_tips, s, lo, hi):
        tuning = np.array([self.tuning["p_ext"], self.tuning["lambda"]])
        log_h, sub, attach = tm.ext_spr_detail(parent, kids, brlen, n_tips, s, tuning, lo, hi)
        return log_h, {"subtree": sub, "attach": attach}


class CExtTBR(_Compiled):
    name = "ExtTBR(Tau,V) compiled"
    default_tuning = ExtTBR.default_tuning

    def call(self, parent, kids, brlen, n_tips, s, lo, hi):
        tuning = np.array([self.tuning["p_ext"], self.tuning["lambda"]])
        return tm.ext_tbr(parent, kids, brlen, n_tips, s, tuning, lo, hi), {}


COMPILED = {"NNI": CNNI, "ExtSPR": CExtSPR, "ExtTBR": CExtTBR}
PYTHON = {"NNI": NNI, "ExtSPR": ExtSPR, "ExtTBR": ExtTBR}


def _make(name, **tuning):
    return COMPILED[name](**({} if name == "NNI" else tuning))


def relabelled(tree: Tree, rng: np.random.Generator) -> Tree:
    """The same tree with its internal nodes renumbered at random (the root anywhere among them)."""
    n, N = tree.n_tips, tree.n_nodes
    new_id = np.arange(N)
    new_id[n:] = n + rng.permutation(N - n)
    parent = np.full(N, -1, np.int64)
    brlen = np.zeros(N)
    for v in range(N):
        if tree.parent[v] >= 0:
            parent[new_id[v]] = new_id[tree.parent[v]]
            brlen[new_id[v]] = tree.brlen[v]
    return Tree(n, parent, brlen)


def _fixed_tree(n_tips, seed):
    rng = np.random.default_rng(seed)
    return relabelled(random_tree(n_tips, rng, brlen=lambda g, k: g.uniform(0.01, 0.2, k)), rng)


# ---------------------------------------------------------------------- constants and signatures
def test_default_tuning_matches_the_python_moves():
    assert tm.EXT_SPR_TUNING.tolist() == [ExtSPR().tuning["p_ext"], ExtSPR().tuning["lambda"]]
    assert tm.EXT_TBR_TUNING.tolist() == [ExtTBR().tuning["p_ext"], ExtTBR().tuning["lambda"]]


def test_aborts_below_the_minimum_number_of_taxa():
    s = np.array([1, 2, 3, 4], np.uint64)
    p, k, b = to_arrays(random_tree(3, np.random.default_rng(0)))
    assert tm.nni(p, k, b, 3, s) == -math.inf
    assert tm.ext_spr(p, k, b, 3, s, tm.EXT_SPR_TUNING, 1e-8, 100.0) == -math.inf
    for seed in range(20):                       # ExtTBR cannot move on 4 taxa (Python: aborted)
        rng = np.random.default_rng(seed)
        p, k, b = to_arrays(relabelled(random_tree(4, rng), rng))
        assert tm.ext_tbr(p, k, b, 4, s, tm.EXT_TBR_TUNING, 1e-8, 100.0) == -math.inf
        assert math.isfinite(tm.ext_spr(p, k, b, 4, s, tm.EXT_SPR_TUNING, 1e-8, 100.0))
        assert tm.nni(p, k, b, 4, s) == 0.0


# ---------------------------------------------------------------------- valid arrays, exact Hastings terms
def _check_arrays(parent, kids, brlen, n, root, lo, hi):
    assert is_consistent(parent, kids, n)       # also: kids packed (is_consistent counts up to a -1)
    assert root_of(parent) == root
    e = parent >= 0
    assert np.all(brlen[e] >= lo) and np.all(brlen[e] <= hi) and np.all(np.isfinite(brlen[e]))
    check_tree(from_arrays(n, parent, brlen), lo, hi)


@pytest.mark.parametrize("n_tips", [4, 5, 6, 9, 30])
@pytest.mark.parametrize("name", ["NNI", "ExtSPR", "ExtTBR"])
@pytest.mark.parametrize("p_ext,lam,bounds", [(0.5, 0.098, (1e-8, 100.0)), (0.8, 2.0, (1e-8, 100.0)),
                                               (0.8, 0.0, (1e-8, 100.0)), (0.3, 3.0, (1e-3, 0.5))])
def test_valid_arrays_and_exact_hastings_terms(name, n_tips, p_ext, lam, bounds):
    """After every proposal: consistent arrays, same root, lengths in [lo, hi]. Lengths only move with
    their subtrees except the multiplied ones, so log H = sum log(new lengths) - sum log(old lengths)
    (+-log(2 (1 - p_ext)) for the tip terms of the extending moves, per end that moved); NNI keeps the
    lengths, log H = 0. ext_spr and ext_spr_detail agree."""
    lo, hi = bounds
    rng = np.random.default_rng(n_tips + 10 * len(name))
    tree = relabelled(random_tree(n_tips, rng, brlen=lambda g, k: g.uniform(2 * lo, hi / 2, k)), rng)
    parent, kids, brlen = to_arrays(tree)
    brlen[np.flatnonzero(parent >= 0)[:2]] = [lo * 1.5, hi * 0.99]     # near the limits: reflection
    root = root_of(parent)
    s = _state(rng)
    tuning = np.array([p_ext, lam])
    term = math.log(2 * (1 - p_ext))
    tips_terms = Counter()
    for _ in range(300):
        old_p, old_b = parent.copy(), brlen.copy()
        if name == "NNI":
            log_h = tm.nni(parent, kids, brlen, n_tips, s)
        elif name == "ExtSPR":
            copy = (parent.copy(), kids.copy(), brlen.copy(), s.copy())
            log_h = tm.ext_spr(parent, kids, brlen, n_tips, s, tuning, lo, hi)
            log_h2, sub, attach = tm.ext_spr_detail(*copy[:3], n_tips, copy[3], tuning, lo, hi)
            assert log_h2 == log_h and np.array_equal(copy[0], parent) and np.array_equal(copy[2], brlen)
            assert parent[sub] == attach or parent[attach] == sub
        else:
            log_h = tm.ext_tbr(parent, kids, brlen, n_tips, s, tuning, lo, hi)
        if name == "ExtTBR" and n_tips == 4:
            assert log_h == -math.inf
            return
        assert math.isfinite(log_h)
        _check_arrays(parent, kids, brlen, n_tips, root, lo, hi)
        e = parent >= 0
        assert not np.array_equal(old_p, parent)          # the topology always changes
        jac = np.log(brlen[e]).sum() - np.log(old_b[e]).sum()
        if name == "NNI" or lam == 0.0:
            assert np.array_equal(np.sort(brlen[e]), np.sort(old_b[e]))
        rest = log_h - jac
        if name == "NNI":
            assert log_h == 0.0
        else:
            k = round(rest / term) if p_ext != 0.5 else 0
            assert abs(k) <= (2 if name == "ExtTBR" else 1), (rest, term)       # one term per moving end
            assert rest == pytest.approx(k * term, abs=1e-9), (rest, term)
            tips_terms[k] += 1
    if name != "NNI" and n_tips >= 6:
        assert tips_terms[1] > 0 and tips_terms[-1] > 0 or p_ext == 0.5


def test_every_proposal_changes_the_unrooted_topology():
    """NNI always swaps; the extending moves always take their forced step."""
    rng = np.random.default_rng(2)
    for name in ["NNI", "ExtSPR", "ExtTBR"]:
        tree = _fixed_tree(7, 1)
        move, ctx = _make(name), _ctx(7, data=False)
        for _ in range(200):
            p = move.propose(tree, rng, ctx)
            assert p.tree.splits() != tree.splits()
            tree = p.tree


# ---------------------------------------------------------------------- invariance of the prior, mixing
@pytest.mark.parametrize("prior_text", [EXP10, GAMMADIR])
@pytest.mark.parametrize("name", list(COMPILED))
def test_move_leaves_prior_invariant(name, prior_text):
    seed = 31 + len(name)
    topo, branch, length, acc, moved = run_from_prior([_make(name)], [1.0], prior_text, N_TIPS, 1500, 16,
                                                      seed)
    assert 0.05 < acc and moved > 0.5, (acc, moved)
    _check_prior(topo, branch, length, prior_text, seed)


@pytest.mark.parametrize("name", list(COMPILED))
def test_topology_move_mixes_to_uniform(name):
    """One long chain (compiled topology move + Multiplier), thinned: all 15 topologies, uniformly."""
    topo, _, _, _ = run_chain([_make(name), Multiplier()], [1.0, 1.0], GAMMADIR, N_TIPS, 1500, 6, 5)
    counts = np.array([topo.count(t) for t in set(topo)])
    assert len(counts) == 15
    assert stats.chisquare(counts).pvalue > P_MIN, counts


# ---------------------------------------------------------------------- detailed balance (Monte Carlo)
@pytest.mark.parametrize("name", list(COMPILED))
def test_log_hastings_is_the_reverse_over_forward_probability(name):
    tree = _fixed_tree(6, 3)
    checked, _ = _balance(_make(name, **{"lambda": 0.0}), tree, _ctx(6, 4, data=False), 6000, 7, 3)
    assert checked >= 3


@pytest.mark.parametrize("name", ["ExtSPR", "ExtTBR"])
def test_extending_moves_tip_constraint_terms(name):
    """With p_ext != 0.5 the +-log(2 (1 - p_ext)) terms are non-zero; they must still balance."""
    tree = _fixed_tree(6, 3)
    _, nonzero = _balance(_make(name, p_ext=0.8, **{"lambda": 0.0}), tree, _ctx(6, data=False), 5000, 8, 1)
    assert nonzero > 0


# ---------------------------------------------------------------------- same distribution as Python
def _proposals(move, tree, ctx, n, seed, key):
    rng = np.random.default_rng(seed)
    keys, logh, length, tip0 = [], [], [], []
    for _ in range(n):
        p = move.propose(tree, rng, ctx)
        assert not p.aborted
        keys.append(key(p))
        logh.append(p.log_hastings)
        length.append(p.tree.total_length())
        tip0.append(p.tree.brlen[0])
    return keys, np.array(logh), np.array(length), np.array(tip0)


def _same_counts(a, b, min_keys=5):
    """Chi-square test of homogeneity of two samples of discrete keys (rare keys pooled)."""
    ca, cb = Counter(a), Counter(b)
    keys = sorted(set(ca) | set(cb), key=lambda k: -(ca[k] + cb[k]))
    common = [k for k in keys if ca[k] + cb[k] >= 20]
    table = [[ca[k] for k in common], [cb[k] for k in common]]
    rest = [len(a) - sum(table[0]), len(b) - sum(table[1])]
    if sum(rest) >= 20:
        table[0].append(rest[0])
        table[1].append(rest[1])
    assert len(table[0]) >= min_keys
    return stats.chi2_contingency(np.array(table)).pvalue


@pytest.mark.parametrize("name", list(COMPILED))
def test_same_proposals_as_the_python_move(name):
    """From one fixed 7-taxon tree: with lambda 0 and p_ext 0.8 the proposals are discrete: the proposed
    state (topology with every length), the moved subtree and attachment node (ExtSPR) and log H (ExtTBR
    reaches some states along paths with different tip terms) must have the same frequencies, jointly and
    one by one. With the default tuning: same topology frequencies, KS on log H, tree length and the
    tip-0 branch."""
    tree = _fixed_tree(7, 11)
    ctx = _ctx(7, data=False)
    n = 4000
    py, cc = PYTHON[name], COMPILED[name]

    def exact(p):
        return (state_key(p.tree), frozenset(p.tree.splits()),
                (p.detail.get("subtree"), p.detail.get("attach")), round(p.log_hastings, 9))

    tuning = {} if name == "NNI" else {"p_ext": 0.8, "lambda": 0.0}
    kp, _, _, _ = _proposals(py(**tuning), tree, ctx, n, 1, exact)
    kc, _, _, _ = _proposals(cc(**tuning), tree, ctx, n, 2, exact)
    assert _same_counts(kp, kc) > P_MIN
    for i in range(1, 4):
        if len(set(k[i] for k in kp)) > 1:
            assert _same_counts([k[i] for k in kp], [k[i] for k in kc], 2) > P_MIN, i
    frequent = lambda keys: {k for k, c in Counter(keys).items() if c >= 40}   # noqa: E731
    assert frequent(kp) <= set(kc) and frequent(kc) <= set(kp)
    if name == "NNI":
        assert set(kp) == set(kc) and len(set(kp)) == 2 * (7 - 3)
        return
    topo = lambda p: frozenset(p.tree.splits())   # noqa: E731
    kp, hp, lp, tp = _proposals(py(), tree, ctx, n, 3, topo)
    kc, hc, lc, tc = _proposals(cc(), tree, ctx, n, 4, topo)
    assert _same_counts(kp, kc) > P_MIN
    for x, y in ((hp, hc), (lp, lc), (tp, tc)):
        assert stats.ks_2samp(x, y).pvalue > P_MIN
