"""Log prior densities of a rooted clock tree (MrBayes 3.2.7a mcmc.c): the uniform prior
(LnUniformPriorPr, with calibrated sub-trees), birth-death (random, diversity, cluster sampling) and the
coalescent (with exponential growth); the fossilized birth-death prior is in mbgpu.clock.fossilized.

Every function reads the arrays of mbgpu.clock.rooted (parent, depth in substitution units, n_tips) and
the clock rate (ages = depth / rate). Each includes the tree-age prior at the root's age, as MrBayes does,
unless the root is dated (`root_dated`: its calibration density is then added with the others by
`ln_calibrations`). The tree-age prior comes as (age_kind, age_p) of mbgpu.clock.distributions so the
loops stay numba-compilable: plain loops over arrays, no Python objects inside.
"""
from __future__ import annotations

import math

import numba
import numpy as np

from mbgpu.clock.distributions import ln_density
from mbgpu.clock.rooted import children, internal_postorder, root_of
from mbgpu.clock.special import ln_factorial
from mbgpu.jit import JIT_OPTIONS

LN2 = math.log(2.0)


@numba.njit(**JIT_OPTIONS)
def tree_age_term(age: float, root_dated: bool, age_kind: int, age_p) -> float:
    """treeagepr's log density at the root age, or 0 when the root is calibrated."""
    return 0.0 if root_dated else ln_density(age_kind, age_p[0], age_p[1], age_p[2], age)


@numba.njit(**JIT_OPTIONS)
def ln_calibrations(ages: np.ndarray, kinds: np.ndarray, params: np.ndarray) -> float:
    """Σ over dated nodes of their calibration's log density at the node age (LogPrior's brlens term);
    kinds[v] < 0 for an undated node, params[v] its (p0, p1, p2). Fixed calibrations add 0."""
    total = 0.0
    for v in range(ages.shape[0]):
        if kinds[v] >= 0:
            total += ln_density(kinds[v], params[v, 0], params[v, 1], params[v, 2], ages[v])
    return total


# ------------------------------------------------------------------------------------------- uniform
@numba.njit(**JIT_OPTIONS)
def ln_uniform(parent, depth, n_tips, clock_rate, age_kind, age_p, dated, locked) -> float:
    """clock:uniform (LnUniformPriorPr). `dated[v]`: node v has a calibration (tips too); `locked[v]`:
    v is a constrained node (topologypr=constraints), which starts a new sub-tree colour as in MrBayes'
    ColorClusters even when it is not dated."""
    root = root_of(parent)
    tree_age = depth[root] / clock_rate
    ln_p = tree_age_term(tree_age, dated[root], age_kind, age_p)
    n_dated = 0
    for v in range(parent.shape[0]):
        if v != root and dated[v]:
            n_dated += 1
    if n_dated == 0:
        return ln_p + ((n_tips - 1.0) * LN2 - ln_factorial(n_tips) - math.log(n_tips - 1.0)
                       - (n_tips - 2.0) * math.log(tree_age))
    kids = children(parent)
    colour = _colour_clusters(parent, kids, root, locked)
    post = internal_postorder(parent, n_tips)
    for p in post:
        if p != root and not dated[p]:
            continue
        ln_p += _subtree_term(p, kids, depth, n_tips, clock_rate, dated, colour, post)
        if p != root:
            colour[p] = colour[parent[p]]
    return ln_p


@numba.njit(**JIT_OPTIONS)
def _colour_clusters(parent, kids, root, locked) -> np.ndarray:
    """MrBayes' ColorClusters: the root and every locked node start a new colour, others inherit."""
    colour = np.zeros(parent.shape[0], dtype=np.int64)
    index = 0
    stack = np.empty(parent.shape[0], dtype=np.int64)
    stack[0] = root
    top = 1
    while top > 0:                                    # preorder, left child first
        top -= 1
        v = stack[top]
        if v == root or locked[v]:
            index += 1
            colour[v] = index
        else:
            colour[v] = colour[parent[v]]
        if kids[v, 0] >= 0:
            stack[top] = kids[v, 1]
            stack[top + 1] = kids[v, 0]
            top += 2
    return colour


@numba.njit(**JIT_OPTIONS)
def _dated_tip_depths(sub_root, kids, depth, n_tips, dated) -> np.ndarray:
    """The sub-tree's root depth and the depths of its 'tips' (tips or dated nodes below it, where the
    walk stops: GetDatedNodeDepths), sorted ascending; the root depth is then last."""
    out = np.empty(depth.shape[0], dtype=np.float64)
    out[0] = depth[sub_root]
    k = 1
    stack = np.empty(depth.shape[0], dtype=np.int64)
    stack[0] = kids[sub_root, 1]
    stack[1] = kids[sub_root, 0]
    top = 2
    while top > 0:
        top -= 1
        v = stack[top]
        if v < n_tips or dated[v]:
            out[k] = depth[v]
            k += 1
        else:
            stack[top] = kids[v, 1]
            stack[top + 1] = kids[v, 0]
            top += 2
    return np.sort(out[:k])


@numba.njit(**JIT_OPTIONS)
def _subtree_term(r, kids, depth, n_tips, clock_rate, dated, colour, post) -> float:
    """One sub-tree's factor of LnUniformPriorPr: uniform node depths between its dated tips and its
    root, the ordering of interior nodes between tip dates, and the coalescent histories."""
    nd = _dated_tip_depths(r, kids, depth, n_tips, dated)
    n = nd.shape[0] - 1                                # number of dated tips (nDatedTips)
    ln_p = 0.0
    for j in range(1, n - 1):
        ln_p -= math.log((depth[r] - nd[j]) / clock_rate)
    lineages = np.arange(1, n + 1)
    for q in post:
        if colour[q] != colour[r] or q == r or dated[q]:
            continue
        for k in range(n):
            if depth[q] < nd[k + 1]:
                lineages[k] -= 1
    for j in range(1, n - 1):
        n_in = lineages[j - 1] + 1
        n_out = 2 if j == n - 2 else lineages[j]
        if n_in > 1 and n_in - n_out >= 1:
            ln_p += ln_factorial(n_in - 1) - ln_factorial(n_out - 1)
    for j in range(1, n):
        n_in = lineages[j - 1] + 1
        n_out = lineages[j]
        if n_in != n_out:
            ln_p += LN2 * (n_in - n_out) + ln_factorial(n_out) + ln_factorial(n_out - 1)
            ln_p -= ln_factorial(n_in) + ln_factorial(n_in - 1)
    return ln_p


# ---------------------------------------------------------------------------------------- birth-death
@numba.njit(**JIT_OPTIONS)
def _ln_p0(t, b, d):
    return math.log(d * (1.0 - math.exp((d - b) * t)) / (b - d * math.exp((d - b) * t)))


@numba.njit(**JIT_OPTIONS)
def _ln_p1(t, b, d):
    return 2.0 * math.log(b - d) - (b - d) * t - 2.0 * math.log(b - d * math.exp((d - b) * t))


@numba.njit(**JIT_OPTIONS)
def _ln_p1_subsample(t, b, d, f):
    p1 = (b - d) / (f * b + (b * (1.0 - f) - d) * math.exp((d - b) * t))
    return 2.0 * math.log(p1) + math.log(f) - (b - d) * t


RANDOM, DIVERSITY, CLUSTER, FOSSILTIP = 0, 1, 2, 3       # samplestrat


@numba.njit(**JIT_OPTIONS)
def ln_birth_death(parent, depth, n_tips, clock_rate, net_speciation, relative_extinction,
                   sample_prob, strategy, age_kind, age_p, root_dated) -> float:
    """clock:birthdeath (LnBirthDeathPriorPrRandom / Diversity / Cluster of 3.2.7a): λ = sR/(1-eR),
    μ = eR λ, f = sampleprob; conditioned on the root age, no labelled-history constant. λ = μ is
    MrBayes' error "Critical branching process ... not implemented" (ValueError here)."""
    lam = net_speciation / (1.0 - relative_extinction)
    mu = relative_extinction * lam
    if abs(lam - mu) < 1e-7:                           # AreDoublesEqual(lambda, mu, ETA)
        raise ValueError("critical branching process (lambda = mu) is not implemented in MrBayes")
    root = root_of(parent)
    n = n_tips
    m = int(math.floor(n / sample_prob + 0.5))
    tmrca = depth[root] / clock_rate
    f = sample_prob
    if strategy == RANDOM:
        e = math.exp((mu - lam) * tmrca)
        ln_p = math.log(m - 1) - math.log(n - 1)
        ln_p += (m - 2.0) * (_ln_p0(tmrca, lam, mu) + math.log(lam) - math.log(mu))
        ln_p += 2.0 * (_ln_p1(tmrca, lam, mu) - math.log(1.0 - math.exp(_ln_p0(tmrca, lam, mu))))
        ln_p += (n - 2.0) * (math.log(lam * f + (lam - lam * f - mu) * e) - math.log(f * (1.0 - e)))
        for v in range(n_tips, parent.shape[0]):
            if v != root:
                ln_p += _ln_p1_subsample(depth[v] / clock_rate, lam, mu, f)
    else:
        ln_p0_t1 = _ln_p0(tmrca, lam, mu)
        ln_p = (m - 2.0) * (ln_p0_t1 + math.log(lam)) + (n - m) * math.log(mu)
        ln_p += 2.0 * (_ln_p1(tmrca, lam, mu) - math.log(1.0 - math.exp(ln_p0_t1)))
        young, old = math.inf, -math.inf
        for v in range(n_tips, parent.shape[0]):
            if v != root:
                t = depth[v] / clock_rate
                young, old = min(young, t), max(old, t)
                ln_p += _ln_p1(t, lam, mu) - ln_p0_t1
        if strategy == DIVERSITY:
            ln_p += (m - n) * (_ln_p0(young, lam, mu) - ln_p0_t1)
        else:
            ln_p += (m - n) * math.log(1.0 - math.exp(_ln_p0(old, lam, mu)) / math.exp(ln_p0_t1))
    return ln_p + tree_age_term(tmrca, root_dated, age_kind, age_p)


# ------------------------------------------------------------------------------------------ coalescent
def coalescent_theta(popsize: float, clock_rate: float, ploidy: str = "diploid") -> float:
    """θ of LnCoalescencePriorPr: 4 N r (diploid, MrBayes' default), 3 N r (zlinked), 2 N r (haploid)."""
    factor = {"diploid": 4.0, "zlinked": 3.0, "haploid": 2.0}[ploidy.lower()]
    return factor * popsize * clock_rate


@numba.njit(**JIT_OPTIONS)
def ln_coalescent(parent, depth, n_tips, theta, growth=0.0) -> float:
    """clock:coalescence (LnCoalescencePriorPr): coalescence times are internal node depths in
    substitution units (θ carries the rate); exponential growth when |growth| > 1e-6. No tree-age prior."""
    ct = np.sort(depth[n_tips:])
    ln_p = 0.0
    last = 0.0
    k = n_tips
    for c in ct:
        if abs(growth) < 0.000001:
            ln_p -= k * (k - 1) * (c - last) / theta
        else:
            ln_p += growth * c + (k * (k - 1)) / (theta * growth) * (math.exp(growth * last) - math.exp(growth * c))
        last = c
        k -= 1
    return (n_tips - 1) * math.log(2.0 / theta) + ln_p
