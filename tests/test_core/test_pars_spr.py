"""The compiled ParsSPR (mbgpu.core.pars_spr) against its specification, the Python move.

Exact: the candidate costs (the weighted Fitch counts times each partition's factor) equal the Python
`_costs` for the same weights, on several partitions of 4, 20, 10 and 3 states with ambiguity, an anchor
other than tip 0 and heavy patterns; the over/underflow-safe choice and log sum equal the Python formulas.
Statistical: the perturbed weights follow the per-site distribution (table, skipping and chunk paths,
and the per-site fallback for another r); through an adapter (a Move), the tests of tests/test_moves
apply unchanged: prior invariance under both priors with random data, mixing over the 15 topologies of
5 taxa, Monte Carlo detailed balance on 6 taxa; and the compiled and Python moves propose the same
distribution (topology, pruned subtree, log Hastings, tree length) from one fixed tree and data.
Arrays: consistent, root and ids kept, lengths within the limits, aborts exactly where the Python aborts.
"""
import math
from collections import Counter

import numpy as np
import pytest
from scipy import stats

from mbgpu.commands.params import parse_prior_text
from mbgpu.core import pars_spr as core
from mbgpu.core.trees import from_arrays, is_consistent, root_of, to_arrays
from mbgpu.moves import Multiplier, ParsSPR
from mbgpu.moves import graph, parsimony
from mbgpu.moves.base import BRLENS_MAX, BRLENS_MIN, Move, MoveContext, aborted, brlen_bounds, make_proposal
from mbgpu.moves.pars_spr import _log_sum
from mbgpu.moves.weight_noise import step_cdf
from mbgpu.tree import random_tree
from tests.test_moves.mh import EXP10, GAMMADIR, run_chain, run_from_prior, state_key
from tests.test_moves.test_invariance import N_TIPS, P_MIN, _check_prior, random_data
from tests.test_moves.test_proposals import _balance, _ctx

TUNING_KEYS = ("warp", "r", "v_t", "lambda")


# ---------------------------------------------------------------------- adapter
class CParsSPR(Move):
    """The compiled move on the arrays of `tree` (input untouched), returning a Proposal as ParsSPR does;
    the data are prepared once per context and r. `detail` names the pruned subtree, read from a copy
    of the generator state (the move's first draw is the attachment)."""

    name = "ParsSPR(Tau,V) compiled"
    weight = ParsSPR.weight
    default_tuning = ParsSPR.default_tuning

    def data(self, ctx):
        key = ("core.pars_spr", self.tuning["r"])
        got = ctx.prepared.get(key)
        if got is None:
            got = ctx.prepared[key] = core.prepare_pars_data(ctx.pattern_masks, ctx.n_states, ctx.rate_mults,
                                                             ctx.n_tips, self.tuning["r"])
        return got

    def propose(self, tree, rng, ctx):
        parent, kids, brlen = to_arrays(tree)
        lo, hi = brlen_bounds(ctx.brlens_prior)
        s = rng.integers(1, 2**63, size=4, dtype=np.uint64)
        u, sub = core.draw_attachment(parent, s.copy(), ctx.anchor)
        tuning = np.array([self.tuning[k] for k in TUNING_KEYS])
        log_h = core.pars_spr(parent, kids, brlen, tree.n_tips, s, tuning, lo, hi, ctx.anchor, *self.data(ctx))
        if log_h == -math.inf:
            return aborted(tree)
        prop = make_proposal(tree, from_arrays(tree.n_tips, parent, brlen), log_h)
        prop.detail = {"subtree": int(sub), "attach": int(u)}
        return prop


def test_tuning_layout_is_the_python_default_order():
    assert list(ParsSPR.default_tuning()) == list(TUNING_KEYS)
    assert core.PARS_SPR_TUNING.tolist() == [ParsSPR.default_tuning()[k] for k in TUNING_KEYS]


# ---------------------------------------------------------------------- exact costs
def _partitions(rng, n_tips, spec, weights="int"):
    """Random masks (some ambiguous / missing) per (n_states, n_patterns), with weights."""
    parts = []
    for k, n_pat in spec:
        m = (1 << rng.integers(0, k, (n_tips, n_pat))).astype(np.uint32)
        m[rng.random((n_tips, n_pat)) < 0.08] = (1 << k) - 1
        m[rng.random((n_tips, n_pat)) < 0.08] |= np.uint32(1 << int(rng.integers(0, k)))
        if weights == "int":
            w = rng.integers(0, 9, n_pat).astype(float)
            w[rng.integers(0, n_pat)] = 5000.0                  # a heavy pattern: many weight bits
        else:
            w = rng.integers(1, 9, n_pat) * 0.5 + 0.25
        parts.append((m, w))
    return parts


def _python_costs(tree, ctx, u, sub, move):
    """{(x, y): cost} of the Python move for pruning sub (attached at u), or None where it aborts."""
    n = ctx.n_tips
    adj = graph.undirected(tree)
    a, b = (z for z in adj[u] if z != sub)
    if a < n and b < n:
        return None
    graph.unlink(adj, u, a)
    graph.unlink(adj, u, b)
    graph.link(adj, a, b, 0.0)
    rooted = order, parent, _ = parsimony.rooted_children(adj, ctx.anchor)
    candidates = [(parent[y], y) for y in order[1:]]
    graph.unlink(adj, u, sub)
    cost = move._costs(adj, sub, candidates, ctx, np.random.default_rng(0), rooted)
    return dict(zip(candidates, cost.tolist()))


def _branches(tree, anchor):
    """Every (u, sub) the move can draw: each branch but the anchor's, u its end toward the anchor."""
    out = []
    path = set()
    z = anchor
    while z >= 0:
        path.add(z)
        z = int(tree.parent[z])
    for v in range(tree.n_nodes):
        p = int(tree.parent[v])
        if p < 0 or v == anchor:
            continue
        out.append((v, p) if v in path else (p, v))
    return out


@pytest.mark.parametrize("n_tips, spec, anchor, seed", [
    (9, [(4, 130), (20, 70), (10, 65), (3, 64)], 3, 1),
    (14, [(4, 300)], 0, 2),
    (5, [(20, 40), (4, 7)], 4, 3),
])
def test_costs_equal_the_python_costs_exactly(n_tips, spec, anchor, seed):
    """r = 0: both use the data's weights unperturbed (the Python's WeightNoise then draws nothing)."""
    rng = np.random.default_rng(seed)
    parts = _partitions(rng, n_tips, spec)
    n_states = [k for k, _ in spec] if seed == 1 else None            # given, or inferred from the masks
    rates = list(rng.uniform(0.3, 3.0, len(spec)))
    ctx = MoveContext(n_tips=n_tips, pattern_masks=parts, n_states=n_states, rate_mults=rates, anchor=anchor)
    move = ParsSPR(r=0.0, warp=0.3, v_t=0.05)
    tuning = np.array([move.tuning[k] for k in TUNING_KEYS])
    data = core.prepare_pars_data(parts, n_states, rates, n_tips, 0.0)
    given = np.concatenate([w for _, w in parts])
    checked = 0
    for _ in range(3):
        tree = random_tree(n_tips, rng)
        parent, kids, brlen = to_arrays(tree)
        for u, sub in _branches(tree, anchor):
            want = _python_costs(tree, ctx, u, sub, move)
            for weights in (given[:0], given):                    # the prepared planes; the given weights
                xs, ys, cost = core.candidate_costs(parent, kids, brlen, n_tips, u, sub, anchor, tuning, weights,
                                                    *data)
                if want is None:
                    assert xs.size == 0
                    continue
                got = dict(zip(zip(xs.tolist(), ys.tolist()), cost.tolist()))
                assert got == want                                  # the same floats: the same integer counts
                checked += 1
    assert checked > 20



def test_costs_on_threads_equal_the_python_costs_exactly():
    """The Fitch pass split into spans of words on numba's threads gives the same integer counts."""
    rng = np.random.default_rng(7)
    n_tips, spec = 9, [(20, 2900), (4, 15000)]
    parts = _partitions(rng, n_tips, spec)
    ctx = MoveContext(n_tips=n_tips, pattern_masks=parts, anchor=2)
    move = ParsSPR(r=0.0, warp=0.3, v_t=0.05)
    tuning = np.array([move.tuning[k] for k in TUNING_KEYS])
    data = core.prepare_pars_data(parts, None, None, n_tips, 0.0, threads=4)
    info = data[1]
    assert all(min(4, k * w // core.SPAN_WORK) >= 2 for k, w in info[:, :2])   # both partitions split
    tree = random_tree(n_tips, rng)
    parent, kids, brlen = to_arrays(tree)
    checked = 0
    for u, sub in _branches(tree, 2):
        want = _python_costs(tree, ctx, u, sub, move)
        xs, ys, cost = core.candidate_costs(parent, kids, brlen, n_tips, u, sub, 2, tuning, np.zeros(0), *data)
        if want is None:
            continue
        assert dict(zip(zip(xs.tolist(), ys.tolist()), cost.tolist())) == want
        checked += 1
    assert checked > 5

def test_costs_with_real_weights_match_the_python_costs():
    """Fractional weights take the per-pattern sums (the Python's float path)."""
    rng = np.random.default_rng(4)
    n_tips = 8
    parts = _partitions(rng, n_tips, [(4, 90), (20, 30)], weights="real")
    ctx = MoveContext(n_tips=n_tips, pattern_masks=parts, anchor=1)
    move = ParsSPR(r=0.0)
    tuning = np.array([move.tuning[k] for k in TUNING_KEYS])
    data = core.prepare_pars_data(parts, None, None, n_tips, 0.0)
    assert not data[1][:, 8].any()                                  # no integer partition
    tree = random_tree(n_tips, rng)
    parent, kids, brlen = to_arrays(tree)
    for u, sub in _branches(tree, 1):
        want = _python_costs(tree, ctx, u, sub, move)
        xs, ys, cost = core.candidate_costs(parent, kids, brlen, n_tips, u, sub, 1, tuning, np.zeros(0), *data)
        if want is None:
            continue
        got = dict(zip(zip(xs.tolist(), ys.tolist()), cost.tolist()))
        assert got.keys() == want.keys()
        assert np.allclose([got[k] for k in want], list(want.values()), rtol=1e-12, atol=0)


# ---------------------------------------------------------------------- perturbed weights
def _pmf(c, r):
    """P(sum of c site steps = k), k = -c..c (the Python's own convolution)."""
    cdf = step_cdf(c, r)
    return np.diff(np.concatenate([[0.0], cdf]))


@pytest.mark.parametrize("r, prepared_r", [(0.05, 0.05), (0.2, 0.2), (0.05, 0.3), (0.6, 0.6)],
                         ids=["tables", "tables-r0.2", "per-site", "r-above-half"])
def test_perturbed_weights_follow_the_per_site_distribution(r, prepared_r):
    counts = [1, 2, 3, 5, 8, 9, 30, 300, 600]                     # skip, direct and chunked (> TABLE_MAX)
    n_each = 3000 if prepared_r == r else 600
    w = np.repeat(np.array(counts, dtype=float), n_each)
    w = np.concatenate([w, np.zeros(50)])
    m = np.ones((4, w.size), dtype=np.uint32)
    wf = w.copy()
    wf[w == 9] = 8.5                                               # a real-weight partition: c = ceil(w)
    data = core.prepare_pars_data([(m, w), (m, wf)], None, None, 4, prepared_r)
    s = np.array([7, 8, 9, 10], dtype=np.uint64)
    reps = 2
    draws = np.stack([core.perturbed_weights(s, r, *data) for _ in range(reps)])
    for part, base in ((0, w), (1, wf)):
        got = draws[:, part * w.size:(part + 1) * w.size] - base
        assert np.all(got[:, base == 0] == 0)
        if part == 0:
            assert np.all(draws[:, :w.size] >= 0)
        for c in counts:
            step = got[:, base == c].ravel() if not (part == 1 and c == 9) else got[:, base == 8.5].ravel()
            assert np.all(step == np.round(step)) and np.abs(step).max() <= c
            pmf = _pmf(c, r) if r < 0.5 else stats.binom.pmf(np.arange(c + 1), c, r)
            ks = np.arange(-c, c + 1) if r < 0.5 else 2 * np.arange(c + 1) - c
            observed = np.array([np.count_nonzero(step == k) for k in ks], dtype=float)
            assert observed.sum() == step.size
            expected = pmf * step.size
            keep = expected >= 5
            obs = np.append(observed[keep], observed[~keep].sum())
            exp = np.append(expected[keep], expected[~keep].sum())
            if exp[-1] < 1e-9:
                obs, exp = obs[:-1], exp[:-1]
            exp *= obs.sum() / exp.sum()
            assert stats.chisquare(obs, exp).pvalue > 1e-4, (c, part)


def test_no_noise_at_r_zero():
    w = np.array([1.0, 5.0, 30.0, 0.0])
    data = core.prepare_pars_data([(np.ones((4, 4), np.uint32), w)], None, None, 4, 0.05)
    s = np.array([1, 2, 3, 4], dtype=np.uint64)
    assert np.array_equal(core.perturbed_weights(s, 0.0, *data), w)


# ---------------------------------------------------------------------- choice and Hastings terms
def _python_choice(cost, joined, u01):
    """The lines of ParsSPR.propose that draw the target and compute its log Hastings part."""
    logw = cost.min() - cost
    forth = np.exp(logw)
    forth[joined] = 0.0
    if not forth.sum() > 0.0:
        logw -= np.delete(logw, joined).max()
        forth = np.exp(np.where(np.arange(len(logw)) == joined, -np.inf, logw))
    c = int(np.searchsorted(np.cumsum(forth), u01 * forth.sum(), side="right"))
    c = min(c, len(cost) - 1)
    while forth[c] == 0.0:
        c -= 1
    with np.errstate(over="ignore"):
        back = np.exp(logw)
    back[c] = 0.0
    return c, (logw[joined] - _log_sum(back, logw, c)) - (logw[c] - math.log(forth.sum()))


def test_log_sum_handles_over_and_underflow_as_the_python():
    logw = np.array([800.0, 0.0, -3.0, -5.0])
    got = core.log_sum_except(logw, 0, 4, 1)
    assert math.isfinite(got) and got == pytest.approx(800.0 + math.log1p(math.exp(-803.0) + math.exp(-805.0)))
    assert core.log_sum_except(np.array([0.0, -1.0]), 0, 2, -1) == pytest.approx(math.log(1 + math.exp(-1)))
    under = np.array([-900.0, -1000.0, -950.0])
    with np.errstate(under="ignore"):
        assert core.log_sum_except(under, 0, 3, 2) == pytest.approx(_log_sum(np.exp(under) * [1, 1, 0], under, 2))


@pytest.mark.parametrize("cost, joined", [
    ([3.0, 1.0, 2.5, 7.0, 1.2], 1),
    ([0.0, 900.0, 901.0, 950.0], 0),            # every target but the joined branch underflows
    ([900.0, 0.0, 1.0, 2000.0, 5.0], 3),
    ([10.0, 10.0, 10.0], 2),
])
def test_choice_and_log_hastings_equal_the_python(cost, joined):
    cost = np.array(cost)
    n = cost.size
    for u01 in np.linspace(0.001, 0.999, 37):
        want_c, want_h = _python_choice(cost, joined, u01)
        padded = np.concatenate([[0.0], cost])                     # the compiled candidates are 1 .. n
        c, log_h = core.choose_target(padded, n + 1, joined + 1, u01, np.empty(n + 1), np.empty(n + 1))
        assert c - 1 == want_c
        assert math.isfinite(log_h) and log_h == pytest.approx(want_h, rel=1e-12, abs=1e-9)


def test_huge_costs_keep_log_hastings_finite():
    """Heavy data: costs hundreds apart; the move must still propose with a finite ratio."""
    rng = np.random.default_rng(5)
    n_tips = 7
    tree = random_tree(n_tips, rng)
    masks = (1 << rng.integers(0, 4, (n_tips, 40))).astype(np.uint32)
    ctx = MoveContext(n_tips=n_tips, brlens_prior=parse_prior_text(EXP10),
                      pattern_masks=[(masks, np.full(40, 20000.0))])
    move = CParsSPR()
    values = [move.propose(tree, rng, ctx) for _ in range(300)]
    hs = np.array([p.log_hastings for p in values if not p.aborted])
    assert hs.size > 100 and np.all(np.isfinite(hs)) and np.ptp(hs) > 100


# ---------------------------------------------------------------------- arrays
@pytest.mark.parametrize("n_tips", [4, 5, 9, 50])
def test_arrays_stay_consistent_with_the_root_kept_and_lengths_in_the_limits(n_tips):
    rng = np.random.default_rng(n_tips)
    kw = random_data(n_tips, n_tips, 70)
    anchor = n_tips // 2
    data = core.prepare_pars_data(kw["pattern_masks"], None, None, n_tips, 0.05)
    tree = random_tree(n_tips, rng)
    tree.brlen[1] = 2e-8                                         # near the limits: reflection keeps them in
    tree.brlen[2] = 99.0
    parent, kids, brlen = to_arrays(tree)
    root = root_of(parent)
    tuning = core.PARS_SPR_TUNING.copy()
    tuning[3] = 2.0                                              # large multipliers: reflections happen
    s = np.array([3, 1, 4, 1], dtype=np.uint64)
    aborts = moves = 0
    for _ in range(400):
        p0, k0, b0 = parent.copy(), kids.copy(), brlen.copy()
        u, sub = core.draw_attachment(p0, s.copy(), anchor)
        others = [z for z in list(k0[u]) + [p0[u]] if z >= 0 and z != sub]
        log_h = core.pars_spr(p0, k0, b0, n_tips, s, tuning, BRLENS_MIN, BRLENS_MAX, anchor, *data)
        if all(z < n_tips for z in others):                     # the Python aborts exactly here
            assert log_h == -math.inf
            aborts += 1
            continue
        assert math.isfinite(log_h)
        assert is_consistent(p0, k0, n_tips) and root_of(p0) == root
        edges = p0 >= 0
        assert np.all(b0[edges] >= BRLENS_MIN) and np.all(b0[edges] <= BRLENS_MAX) and b0[root] == 0.0
        graph.check_tree(from_arrays(n_tips, p0, b0), BRLENS_MIN, BRLENS_MAX)
        assert p0[sub] == u or p0[u] == sub                     # the subtree stays on its node
        moves += 1
        parent, kids, brlen = p0, k0, b0
    assert moves > 100 and (aborts > 0 or n_tips > 5)


def test_log_hastings_has_the_three_multiplier_terms():
    """Same generator state, lambda 0 and lambda 1 (r = 0, so the same target): lambda 0 moves the lengths
    without changing any (the multiset is kept); lambda 1 adds log(new/old) of the multiplied branches,
    which is sum log(new lengths) - sum log(old lengths) over the whole tree."""
    rng = np.random.default_rng(6)
    n_tips = 9
    kw = random_data(6, n_tips, 40)
    data = core.prepare_pars_data(kw["pattern_masks"], None, None, n_tips, 0.0)
    tree = random_tree(n_tips, rng)
    parent, kids, brlen = to_arrays(tree)
    edges = parent >= 0
    checked = 0
    for _ in range(200):
        s = rng.integers(1, 2**63, size=4, dtype=np.uint64)
        out = []
        for lam in (0.0, 1.0):
            p0, k0, b0 = parent.copy(), kids.copy(), brlen.copy()
            tuning = np.array([0.1, 0.0, 0.03, lam])
            out.append((core.pars_spr(p0, k0, b0, n_tips, s.copy(), tuning, BRLENS_MIN, BRLENS_MAX, 0, *data),
                        p0, b0))
        (h0, p_a, b_a), (h1, p_b, b_b) = out
        if h0 == -math.inf:
            assert h1 == -math.inf
            continue
        assert np.array_equal(p_a, p_b)
        assert np.array_equal(np.sort(b_a[edges]), np.sort(brlen[edges]))
        assert 0 < np.count_nonzero(b_b != b_a) <= 3
        assert h1 - h0 == pytest.approx(np.log(b_b[edges]).sum() - np.log(brlen[edges]).sum(), abs=1e-9)
        checked += 1
    assert checked > 100


def test_no_data_gives_uniform_targets():
    rng = np.random.default_rng(8)
    n_tips = 6
    data = core.prepare_pars_data([], None, None, n_tips, 0.05)
    tree = random_tree(n_tips, rng)
    parent, kids, brlen = to_arrays(tree)
    s = np.array([5, 6, 7, 8], dtype=np.uint64)
    tuning = core.PARS_SPR_TUNING.copy()
    tuning[3] = 0.0
    seen = Counter()
    for _ in range(2000):
        p0, k0, b0 = parent.copy(), kids.copy(), brlen.copy()
        log_h = core.pars_spr(p0, k0, b0, n_tips, s, tuning, BRLENS_MIN, BRLENS_MAX, 0, *data)
        if log_h != -math.inf:
            assert log_h == pytest.approx(0.0, abs=1e-12)
            seen[p0.tobytes()] += 1
    assert len(seen) > 5


# ---------------------------------------------------------------------- the statistical tests of tests/test_moves
@pytest.mark.parametrize("prior_text", [EXP10, GAMMADIR])
def test_leaves_the_prior_invariant(prior_text):
    seed = 11 + len("ParsSPR")
    topo, branch, length, acc, moved = run_from_prior([CParsSPR()], [1.0], prior_text, N_TIPS, 900, 16, seed,
                                                      random_data(seed))
    assert 0.05 < acc and moved > 0.5, (acc, moved)
    _check_prior(topo, branch, length, prior_text, seed)


def test_mixes_to_uniform_over_the_15_topologies():
    topo, _, _, _ = run_chain([CParsSPR(), Multiplier()], [1.0, 1.0], GAMMADIR, N_TIPS, 1500, 6, 5, random_data(5))
    counts = np.array([topo.count(t) for t in set(topo)])
    assert len(counts) == 15
    assert stats.chisquare(counts).pvalue > P_MIN, counts


def test_log_hastings_is_the_reverse_over_forward_probability():
    rng = np.random.default_rng(3)
    tree = random_tree(6, rng, brlen=lambda g, k: g.uniform(0.01, 0.2, k))
    checked, _ = _balance(CParsSPR(**{"lambda": 0.0, "r": 0.0}), tree, _ctx(6, 4), 6000, 7, 3)
    assert checked >= 3


def _tree_data(tree, rng, n_pat, k, noise):
    """Masks with a phylogenetic signal: each pattern splits the tips along a branch of `tree`."""
    n = tree.n_tips
    below = [None] * tree.n_nodes
    kids = tree.children()
    for v in tree.postorder().tolist():
        below[v] = {v} if v < n else set().union(*(below[c] for c in kids[v]))
    branches = [v for v in range(tree.n_nodes) if tree.parent[v] >= 0]
    m = np.empty((n, n_pat), dtype=np.uint32)
    for j in range(n_pat):
        side = below[branches[int(rng.integers(len(branches)))]]
        a, b = rng.choice(k, 2, replace=False)
        m[:, j] = [1 << (a if t in side else b) for t in range(n)]
    flip = rng.random((n, n_pat)) < noise
    m[flip] = (1 << rng.integers(0, k, flip.sum())).astype(np.uint32)
    m[rng.random((n, n_pat)) < 0.05] = (1 << k) - 1
    return m, rng.integers(1, 4, n_pat).astype(float)


def _proposals(move, start, ctx, n, seed, key):
    g = np.random.default_rng(seed)
    keys, hs, lengths = [], [], []
    for _ in range(n):
        p = move.propose(start, g, ctx)
        keys.append(None if p.aborted else key(p))
        if not p.aborted:
            hs.append(p.log_hastings)
            lengths.append(p.tree.total_length())
    return keys, np.array(hs), np.array(lengths)


def _same_frequencies(a, b, min_cats):
    a, b = Counter(a), Counter(b)
    cats = sorted(set(a) | set(b), key=lambda k: -(a[k] + b[k]))
    table = np.array([[a[k] for k in cats], [b[k] for k in cats]], dtype=float)
    big = table.sum(axis=0) >= 10
    table = np.column_stack([table[:, big], table[:, ~big].sum(axis=1)])
    assert table.shape[1] > min_cats                               # informative: many distinct proposals
    assert stats.chi2_contingency(table).pvalue > P_MIN


@pytest.mark.parametrize("lam", [0.0, 1.0], ids=["lambda0", "lambda1"])
def test_same_proposal_distribution_as_the_python_move(lam):
    """From one tree with informative data (DNA + a 3-state partition), weight noise r = 0.05: the same
    frequencies of proposed states (lambda 0: topology and every branch length, so the near/far length
    bookkeeping must agree too) and pruned subtrees; with large multipliers (lambda 1, so that each
    multiplier's log ratio shows) the same distribution of log Hastings and tree length."""
    rng = np.random.default_rng(12)
    n_tips = 8
    truth = random_tree(n_tips, rng)
    parts = [_tree_data(truth, rng, 60, 4, 0.1), _tree_data(truth, rng, 20, 3, 0.1)]
    ctx = MoveContext(n_tips=n_tips, brlens_prior=parse_prior_text(EXP10), pattern_masks=parts, anchor=2,
                      rate_mults=[1.0, 0.7])
    start = random_tree(n_tips, rng, brlen=lambda g, k: g.uniform(0.01, 0.2, k))
    key = (lambda p: (state_key(p.tree), p.detail["subtree"])) if lam == 0.0 else \
        (lambda p: (frozenset(p.tree.splits()), p.detail["subtree"]))
    n = 3000
    py = _proposals(ParsSPR(warp=0.3, **{"lambda": lam}), start, ctx, n, 99, key)
    co = _proposals(CParsSPR(warp=0.3, **{"lambda": lam}), start, ctx, n, 98, key)
    _same_frequencies(py[0], co[0], 10)
    if lam > 0.0:
        assert stats.ks_2samp(py[1], co[1]).pvalue > P_MIN
        assert stats.ks_2samp(py[2], co[2]).pvalue > P_MIN
