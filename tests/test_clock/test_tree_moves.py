"""The strict-clock tree moves (mbgpu.clock.tree_moves, topology_moves) against what we did not write:
the prior they sample with the clock prior densities as target (root age = treeagepr, interior ages
uniform order statistics below the root, labelled histories uniform) and MrBayes 3.2.7a's own `mcmc
data=no` sample with the same moves (ParsSPRClock switched off) under calibrations, tip dates and the
birth-death prior. Every chain uses MrBayes' move weights; the tuning is wider than MrBayes' start values
(MrBayes autotunes them toward the target rates), which changes only how fast the chain mixes."""
from __future__ import annotations

import math
import subprocess
from collections import Counter

import numpy as np
import pytest
from scipy import stats

from mbgpu.clock import topology_moves as topo
from mbgpu.clock import tree_moves as tm
from mbgpu.clock.distributions import age_distribution
from mbgpu.clock.rooted import children, depths_of
from mbgpu.clock.tree_priors import ln_birth_death, ln_calibrations, ln_uniform
from mbgpu.tree import Tree

from tests.test_clock import prior_chain as pc
from tests.test_clock.trees import DATA

TUNED = (0.5, 1.0, tm.EXTSPR_P_EXT, 0.0)        # NodesliderClock delta, TreeStretch lambda, p_ext, -
P_MIN = 1e-3                                    # KS / chi-square p-values below this fail


def _uniform_prior(parent, depth, n_tips, p):
    """clock:uniform (+ calibration densities): p = (age_kind, age_p, dated, locked, cal_kinds, cal_params)."""
    return (ln_uniform(parent, depth, n_tips, 1.0, p[0], p[1], p[2], p[3])
            + ln_calibrations(depth, p[4], p[5]))


def _bd_prior(parent, depth, n_tips, p):
    """clock:birthdeath, random sampling: p = (net_speciation, relative_extinction, age_kind, age_p)."""
    return ln_birth_death(parent, depth, n_tips, 1.0, p[0], p[1], 1.0, 0, p[2], p[3], False)


def _age_prior(family, *params):
    dist = age_distribution(family, params)
    return dist, dist.kind, np.array(dist.params + (0.0,) * (3 - len(dist.params)))


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


def _no_calibrations(n):
    return np.full(n, -1, dtype=np.int64), np.zeros((n, 3))


# ------------------------------------------------------------------------------------- analytic
@pytest.mark.parametrize("treeage", [("gamma", 1.0, 1.0), ("gamma", 2.0, 1.0), ("uniform", 0.5, 2.0),
                                     ("fixed", 0.8)])
def test_uniform_prior_root_age_and_uniform_node_ages(treeage):
    """clock:uniform: the root age follows treeagepr (not moving at all when fixed) and the other
    interior ages divided by the root age are iid Uniform(0,1) (the uniform order statistics)."""
    n_tips = 5
    dist, kind, age_p = _age_prior(*treeage)
    parent, depth = _caterpillar(n_tips, 0.8)
    n, root = parent.size, parent.size - 1
    flags = np.zeros(n, dtype=bool)
    lo, hi = tm.depth_bounds(n, n_tips, root, 1.0, root_ages=(dist.min, dist.max))
    pargs = (kind, age_p, flags, flags) + _no_calibrations(n)
    _, depths, acc = pc.sample(parent, depth, n_tips, pc.jit_over(_uniform_prior), pargs, lo, hi, flags,
                               8000, 500, seed=11, tunings=TUNED, burnin=20000)
    assert (acc > 0).all()
    ages = depths[:, root]
    if treeage[0] == "fixed":
        assert np.all(ages == 0.8)
    else:
        cdf = {"gamma": lambda x: stats.gamma.cdf(x, (dist.params[0] / dist.params[1]) ** 2,
                                                  scale=dist.params[1] ** 2 / dist.params[0]),
               "uniform": lambda x: stats.uniform.cdf(x, dist.params[0], dist.params[1] - dist.params[0])}
        assert stats.kstest(ages, cdf[treeage[0]]).pvalue > P_MIN
    relative = (depths[:, n_tips:root] / ages[:, None]).ravel()
    assert stats.kstest(relative, "uniform").pvalue > P_MIN


def _history(parent, depth, n_tips):
    """The labelled history: interior nodes' tip sets (bit masks) from the youngest to the root."""
    masks = np.zeros(parent.size, dtype=np.int64)
    masks[:n_tips] = 1 << np.arange(n_tips)
    for v in np.argsort(depth, kind="stable"):
        if parent[v] >= 0:
            masks[parent[v]] |= masks[v]
    interior = np.arange(n_tips, parent.size)
    return tuple(masks[interior[np.argsort(depth[interior])]])


@pytest.mark.parametrize("n_tips, n_histories, weights, p_ext", [
    (4, 18, pc.WEIGHTS, 0.5),                               # all four moves
    (5, 180, pc.WEIGHTS[:3] + (0.0,), 0.8),                # ExtSprClock the only topology move
    (5, 180, pc.WEIGHTS[:2] + (0.0, pc.WEIGHTS[3]), 0.5),  # NNIClock the only topology move
])
def test_uniform_prior_labelled_histories_uniform(n_tips, n_histories, weights, p_ext):
    """clock:uniform puts equal mass on the n!(n-1)!/2^(n-1) labelled histories (ranked topologies):
    each topology move with its proposal ratio visits them equally (chi-square), the root age staying
    Exp(1) and the other ages uniform below it. At p_ext = 0.5 ExtSprClock's term for a walk blocked at
    one end only, ln 2(1 - p_ext), is 0: p_ext = 0.8 checks it."""
    dist, kind, age_p = _age_prior("gamma", 1.0, 1.0)
    parent, depth = _caterpillar(n_tips, 1.0)
    n, root = parent.size, parent.size - 1
    flags = np.zeros(n, dtype=bool)
    lo, hi = tm.depth_bounds(n, n_tips, root, 1.0, root_ages=(dist.min, dist.max))
    pargs = (kind, age_p, flags, flags) + _no_calibrations(n)
    n_samples = 100 * n_histories
    parents, depths, _ = pc.sample(parent, depth, n_tips, pc.jit_over(_uniform_prior), pargs, lo, hi, flags,
                                   n_samples, 1000, seed=5, weights=weights, tunings=TUNED[:2] + (p_ext, 0.0),
                                   burnin=10000)
    counts = Counter(_history(p, d, n_tips) for p, d in zip(parents, depths))
    assert len(counts) == n_histories
    assert stats.chisquare(list(counts.values())).pvalue > P_MIN
    assert stats.kstest(depths[:, root], "expon").pvalue > P_MIN
    assert stats.kstest((depths[:, n_tips:root] / depths[:, root:]).ravel(), "uniform").pvalue > P_MIN


def _all_histories(n_tips):
    """Every labelled history of n_tips tips as _history keys: each order of pairwise coalescences."""
    out = set()

    def grow(lineages, merged):
        if len(lineages) == 1:
            out.add(tuple(merged))
            return
        for i in range(len(lineages)):
            for j in range(i + 1, len(lineages)):
                rest = [m for k, m in enumerate(lineages) if k not in (i, j)]
                grow(rest + [lineages[i] | lineages[j]], merged + [lineages[i] | lineages[j]])

    grow([1 << k for k in range(n_tips)], [])
    return out


@pytest.mark.parametrize("weights, p_ext", [(pc.WEIGHTS[:3] + (0.0,), 0.8), (pc.WEIGHTS[:2] + (0.0, pc.WEIGHTS[3]), 0.5)])
def test_constrained_histories_uniform(weights, p_ext):
    """With the clade {0,1,2} locked (a constraint, undated) the uniform prior is flat over the labelled
    histories that keep the clade: ExtSprClock (its walks blocked at locked nodes) and NNIClock (never at a
    locked node) each visit exactly those, equally."""
    n_tips = 5
    dist, kind, age_p = _age_prior("gamma", 1.0, 1.0)
    parent, depth = _caterpillar(n_tips, 1.0)                  # node 6 = ((0,1),2)
    n, root = parent.size, parent.size - 1
    flags, locked = np.zeros(n, dtype=bool), np.zeros(n, dtype=bool)
    locked[6] = True
    lo, hi = tm.depth_bounds(n, n_tips, root, 1.0, root_ages=(dist.min, dist.max))
    pargs = (kind, age_p, flags, locked) + _no_calibrations(n)
    want = {h for h in _all_histories(n_tips) if 0b00111 in h}
    parents, depths, _ = pc.sample(parent, depth, n_tips, pc.jit_over(_uniform_prior), pargs, lo, hi, locked,
                                   150 * len(want), 1000, seed=13, weights=weights,
                                   tunings=TUNED[:2] + (p_ext, 0.0), burnin=10000)
    counts = Counter(_history(p, d, n_tips) for p, d in zip(parents, depths))
    assert set(counts) == want
    assert stats.chisquare(list(counts.values())).pvalue > P_MIN


# ------------------------------------------------------------------------------- kernel checks
def _random_state(seed):
    from mbgpu.core import rng
    return rng.seed_states(seed, [(0, 0)])[0]


def test_compiled_moves_equal_interpreted():
    """Each kernel compiles in nopython mode and, from the same generator state, changes the tree and
    returns the ratio exactly as the interpreted code."""
    parent, depth = _caterpillar(6, 1.0)
    n, root = parent.size, parent.size - 1
    locked = np.zeros(n, dtype=bool)
    lo, hi = tm.depth_bounds(n, 6, root, 1.0, root_ages=(0.0, math.inf))
    for name, tuning in zip(pc.MOVES, TUNED):
        for seed in range(20):
            runs = []
            for f in ((getattr(tm, name, None) or getattr(topo, name)).py_func, pc.compiled()[name]):
                p, d = parent.copy(), depth.copy()
                kids = children(p)
                r = f(_random_state(seed), p, kids, d, 6, lo, hi, locked, tuning)
                runs.append((r, p, kids, d))
            (r0, p0, k0, d0), (r1, p1, k1, d1) = runs
            assert r0 == r1 and (p0 == p1).all() and (k0 == k1).all() and (d0 == d1).all()
            if r0 > -math.inf:
                assert (k0 == children(p0)).all()          # kids stay the sorted children


def test_tree_stretch_scales_movable_nodes_only():
    """TreeStretch scales interior nodes and the root, not undated tips nor a fixed-age root, and returns
    (number scaled) x ln(factor)."""
    parent, depth = _caterpillar(4, 0.6)
    n, root = parent.size, parent.size - 1
    locked = np.zeros(n, dtype=bool)
    for root_ages, k in (((0.0, math.inf), 3), ((0.6, 0.6), 2)):
        lo, hi = tm.depth_bounds(n, 4, root, 1.0, root_ages=root_ages)
        d = depth.copy()
        r = tm.tree_stretch(_random_state(3), parent.copy(), children(parent), d, 4, lo, hi, locked, 0.1)
        factor = d[4] / depth[4]
        assert r == pytest.approx(k * math.log(factor))
        assert d[root] == pytest.approx(depth[root] * (factor if k == 3 else 1.0))
        assert (d[:4] == 0).all()


def test_nni_ratio_counts_free_branches():
    """NNIClock returns ln(free before / free after), free = unlocked non-root interior node at least
    BRLENS_MIN older than its sister; a locked node never takes part."""
    # ((0,1)5:0.1,(2,3)6:0.3)7:0.4 plus tip 4 under the root 8
    parent = np.array([5, 5, 6, 6, 8, 7, 7, 8, -1])
    depth = np.array([0, 0, 0, 0, 0, 0.1, 0.3, 0.4, 0.5])
    locked = np.zeros(9, dtype=bool)
    lo, hi = tm.depth_bounds(9, 5, 8, 1.0)
    for seed in range(30):
        p, kids = parent.copy(), children(parent)
        before = topo._count_nni_free(p, kids, depth, 5, locked)
        r = topo.nni_clock(_random_state(seed), p, kids, depth.copy(), 5, lo, hi, locked, 0.0)
        assert r == pytest.approx(math.log(before / topo._count_nni_free(p, kids, depth, 5, locked)))
    locked[6] = locked[7] = True                 # only node 5 could move, and it is younger than node 6
    assert topo.nni_clock(_random_state(1), parent.copy(), children(parent), depth.copy(), 5, lo, hi, locked,
                          0.0) == -math.inf


# ------------------------------------------------------------------------------------ MrBayes
TAXA6 = ["Tarsius_syrichta", "Lemur_catta", "Homo_sapiens", "Pan", "Gorilla", "Pongo"]
MB_SETUP = ("delete 7-12; lset nst=1 rates=equal; prset statefreqpr=fixed(equal) brlenspr=clock:%s; %s "
            "mcmcp nruns=1 nchains=1; propset ParsSPRClock(Tau,V)$prob=0;")


def _mrbayes_sample(mb_double, folder, prset, extra, ngen=1000000, every=200):
    """MrBayes' .t trees of `mcmc data=no` on the first 6 primates as (parent, depth) arrays (tips 0..5 in
    data order, dated tips at their depths), the first 10% dropped."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "primates.nex").write_text(DATA.read_text())
    (folder / "run.nex").write_text(
        "#NEXUS\nbegin mrbayes; set seed=3 swapseed=3; execute primates.nex; end;\nbegin mrbayes;\n"
        + MB_SETUP % (prset, extra)
        + "\nmcmc data=no ngen=%d samplefreq=%d printfreq=%d nchains=1 nruns=1 mcmcdiagn=no checkpoint=no "
          "filename=x;\nend;\n" % (ngen, every, ngen))
    done = subprocess.run([str(mb_double), "run.nex"], cwd=folder, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-2000:]
    assert "ParsSPRClock" not in done.stdout.split("will use the following moves")[1].split("\n\n")[0]
    index = {str(i + 1): i for i in range(6)}
    trees = [ln.split("] ", 2)[-1] for ln in (folder / "x.t").read_text().splitlines()
             if ln.strip().startswith("tree gen.")]
    out = []
    for newick in trees[len(trees) // 10:]:
        tree = Tree.from_newick(newick, index)
        out.append((tree.parent, depths_of(tree, dated_tips=range(6))))
    return out


def _mrca(parent, tips):
    """The most recent common ancestor of `tips`."""
    paths = []
    for t in tips:
        v, path = t, []
        while v >= 0:
            path.append(v)
            v = parent[v]
        paths.append(path)
    common = set(paths[0]).intersection(*paths[1:])
    return next(v for v in paths[0] if v in common)


def _clade(parent, node):
    """The tips below `node`."""
    return sorted(t for t in range(6) if node in _path(parent, t))


def _path(parent, v):
    out = []
    while v >= 0:
        out.append(v)
        v = parent[v]
    return out


def _compare_clades(ours, theirs):
    """Each clade's frequency in our trees and MrBayes' within 5 binomial standard errors."""
    def freqs(parents):
        count = Counter(tuple(_clade(p, v)) for p in parents for v in range(6, p.size))
        return {c: k / len(parents) for c, k in count.items()}
    a, b = freqs(ours), freqs(theirs)
    for c in set(a) | set(b):
        x, y = a.get(c, 0.0), b.get(c, 0.0)
        se = math.sqrt(max(x * (1 - x), 1e-4) / len(ours) + max(y * (1 - y), 1e-4) / len(theirs))
        assert abs(x - y) < 5 * se, "clade %s: ours %.4f, MrBayes %.4f" % (c, x, y)


def _compare(ours, theirs, what):
    """Two-sample KS of one statistic between our chain and MrBayes'."""
    p = stats.ks_2samp(ours, theirs).pvalue
    assert p > P_MIN, "%s: ours mean %.4f, MrBayes %.4f, KS p = %.2g" % (what, np.mean(ours), np.mean(theirs), p)


def test_calibrated_node_and_tip_dates_like_mrbayes(mb_double, tmp_path):
    """clock:uniform with a calibrated clade (hpg = Homo Pan Gorilla ~ uniform(0.3,0.6)), a tip dated
    uniform(0.05,0.4) (Tarsius, moves) and a tip fixed at 0.2 (Lemur): the ages of hpg, of Tarsius and of
    the root, and the clade frequencies, as in MrBayes' data=no sample."""
    extra = ("constraint hpg = Homo_sapiens Pan Gorilla; prset topologypr=constraints(hpg) nodeagepr=calibrated; "
             "calibrate hpg=uniform(0.3,0.6) Tarsius_syrichta=uniform(0.05,0.4) Lemur_catta=fixed(0.2);")
    theirs = _mrbayes_sample(mb_double, tmp_path, "uniform", extra)
    # ((((Homo,Pan)6,Gorilla)7=hpg,Pongo)8,(Tarsius,Lemur)9)10
    parent = np.array([9, 9, 6, 6, 7, 8, 7, 8, 10, 10, -1])
    depth = np.array([0.25, 0.2, 0, 0, 0, 0, 0.2, 0.45, 0.6, 0.5, 1.0])
    n, root, hpg = 11, 10, 7
    cal = {0: age_distribution("uniform", (0.05, 0.4)), 1: age_distribution("fixed", (0.2,)),
           hpg: age_distribution("uniform", (0.3, 0.6))}
    kinds, params = _no_calibrations(n)
    for v, d in cal.items():
        kinds[v], params[v, :len(d.params)] = d.kind, d.params
    dated, locked = np.zeros(n, dtype=bool), np.zeros(n, dtype=bool)
    dated[list(cal)] = True
    locked[hpg] = True
    dist, kind, age_p = _age_prior("gamma", 1.0, 1.0)
    lo, hi = tm.depth_bounds(n, 6, root, 1.0, {v: (d.min, d.max) for v, d in cal.items()}, (dist.min, dist.max))
    pargs = (kind, age_p, dated, locked, kinds, params)
    parents, depths, _ = pc.sample(parent, depth, 6, pc.jit_over(_uniform_prior), pargs, lo, hi, locked,
                                   len(theirs), 400, seed=7, tunings=TUNED, burnin=20000)
    assert all(_clade(p, hpg) == [2, 3, 4] for p in parents)      # the constraint holds throughout
    _compare(depths[:, hpg], [d[_mrca(p, [2, 3, 4])] for p, d in theirs], "hpg age")
    _compare(depths[:, 0], [d[0] for _, d in theirs], "Tarsius age")
    _compare(depths[:, root], [d.max() for _, d in theirs], "root age")
    assert (depths[:, 1] == 0.2).all()
    _compare_clades(parents, [p for p, _ in theirs])


def _ranked_case(case):
    """(MrBayes brlenspr, its extra commands, our log prior, its arguments, depth bounds) on 6 taxa."""
    n, root = 11, 10
    flags = np.zeros(n, dtype=bool)
    dist, kind, age_p = _age_prior("gamma", 1.0, 1.0)
    free_root = (dist.min, dist.max)
    if case == "birthdeath":
        return ("birthdeath", "prset speciationpr=fixed(2) extinctionpr=fixed(0.5);", _bd_prior,
                (2.0, 0.5, kind, age_p), tm.depth_bounds(n, 6, root, 1.0, root_ages=free_root))
    if case == "treeage-fixed":
        dist, kind, age_p = _age_prior("fixed", 0.8)
        return ("uniform", "prset treeagepr=fixed(0.8);", _uniform_prior, (kind, age_p, flags, flags)
                + _no_calibrations(n), tm.depth_bounds(n, 6, root, 1.0, root_ages=(dist.min, dist.max)))
    cal = age_distribution("uniform", (1.0, 2.0))          # root calibration: treeagepr not used
    kinds, params = _no_calibrations(n)
    kinds[root], params[root, :2] = cal.kind, cal.params
    dated = flags.copy()
    dated[root] = True
    return ("uniform", "constraint all6 = 1-6; prset topologypr=constraints(all6) nodeagepr=calibrated; "
            "calibrate all6=uniform(1.0,2.0);", _uniform_prior, (kind, age_p, dated, dated, kinds, params),
            tm.depth_bounds(n, 6, root, 1.0, {root: (cal.min, cal.max)}, free_root))


@pytest.mark.parametrize("case", ["birthdeath", "treeage-fixed", "root-calibrated"])
def test_node_ages_like_mrbayes(case, mb_double, tmp_path):
    """The root age and the interior node ages in rank order as in MrBayes' data=no sample:
    clock:birthdeath with fixed rates (net speciation 2, relative extinction 0.5; treeagepr Gamma(1,1)),
    clock:uniform with treeagepr=fixed(0.8) (the root never moves) and with the root calibrated
    uniform(1,2) (a constraint on all taxa; the tree-age prior then does not apply)."""
    prset, extra, prior, pargs, (lo, hi) = _ranked_case(case)
    theirs = _mrbayes_sample(mb_double, tmp_path, prset, extra)
    parent, depth = _caterpillar(6, 0.8 if case == "treeage-fixed" else 1.5)
    _, depths, _ = pc.sample(parent, depth, 6, pc.jit_over(prior), pargs, lo, hi, np.zeros(11, dtype=bool),
                             len(theirs), 400, seed=9, tunings=TUNED, burnin=20000)
    ours = np.sort(depths[:, 6:], axis=1)
    mine = np.array([np.sort(d[6:]) for _, d in theirs])
    if case == "treeage-fixed":
        assert (ours[:, -1] == 0.8).all() and np.allclose(mine[:, -1], 0.8, atol=1e-6)
        ours, mine = ours[:, :-1], mine[:, :-1]
    if case == "root-calibrated":
        assert stats.kstest(ours[:, -1], "uniform", args=(1.0, 1.0)).pvalue > P_MIN
    for k in range(ours.shape[1]):
        _compare(ours[:, k], mine[:, k], "interior age rank %d" % k)
