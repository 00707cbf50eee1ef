"""ParsSPRClock (mbgpu.clock.pars_spr_clock) against what we did not write. Its proposal depends on the
data (parsimony scores of 5 primates over the first 200 sites), but with the clock:uniform prior as
the only target the chain must still sample that prior: every labelled history (ranked topology) of
the 5 tips equally often (180 of them), the root age from treeagepr = Gamma(1,1) and the other ages
uniform below it. Checked with a compiled Metropolis-Hastings loop of ParsSPRClock and a node-depth
slider written here, and against MrBayes 3.2.7a's `mcmc data=no` sample with only ParsSPRClock and
NodesliderClock on (rooted topology frequencies and TH; and the ParsSPRClock acceptance rate, which
depends on the proposal itself: it tells the 3.2.7a cost formula from older ones). Exact checks: the
candidate costs equal a direct Fitch computation, compiled = interpreted, the arrays stay a clock tree.
Dropping a term of the Hastings ratio fails the history and acceptance tests."""
from __future__ import annotations

import functools
import math
import re
import subprocess
from collections import Counter
from itertools import combinations

import numpy as np
import pytest
from scipy import stats

from mbgpu.clock import pars_spr_clock as psc
from mbgpu.clock.pars_spr_clock import pars_spr_clock
from mbgpu.clock.rooted import children
from mbgpu.clock.tree_priors import ln_uniform
from mbgpu.core import rng
from mbgpu.core.pars_spr import prepare_pars_data
from mbgpu.tree import Tree

from tests.test_clock import prior_chain as pc
from tests.test_clock.trees import DATA, TAXA, age_prior

numba = pytest.importorskip("numba")

N_TIPS, N_SITES = 5, 200
N_HISTORIES = 180                       # n! (n-1)! / 2^(n-1) labelled histories of 5 tips
P_MIN = 1e-3
MODULES = pc.MODULES + ("pars_spr_clock",)
DNA = {"A": 1, "C": 2, "G": 4, "T": 8}


# ---------------------------------------------------------------------- data and compiled functions
@functools.lru_cache(maxsize=None)
def pattern_data():
    """(masks uint32[5, n_patterns], weights) of the first N_TIPS taxa and N_SITES sites of primates.nex
    (gap and ambiguity = all four states, as MrBayes' parsimony sets of DNA with gap=-)."""
    rows = {}
    for line in DATA.read_text().splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0] in TAXA[:N_TIPS]:
            rows[parts[0]] = parts[1][:N_SITES]
    cols = np.array([[DNA.get(ch, 15) for ch in rows[name]] for name in TAXA[:N_TIPS]], dtype=np.uint32)
    patterns, weights = np.unique(cols.T, axis=0, return_counts=True)
    return np.ascontiguousarray(patterns.T), weights.astype(np.float64)


def pars_data():
    masks, weights = pattern_data()
    return prepare_pars_data([(masks, weights)], [4], [1.0], N_TIPS, 0.0)


def compiled() -> dict:
    """prior_chain.compiled over this test's MODULES."""
    return pc.compiled(MODULES)


def jit_over(f, *helpers):
    """f compiled with the clock functions it names (and the test's `helpers`) bound to compiled versions."""
    return pc.jit_over(f, MODULES, helpers)


# ---------------------------------------------------------------------- the test's sampler
def _slide(s, parent, kids, depth, n_tips, delta):
    """Test-only depth move: an interior node drawn uniformly; for the root every interior depth is
    multiplied by exp(4 delta (U - 1/2)) (ratio: the factor to the n_tips - 1), another node slides by a
    reflected window of width delta between its older child and its parent (ratio 1)."""
    v = n_tips + rng.randint(s, parent.shape[0] - n_tips)
    if parent[v] < 0:
        m = math.exp(4.0 * delta * (rng.uniform(s) - 0.5))
        for w in range(n_tips, parent.shape[0]):
            depth[w] *= m
        return (n_tips - 1) * math.log(m)
    lo = max(depth[kids[v, 0]], depth[kids[v, 1]])
    hi = depth[parent[v]]
    x = depth[v] + delta * (rng.uniform(s) - 0.5)
    while x < lo or x > hi:
        x = 2.0 * lo - x if x < lo else 2.0 * hi - x
    depth[v] = x
    return 0.0


def _mh(s, parent, kids, depth, n_tips, lo, hi, locked, dated, age_kind, age_p, warp, p_pars, delta,
        tip_planes, info, part_f, base_w, base_i, count, base_planes, gidx, groups, cdf, tab_off, noise, threads,
        n_gen, thin, out_parent, out_depth, tried):
    """n_gen generations of ParsSPRClock (probability p_pars) or _slide against ln_uniform; every thin-th
    state to out_parent / out_depth; tried[0, 1] / tried[1, 1]: ParsSPRClock's tries / acceptances."""
    cur = ln_uniform(parent, depth, n_tips, 1.0, age_kind, age_p, dated, locked)
    p0, k0, d0 = parent.copy(), kids.copy(), depth.copy()
    for g in range(n_gen):
        p0[:] = parent
        k0[:, :] = kids
        d0[:] = depth
        pars = rng.uniform(s) < p_pars
        if pars:
            r = pars_spr_clock(s, parent, kids, depth, n_tips, lo, hi, locked, warp, tip_planes, info, part_f,
                               base_w, base_i, count, base_planes, gidx, groups, cdf, tab_off, noise, threads)
            tried[0] += 1
        else:
            r = _slide(s, parent, kids, depth, n_tips, delta)
        ok = False
        if r > -math.inf:
            new = ln_uniform(parent, depth, n_tips, 1.0, age_kind, age_p, dated, locked)
            if math.log(rng.uniform(s)) < new - cur + r:
                cur = new
                ok = True
        if ok:
            tried[1] += pars
        else:
            parent[:] = p0
            kids[:, :] = k0
            depth[:] = d0
        if (g + 1) % thin == 0:
            out_parent[(g + 1) // thin - 1] = parent
            out_depth[(g + 1) // thin - 1] = depth


def _caterpillar(n_tips, root_depth):
    """parent, depth of ((((0,1),2),3)...), interior depths evenly spaced up to root_depth."""
    n = 2 * n_tips - 1
    parent = np.full(n, -1, dtype=np.int64)
    parent[0] = parent[1] = n_tips
    for k in range(2, n_tips):
        parent[k] = n_tips + k - 1
    for v in range(n_tips, n - 1):
        parent[v] = v + 1
    depth = np.zeros(n)
    depth[n_tips:] = root_depth * np.arange(1, n_tips) / (n_tips - 1)
    return parent, depth


def sample(n_samples, thin, seed, locked=None, warp=psc.PARSSPRCLOCK_WARP, burnin=20, p_pars=8.0 / 28.0):
    """(parents, depths, ParsSPRClock acceptance rate) of the clock:uniform prior, Gamma(1,1) tree age,
    with MrBayes' relative weights 8 : 20 of ParsSPRClock and the depth move."""
    parent, depth = _caterpillar(N_TIPS, 1.0)
    n = parent.size
    kids = children(parent)
    locked = np.zeros(n, dtype=bool) if locked is None else locked
    lo, hi = np.zeros(n), np.full(n, math.inf)
    hi[:N_TIPS] = 0.0
    kind, age_p = age_prior("gamma", 1.0, 1.0)
    s = rng.seed_states(seed, [(0, 0)])[0]
    out_p = np.empty((n_samples + burnin, n), dtype=np.int64)
    out_d = np.empty((n_samples + burnin, n))
    tried = np.zeros(2, dtype=np.int64)
    jit_over(_mh, _slide)(s, parent, kids, depth, N_TIPS, lo, hi, locked, np.zeros(n, dtype=bool), kind, age_p,
                  warp, p_pars, 0.5, *pars_data(),
                  (n_samples + burnin) * thin, thin, out_p, out_d, tried)
    return out_p[burnin:], out_d[burnin:], tried[1] / max(tried[0], 1)


def history(parent, depth, n_tips=N_TIPS):
    """The labelled history: interior nodes' tip sets (bit masks) from the youngest to the root."""
    masks = np.zeros(parent.size, dtype=np.int64)
    masks[:n_tips] = 1 << np.arange(n_tips)
    for v in np.argsort(depth, kind="stable"):
        if parent[v] >= 0:
            masks[parent[v]] |= masks[v]
    interior = np.arange(n_tips, parent.size)
    return tuple(int(m) for m in masks[interior[np.argsort(depth[interior])]])


def all_histories(n_tips=N_TIPS):
    """Every labelled history of n_tips tips as `history` keys: each order of pairwise coalescences."""
    out = set()

    def grow(lineages, merged):
        if len(lineages) == 1:
            out.add(tuple(merged))
            return
        for i, j in combinations(range(len(lineages)), 2):
            rest = [m for k, m in enumerate(lineages) if k not in (i, j)]
            grow(rest + [lineages[i] | lineages[j]], merged + [lineages[i] | lineages[j]])

    grow([1 << k for k in range(n_tips)], [])
    return out


def topology(h) -> frozenset:
    """The rooted topology (its clades) of a labelled history."""
    return frozenset(h)


# ---------------------------------------------------------------------- analytic
def test_prior_invariant_histories_uniform():
    """Sampling clock:uniform with ParsSPRClock (data-driven proposal) and the depth slider: the 180
    labelled histories are equally frequent (chi-square), the root age is Gamma(1,1) = Exp(1) and the
    other ages divided by it iid Uniform(0,1) (KS)."""
    parents, depths, acc = sample(100 * N_HISTORIES, 100, seed=3)
    assert 0.01 < acc < 0.99
    counts = Counter(history(p, d) for p, d in zip(parents, depths))
    assert set(counts) == all_histories()
    assert stats.chisquare(list(counts.values())).pvalue > P_MIN
    root = parents.shape[1] - 1
    assert (parents[:, root] < 0).all()
    assert stats.kstest(depths[:, root], "expon").pvalue > P_MIN
    assert stats.kstest((depths[:, N_TIPS:root] / depths[:, root:]).ravel(), "uniform").pvalue > P_MIN


def test_locked_clade_kept_and_histories_uniform():
    """With the clade {0,1,2} locked (node 6 of the caterpillar), ParsSPRClock never breaks it and the
    histories that keep it are equally frequent."""
    locked = np.zeros(2 * N_TIPS - 1, dtype=bool)
    locked[6] = True
    want = {h for h in all_histories() if 0b00111 in h}
    parents, depths, _ = sample(150 * len(want), 40, seed=7, locked=locked)
    counts = Counter(history(p, d) for p, d in zip(parents, depths))
    assert set(counts) == want
    assert stats.chisquare(list(counts.values())).pvalue > P_MIN


# ---------------------------------------------------------------------- MrBayes
MB_BLOCK = """
begin mrbayes;
  set autoclose=yes nowarn=yes seed=%d swapseed=%d;
  lset nst=1 rates=equal;
  prset brlenspr=clock:uniform;
  mcmcp nruns=1 nchains=1 ngen=%d samplefreq=%d printfreq=%d diagnfreq=%d filename=pc;
  propset ExtSprClock(Tau,V)$prob=0;
  propset NNIClock(Tau,V)$prob=0;
  propset TreeStretch(V)$prob=0;
  mcmc data=no;
end;
"""


def _nexus(seed, ngen, freq) -> str:
    """The 5 taxa x N_SITES data and a `data=no` run with only ParsSPRClock and NodesliderClock on (the
    default moves Dirichlet(Pi) and Slider(Pi) of the fixed-model JC do not touch the tree)."""
    rows = {}
    for line in DATA.read_text().splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0] in TAXA[:N_TIPS]:
            rows[parts[0]] = parts[1][:N_SITES]
    matrix = "\n".join("%s %s" % (name, rows[name]) for name in TAXA[:N_TIPS])
    return ("#NEXUS\nbegin data;\n dimensions ntax=%d nchar=%d;\n format datatype=dna interleave=no gap=-;\n"
            " matrix\n%s\n;\nend;\n" % (N_TIPS, N_SITES, matrix)
            + MB_BLOCK % (seed, seed, ngen, freq, ngen, ngen))


def _clades(newick: str) -> frozenset:
    """The non-trivial clades (tip bit masks, tips 0..4 = MrBayes' translate 1..5) of a .t tree."""
    tree = Tree.from_newick(newick, {str(i + 1): i for i in range(N_TIPS)})
    masks = np.zeros(tree.n_nodes, dtype=np.int64)
    masks[:N_TIPS] = 1 << np.arange(N_TIPS)
    for v in tree.postorder():
        if tree.parent[v] >= 0:
            masks[tree.parent[v]] |= masks[v]
    return frozenset(int(m) for m in masks[N_TIPS:])


def _mrbayes_sample(mb_double, tmp_path, seed=11, ngen=1_000_000, freq=500, warp=None):
    """(rooted topologies, TH) of MrBayes' samples after the first 10%, and its screen output."""
    text = _nexus(seed, ngen, freq)
    if warp is not None:
        text = text.replace("mcmc data=no;", "propset ParsSPRClock(Tau,V)$warp=%r;\n  mcmc data=no;" % warp)
    (tmp_path / "pc.nex").write_text(text)
    out = subprocess.run([str(mb_double), "pc.nex"], cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert "ParsSPRClock(Tau,V)" in out.stdout and "NodesliderClock(V)" in out.stdout
    trees = re.findall(r"tree gen\.\d+ = \[&R\] (.*;)", (tmp_path / "pc.t").read_text())
    rows = [line.split("\t") for line in (tmp_path / "pc.p").read_text().splitlines()[2:]]
    th = np.array([float(r[3]) for r in rows])
    skip = len(trees) // 10
    return [_clades(t) for t in trees[skip:]], th[skip:], out.stdout


def _topology_probs() -> dict:
    """Each rooted topology's probability under uniform labelled histories: its rankings / 180."""
    counts = Counter(topology(h) for h in all_histories())
    return {t: c / N_HISTORIES for t, c in counts.items()}


def test_against_mrbayes_data_no(mb_double, tmp_path):
    """MrBayes 3.2.7a `mcmc data=no`, ParsSPRClock + NodesliderClock only: its rooted topology
    frequencies fit the uniform-history probabilities and agree with our sampler's (chi-square on the
    105 topologies), and its TH has the distribution of our root depth (two-sample KS) and of
    treeagepr Gamma(1,1) (KS)."""
    mb_topos, mb_th, _ = _mrbayes_sample(mb_double, tmp_path)
    parents, depths, _ = sample(4000, 200, seed=17)
    ours = [topology(history(p, d)) for p, d in zip(parents, depths)]
    probs = _topology_probs()
    keys = sorted(probs, key=sorted)
    assert len(keys) == 105 and set(mb_topos) <= set(keys)
    mb_counts = Counter(mb_topos)
    our_counts = Counter(ours)
    want = np.array([probs[k] for k in keys])
    mb_obs = np.array([mb_counts[k] for k in keys])
    our_obs = np.array([our_counts[k] for k in keys])
    assert stats.chisquare(mb_obs, want * mb_obs.sum()).pvalue > P_MIN
    assert stats.chisquare(our_obs, want * our_obs.sum()).pvalue > P_MIN
    assert stats.chi2_contingency(np.vstack([mb_obs, our_obs])).pvalue > P_MIN
    root = parents.shape[1] - 1
    assert stats.ks_2samp(mb_th, depths[:, root]).pvalue > P_MIN
    assert stats.kstest(mb_th, "expon").pvalue > P_MIN


@pytest.mark.parametrize("warp", [psc.PARSSPRCLOCK_WARP, 0.3])
def test_acceptance_rate_as_mrbayes(mb_double, tmp_path, warp):
    """Under the same prior the share of accepted ParsSPRClock proposals depends only on the proposal:
    ours equals MrBayes' (printed to 0.1 %) within 1 point at the default warp and at 0.3 (the older
    fixed-v_t text with weight noise gave 46 % instead of MrBayes' 49.8 % at warp 0.1)."""
    _, _, screen = _mrbayes_sample(mb_double, tmp_path, seed=5, ngen=2_000_000, freq=1000, warp=warp)
    mb_rate = float(re.findall(r"([0-9.]+) %\s+\(\s*[0-9]+ %\)\s+ParsSPRClock", screen)[-1]) / 100.0
    _, _, ours = sample(10000, 100, seed=23, warp=warp)
    assert abs(ours - mb_rate) < 0.01, (ours, mb_rate)


# ---------------------------------------------------------------------- exact checks
def _fitch_costs(parent, kids, n_tips, v, warp):
    """{candidate c: cost} by a direct per-pattern Fitch pass on Python ints (GetParsDP / GetParsFP)."""
    masks, weights = pattern_data()
    u = parent[v]
    a = kids[u, 0] if kids[u, 1] == v else kids[u, 1]
    b = parent[u]
    rp = parent.copy()
    rp[a] = b
    rk = {x: [y for y in (kids[x] if x != b else [a if y == u else y for y in kids[x]])] for x in range(n_tips, parent.size)}
    root = int(np.flatnonzero(parent < 0)[0])
    order, stack = [], [root]
    while stack:
        x = stack.pop()
        order.append(x)
        if x >= n_tips:
            stack.extend(rk[x])
    cost = {}
    for j in range(masks.shape[1]):
        down = {x: int(masks[x, j]) for x in range(n_tips)}

        def dp(x, kid):
            if x < n_tips:
                return down[x]
            l, r = dp(kid[x][0], kid), dp(kid[x][1], kid)
            down[x] = (l & r) or (l | r)
            return down[x]
        dp(root, rk)
        final = dict(down)
        s_set = dp(v, {x: list(kids[x]) for x in range(n_tips, parent.size)})
        for x in order[1:]:
            if x >= n_tips:
                p_, a_ = down[x], final[rp[x]]
                l, r = down[rk[x][0]], down[rk[x][1]]
                if p_ & a_ != a_:
                    final[x] = ((l | r) & a_) | p_ if l & r else p_ | a_
                else:
                    final[x] = a_
            cost.setdefault(x, 0.0)
            if ((final[x] | final[rp[x]]) & s_set) == 0:
                cost[x] += weights[j]
    n_sites = weights.sum()
    return {x: -warp * math.log(0.25 - math.exp(-4.0 / 3.0 * (L / n_sites + 0.0001)) / 4.0) * L
            for x, L in cost.items()}


def test_costs_equal_direct_fitch():
    """The costs the kernel computes (core bit-plane Fitch passes over R rooted at the clock root) equal a
    direct per-pattern computation, for every prunable node of two trees."""
    data = pars_data()
    for parent, depth in (_caterpillar(N_TIPS, 1.0),
                          (np.array([5, 5, 6, 6, 7, 7, 8, 8, -1]), np.array([0, 0, 0, 0, 0, .2, .3, .6, 1.]))):
        kids = children(parent)
        n = parent.size
        for v in range(n):
            if parent[v] < 0 or parent[parent[v]] < 0:
                continue
            u, root = parent[v], n - 1
            a = kids[u, 0] if kids[u, 1] == v else kids[u, 1]
            rpar = parent.copy()
            rpar[a] = parent[u]
            rkids = kids.copy()
            psc._replace_child(rkids, parent[u], u, a)
            order, s_order = np.empty(n, np.int64), np.empty(n, np.int64)
            n_r = psc._rest_order(rkids, root, order)
            n_s = psc._rest_order(kids, v, s_order)
            cost = np.empty(n_r)
            psc._costs(cost, order, n_r, s_order, n_s, rpar, rkids, kids, v, N_TIPS, 0.1, data[3][:0], data[0],
                       *data[1:12])
            want = _fitch_costs(parent, kids, N_TIPS, v, 0.1)
            got = {int(order[j]): cost[j] for j in range(1, n_r)}
            assert got.keys() == want.keys()
            for x in want:
                assert got[x] == pytest.approx(want[x], rel=1e-12, abs=1e-12)


def test_arrays_stay_a_clock_tree():
    """Many compiled moves from random states: the tree stays bifurcating with sorted kids, the root
    keeps its id and depth, children are younger than parents, tips stay at 0."""
    f = compiled()["pars_spr_clock"]
    data = pars_data()
    parent, depth = _caterpillar(N_TIPS, 1.0)
    kids = children(parent)
    n = parent.size
    lo, hi = np.zeros(n), np.full(n, math.inf)
    hi[:N_TIPS] = 0.0
    locked = np.zeros(n, dtype=bool)
    s = rng.seed_states(1, [(0, 0)])[0]
    for _ in range(2000):
        r = f(s, parent, kids, depth, N_TIPS, lo, hi, locked, 0.1, *data)
        assert np.isfinite(r)
        assert (kids == children(parent)).all() and parent[n - 1] < 0 and depth[n - 1] == 1.0
        inner = parent >= 0
        assert (depth[parent[inner]] > depth[inner]).all() and (depth[:N_TIPS] == 0).all()


def test_compiled_equals_interpreted():
    """The kernel compiles in nopython mode and, from the same generator state, changes the arrays and
    returns the ratio exactly as the interpreted code (which calls the same compiled core kernels)."""
    data = pars_data()
    f = compiled()["pars_spr_clock"]
    n = 2 * N_TIPS - 1
    lo, hi = np.zeros(n), np.full(n, math.inf)
    hi[:N_TIPS] = 0.0
    locked = np.zeros(n, dtype=bool)
    for seed in range(10):
        runs = []
        for g in (pars_spr_clock.py_func, f):
            parent, depth = _caterpillar(N_TIPS, 1.0)
            kids = children(parent)
            s = rng.seed_states(seed, [(0, 0)])[0]
            runs.append((g(s, parent, kids, depth, N_TIPS, lo, hi, locked, 0.1, *data), parent, kids, depth))
        (r0, p0, k0, d0), (r1, p1, k1, d1) = runs
        assert r0 == r1 and (p0 == p1).all() and (k0 == k1).all() and (d0 == d1).all()
