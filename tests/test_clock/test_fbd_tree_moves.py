"""The clock tree moves with sampled ancestors (mbgpu.clock.tree_moves, topology_moves) beside AddBranch /
DelBranch (mbgpu.clock.fbd_moves): MrBayes' default move set of `brlenspr=clock:fossilization` with fossil
tips (ParsSPRClock off, FBD rates fixed) sampling the fossilized birth-death prior (mbgpu.clock.fossilized)
as mb-double's `mcmc data=no` with the same moves does: prop_ancfossil, tree height, the fossils' ages and
the clade frequencies."""
from __future__ import annotations

import functools
import importlib
import math

import numpy as np
import pytest

from mbgpu.clock import topology_moves as topo
from mbgpu.clock import tree_moves as tm
from mbgpu.clock.distributions import GAMMA_MEAN_SD, UNIFORM
from mbgpu.clock.fbd_moves import ADD_BRANCH_WEIGHT, DEL_BRANCH_WEIGHT, add_branch, del_branch
from mbgpu.clock.fossil_spr import EXTFOSSILSPR_P_EXT, EXTFOSSILSPR_WEIGHT, ext_fossil_spr_clock
from mbgpu.clock.fossilized import ln_fossilized_bd
from mbgpu.clock.rooted import children
from mbgpu.clock.topology_moves import ext_spr_clock, nni_clock
from mbgpu.clock.tree_moves import node_slider_clock, tree_stretch
from mbgpu.core import rng

from tests.test_clock import prior_chain as pc
from tests.test_clock.test_tree_moves import _clade, _mrbayes_sample

numba = pytest.importorskip("numba")

MODULES = pc.MODULES + ("param_moves", "fbd_moves", "fossilized", "fossil_spr")
# NodesliderClock, TreeStretch, ExtSprClock, NNIClock, AddBranch, DelBranch, ExtFossilSprClock: MrBayes'
# default weights (ExtFossilSprClock's is 0)
WEIGHTS = (tm.NODESLIDER_WEIGHT, tm.TREESTRETCH_WEIGHT, tm.EXTSPR_WEIGHT, tm.NNI_WEIGHT, ADD_BRANCH_WEIGHT,
           DEL_BRANCH_WEIGHT, EXTFOSSILSPR_WEIGHT)
TUNINGS = (0.5, 1.0, tm.EXTSPR_P_EXT, 0.0)
RATES = (1.0, 0.5, 0.5)                      # net_speciation, relative_extinction, relative_fossilization
FOSSILS = {2: (0.1, 0.5), 3: (0.05, 0.4)}   # Homo_sapiens, Pan: calibrate uniform(min, max)
AGE_P = np.array([1.0, 1.0, 0.0])            # treeagepr Gamma(1,1) (mean, sd), the default
MB_EXTRA = ("prset nodeagepr=calibrated speciationpr=fixed(1.0) extinctionpr=fixed(0.5) fossilizationpr=fixed(0.5); "
            "calibrate Homo_sapiens=uniform(0.1,0.5) Pan=uniform(0.05,0.4);")
# ((((Homo 0.3, Pan 0.2) 0.5, Gorilla) 0.7, Pongo) 0.8, (Tarsius, Lemur) 0.5) 1.0
PARENT = np.array([9, 9, 6, 6, 7, 8, 7, 8, 10, 10, -1])
DEPTH = np.array([0, 0, 0.3, 0.2, 0, 0, 0.5, 0.7, 0.8, 0.5, 1.0])


def compiled() -> dict:
    """pc.compiled over MODULES (the FBD prior and moves as well)."""
    return pc.compiled(MODULES)


def _jit(f):
    return pc.jit_over(f, MODULES)


def _ln_prior(parent, depth, n_tips):
    """The FBD prior (random sampling, sampleprob 1, fixed rates); the uniform calibrations are flat."""
    return ln_fossilized_bd(parent, depth, n_tips, 1.0, 1.0, 0.5, np.array([0.5]), 1.0, 0, GAMMA_MEAN_SD,
                            AGE_P, False)


def _move(m, s, parent, kids, depth, n_tips, lo, hi, locked, tunings, cal_kind, cal_min, cal_max):
    """Move m of WEIGHTS' order on the tree; its log proposal ratio."""
    if m == 0:
        return node_slider_clock(s, parent, kids, depth, n_tips, lo, hi, locked, tunings[0])
    if m == 1:
        return tree_stretch(s, parent, kids, depth, n_tips, lo, hi, locked, tunings[1])
    if m == 2:
        return ext_spr_clock(s, parent, kids, depth, n_tips, lo, hi, locked, tunings[2])
    if m == 3:
        return nni_clock(s, parent, kids, depth, n_tips, lo, hi, locked, tunings[3])
    if m == 6:
        return ext_fossil_spr_clock(s, parent, kids, depth, n_tips, lo, hi, locked, EXTFOSSILSPR_P_EXT)
    if m == 4:
        return add_branch(s, parent, kids, depth, n_tips, 1.0, cal_kind, cal_min, cal_max, GAMMA_MEAN_SD, 0.0,
                          math.inf, np.ones(parent.shape[0]))
    return del_branch(s, parent, kids, depth, n_tips, 1.0, cal_kind, cal_min, cal_max, GAMMA_MEAN_SD, 0.0,
                      math.inf, np.ones(parent.shape[0]))


def _chain(s, cdf, tunings, parent, kids, depth, n_tips, lo, hi, locked, cal_kind, cal_min, cal_max, n_gen,
           thin, out_parent, out_depth, tried, accepted):
    """Metropolis-Hastings over the FBD prior with the six moves; every thin-th state is kept."""
    cur = _ln_prior(parent, depth, n_tips)
    old_parent, old_kids, old_depth = parent.copy(), kids.copy(), depth.copy()
    k = 0
    for g in range(n_gen):
        m = rng.pick(s, cdf)
        old_parent[:] = parent
        old_kids[:, :] = kids
        old_depth[:] = depth
        r = _move(m, s, parent, kids, depth, n_tips, lo, hi, locked, tunings, cal_kind, cal_min, cal_max)
        tried[m] += 1
        ok = False
        if r > -math.inf:
            new = _ln_prior(parent, depth, n_tips)
            if math.log(rng.uniform(s)) < new - cur + r:
                cur = new
                ok = True
        if ok:
            accepted[m] += 1
        else:
            parent[:] = old_parent
            kids[:, :] = old_kids
            depth[:] = old_depth
        if (g + 1) % thin == 0 and k < out_parent.shape[0]:
            out_parent[k] = parent
            out_depth[k] = depth
            k += 1


@functools.lru_cache(maxsize=None)
def _compiled_chain():
    ln_prior = _jit(_ln_prior)
    move = pc.jit_over(_move, MODULES, names={"_ln_prior": ln_prior})
    return pc.jit_over(_chain, MODULES, names={"_ln_prior": ln_prior, "_move": move})


def _setup():
    """Depth bounds, locks and AddBranch's per-node calibrations of the 6-taxon start tree."""
    n = PARENT.size
    lo, hi = tm.depth_bounds(n, 6, 10, 1.0, FOSSILS, (0.0, math.inf))
    cal_kind, cal_min, cal_max = np.full(n, -1, dtype=np.int64), np.zeros(n), np.full(n, math.inf)
    for v, (a, b) in FOSSILS.items():
        cal_kind[v], cal_min[v], cal_max[v] = UNIFORM, a, b
    return lo, hi, np.zeros(n, dtype=bool), cal_kind, cal_min, cal_max


def sample(n_samples, thin, seed, weights=WEIGHTS, burnin=20000):
    """(parents, depths, acceptance per move) of our chain from the start tree."""
    lo, hi, locked, cal_kind, cal_min, cal_max = _setup()
    parent, depth = PARENT.copy(), DEPTH.astype(np.float64).copy()
    kids = children(parent)
    s = rng.seed_states(seed, [(0, 0)])[0]
    cdf = np.cumsum(np.asarray(weights, dtype=np.float64))
    cdf /= cdf[-1]
    tunings = np.asarray(TUNINGS, dtype=np.float64)
    tried, accepted = np.zeros(7, dtype=np.int64), np.zeros(7, dtype=np.int64)
    out_parent = np.empty((n_samples, parent.size), dtype=np.int64)
    out_depth = np.empty((n_samples, parent.size))
    chain = _compiled_chain()
    chain(s, cdf, tunings, parent, kids, depth, 6, lo, hi, locked, cal_kind, cal_min, cal_max, burnin, burnin + 1,
          out_parent[:0], out_depth[:0], tried, accepted)
    chain(s, cdf, tunings, parent, kids, depth, 6, lo, hi, locked, cal_kind, cal_min, cal_max, n_samples * thin, thin,
          out_parent, out_depth, tried, accepted)
    return out_parent, out_depth, accepted / np.maximum(tried, 1)


def _ancestors(parents, depths):
    """(samples, 2): whether Homo and Pan are sampled ancestors (zero-length branches)."""
    return np.array([[d[p[v]] - d[v] < tm.TIME_MIN for v in FOSSILS] for p, d in zip(parents, depths)])


def _batch_se(x: np.ndarray, n_batches: int = 25) -> float:
    """Standard error of the mean of an autocorrelated chain by batch means."""
    means = np.array([b.mean() for b in np.array_split(np.asarray(x, dtype=float), n_batches)])
    return means.std(ddof=1) / math.sqrt(n_batches)


def _same_mean(ours, theirs, what):
    """Means of our chain and MrBayes' within 4.5 batch-means standard errors (both chains are strongly
    autocorrelated in TH and the root split: mb-double's own runs with other seeds differ by more than
    a KS test or binomial errors of the thinned samples allow)."""
    ours, theirs = np.asarray(ours, dtype=float), np.asarray(theirs, dtype=float)
    se = math.hypot(_batch_se(ours), _batch_se(theirs))
    assert abs(ours.mean() - theirs.mean()) <= 4.5 * se, "%s: ours %.4f, MrBayes %.4f, se %.4f" % (
        what, ours.mean(), theirs.mean(), se)


def compare_with_mrbayes(parents, depths, theirs):
    """Sampled-ancestor frequencies, TH (mean and P(TH > pooled median)), fossil ages and clades."""
    t_parents = [p for p, _ in theirs]
    t_depths = np.array([d for _, d in theirs])
    ours_sa, their_sa = _ancestors(parents, depths), _ancestors(t_parents, t_depths)
    for k, v in enumerate(FOSSILS):
        _same_mean(ours_sa[:, k], their_sa[:, k], "fossil %d a sampled ancestor" % v)
    _same_mean(ours_sa.all(axis=1), their_sa.all(axis=1), "both sampled ancestors")
    th, t_th = depths.max(axis=1), t_depths.max(axis=1)
    _same_mean(th, t_th, "TH")
    median = np.median(np.concatenate([th, t_th]))
    _same_mean(th > median, t_th > median, "P(TH > %.3f)" % median)
    for v in FOSSILS:
        _same_mean(depths[:, v], t_depths[:, v], "fossil %d age" % v)
    ours_c, their_c = _clade_sets(parents), _clade_sets(t_parents)
    for c in set().union(*ours_c, *their_c):
        _same_mean([c in x for x in ours_c], [c in x for x in their_c], "clade %s" % (c,))
    return ours_sa


def _clade_sets(parents):
    """Each sampled tree's clades (tuples of tips below its interior nodes)."""
    return [{tuple(_clade(p, v)) for v in range(6, p.size)} for p in parents]


def test_fbd_tree_moves_like_mrbayes(mb_double, tmp_path):
    """All six moves on: the fraction of sampled ancestors, tree height, fossil ages and clades as in
    mb-double's data=no sample (2M generations, every 200th; ours as many states, every 200th)."""
    theirs = _mrbayes_sample(mb_double, tmp_path, "fossilization", MB_EXTRA, ngen=2000000)
    parents, depths, acc = sample(len(theirs), 200, seed=21)
    assert (acc[:6] > 0).all(), acc
    ours_sa = compare_with_mrbayes(parents, depths, theirs)
    assert 0.05 < ours_sa.mean() < 0.95                 # both states are visited


def test_ext_fossil_spr_like_mrbayes(mb_double, tmp_path):
    """ExtFossilSprClock switched on (weight 10, `propset` after `mcmcp nruns=1 nchains=1`) beside the six."""
    extra = MB_EXTRA + " mcmcp nruns=1 nchains=1; propset ExtFossilSprClock(Tau,V)$prob=10;"
    theirs = _mrbayes_sample(mb_double, tmp_path, "fossilization", extra, ngen=2000000)
    parents, depths, acc = sample(len(theirs), 200, seed=22, weights=WEIGHTS[:6] + (10.0,))
    assert (acc > 0).all(), acc
    compare_with_mrbayes(parents, depths, theirs)


def _sa_state():
    """The start tree with Homo a sampled ancestor (its parent lowered onto it) and Pan a fossil tip."""
    depth = DEPTH.astype(np.float64).copy()
    parent = PARENT.copy()
    depth[6] = depth[2] = 0.45
    return parent, children(parent), depth


MODULE_OF = {"node_slider_clock": "tree_moves", "tree_stretch": "tree_moves", "ext_spr_clock": "topology_moves",
             "nni_clock": "topology_moves", "ext_fossil_spr_clock": "fossil_spr"}


def test_compiled_moves_equal_interpreted():
    """Each move from a state with a sampled ancestor, compiled and interpreted, same seeds, same result."""
    jitted = compiled()
    lo, hi, locked, *_ = _setup()
    for name, tuning in (("node_slider_clock", 0.5), ("tree_stretch", 1.0), ("ext_spr_clock", 0.5),
                         ("nni_clock", 0.0), ("ext_fossil_spr_clock", 0.5)):
        for seed in range(30):
            a, b = _sa_state(), _sa_state()
            mod = importlib.import_module("mbgpu.clock." + MODULE_OF[name])
            r1 = jitted[name](rng.seed_states(seed, [(0, 0)])[0], *a, 6, lo, hi, locked, tuning)
            r2 = getattr(mod, name).py_func(rng.seed_states(seed, [(0, 0)])[0], *b, 6, lo, hi, locked, tuning)
            assert r1 == pytest.approx(r2, abs=1e-12), (name, seed)
            for x, y in zip(a, b):
                np.testing.assert_array_equal(x, y)


def test_sampled_ancestor_moves_with_its_parent():
    """NodesliderClock and ExtSprClock keep a sampled ancestor on its parent node and inside its
    calibration; TreeStretch scales the pair once; NNIClock never swaps the ancestor away."""
    lo, hi, locked, *_ = _setup()
    for seed in range(200):
        s = rng.seed_states(seed, [(0, 0)])[0]
        parent, kids, depth = _sa_state()
        r = tm.node_slider_clock(s, parent, kids, depth, 6, lo, hi, locked, 0.5)
        if r > -math.inf:
            assert depth[parent[2]] == depth[2] and 0.1 <= depth[2] <= 0.5
        parent, kids, depth = _sa_state()
        r = topo.ext_spr_clock(s, parent, kids, depth, 6, lo, hi, locked, 0.5)
        if r > -math.inf:
            assert depth[parent[2]] == depth[2] and 0.1 <= depth[2] <= 0.5
            assert all(depth[parent[v]] > depth[v] for v in range(10) if v != 2)
        parent, kids, depth = _sa_state()
        before = depth.copy()
        r = tm.tree_stretch(s, parent, kids, depth, 6, lo, hi, locked, 1.0)
        if r > -math.inf:
            c = depth[10] / before[10]
            assert depth[2] == depth[6] and r == pytest.approx(6 * math.log(c))   # nodes 7-10, Pan, the Homo pair once
        parent, kids, depth = _sa_state()
        r = topo.nni_clock(s, parent, kids, depth, 6, lo, hi, locked, 0.0)
        assert depth[parent[2]] == depth[2]
    assert _clade(PARENT, 6) == [2, 3]
