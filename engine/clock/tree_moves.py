"""MrBayes 3.2.7a's moves on a rooted clock tree (proposal.c): NodesliderClock and TreeStretch change
node depths, ExtSprClock and NNIClock the topology (mbgpu.clock.topology_moves). ParsSPRClock needs
parsimony data and is not here.

Every move takes the same arguments, so the compiled core can call any of them from one table:
`(s, parent, kids, depth, n_tips, min_depth, max_depth, locked, tuning)`, with `s` the chain's xoshiro
state (mbgpu.core.rng), the tree arrays of mbgpu.clock.rooted (`kids[v]` = v's two children in
increasing id order, -1 for tips; kept so), and per node the depth range its moves keep (`depth_bounds`:
calibration x clock rate; for the root its calibration or treeagepr; a single point = a node that never
moves, as undated tips and fixed calibrations) and `locked` (constrained nodes, MrBayes' isLocked).
A move changes the arrays in place and returns the log proposal ratio (Hastings ratio and Jacobian; the
caller adds the prior and likelihood ratios), or -inf where MrBayes aborts the move; the arrays may then
have changed, and the caller restores its copy as MrBayes restores the chain's other state.

Written for numba (plain loops over arrays, no Python objects): tests/test_clock/test_numba.py compiles
them. Sampled ancestors of the fossilized birth-death tree (zero-length branches) are not handled.
"""
from __future__ import annotations

import math

import numpy as np

from mbgpu.clock.fbd_moves import TREEHEIGHT_MAX
from mbgpu.clock.param_moves import BRLENS_MAX, BRLENS_MIN
from mbgpu.core import rng

# default tuning, autotune target acceptance rate and relative weight (showmoves, docs/plans/clocks.md §4)
NODESLIDER_DELTA, NODESLIDER_TARGET, NODESLIDER_WEIGHT = 0.05, 0.25, 20.0
TREESTRETCH_LAMBDA, TREESTRETCH_TARGET, TREESTRETCH_WEIGHT = 0.02, 0.25, 3.0
EXTSPR_P_EXT, EXTSPR_WEIGHT = 0.5, 10.0          # not autotuned
NNI_WEIGHT = 12.0                                 # no tuning parameter
PARSSPR_WARP, PARSSPR_WEIGHT = 0.1, 8.0           # ParsSPRClock: not implemented here


def depth_bounds(n_nodes: int, n_tips: int, root: int, clock_rate: float, calibrations=None,
                 root_ages=None):
    """(min_depth, max_depth) float64[n_nodes] for the moves: undated tips [0, 0] (never move), other
    nodes [0, inf]; `calibrations` {node: (min_age, max_age)} (mbgpu.clock.distributions.Distribution
    .min/.max) and, for an undated root, `root_ages` = treeagepr's (min, max) under the uniform,
    birth-death and fossilized priors (MrBayes' calibrationPtr), both times `clock_rate`."""
    lo = np.zeros(n_nodes)
    hi = np.full(n_nodes, math.inf)
    hi[:n_tips] = 0.0
    calibrations = calibrations or {}
    for v, (a, b) in calibrations.items():
        lo[v], hi[v] = a * clock_rate, b * clock_rate
    if root not in calibrations and root_ages is not None:
        lo[root], hi[root] = root_ages[0] * clock_rate, root_ages[1] * clock_rate
    return lo, hi


def _movable(v, min_depth, max_depth) -> bool:
    """A node whose depth can change: not an undated tip, fixed calibration or fixed tree age."""
    return min_depth[v] < max_depth[v]


def node_slider_clock(s, parent, kids, depth, n_tips, min_depth, max_depth, locked, delta) -> float:
    """NodesliderClock (Move_NodeSliderClock): one movable node (interior, root unless its age is fixed,
    or a tip with a non-fixed calibration), picked uniformly, slides by a window `delta` between its
    oldest child (+BRLENS_MIN; 0 for a tip) and its parent (-BRLENS_MIN; TREEHEIGHT_MAX for the root),
    narrowed to its calibration / tree-age range, reflecting at the bounds. Symmetric: returns 0."""
    n_free = 0
    for v in range(parent.shape[0]):
        if _movable(v, min_depth, max_depth):
            n_free += 1
    if n_free == 0:
        return -math.inf
    k = rng.randint(s, n_free)
    p = -1
    for v in range(parent.shape[0]):
        if _movable(v, min_depth, max_depth):
            if k == 0:
                p = v
                break
            k -= 1
    lo = 0.0
    if p >= n_tips:
        lo = max(depth[kids[p, 0]], depth[kids[p, 1]]) + BRLENS_MIN
    hi = TREEHEIGHT_MAX if parent[p] < 0 else depth[parent[p]] - BRLENS_MIN
    hi = min(hi, max_depth[p])
    lo = max(lo, min_depth[p])
    if lo > hi - BRLENS_MIN:
        return -math.inf
    window = min(delta, hi - lo)
    new = depth[p] + (rng.uniform(s) - 0.5) * window
    while new < lo or new > hi:
        if new < lo:
            new = 2.0 * lo - new
        if new > hi:
            new = 2.0 * hi - new
    depth[p] = new
    return 0.0


def tree_stretch(s, parent, kids, depth, n_tips, min_depth, max_depth, locked, lam) -> float:
    """TreeStretch (Move_TreeStretch): every movable node depth (interior nodes, dated tips with a
    non-fixed calibration, the root unless its age is fixed) times c = exp(lam (u - 0.5)); aborts when a
    node leaves its range, a branch turns negative, exceeds BRLENS_MAX or drops below BRLENS_MIN.
    Returns k ln c, k = the number of nodes scaled."""
    factor = math.exp(lam * (rng.uniform(s) - 0.5))
    n_changed = 0
    for v in range(parent.shape[0]):
        if _movable(v, min_depth, max_depth):
            new = depth[v] * factor
            if new < min_depth[v] or new > max_depth[v]:
                return -math.inf
            n_changed += 1
    for v in range(parent.shape[0]):
        p = parent[v]
        if p < 0:
            continue
        old_len = depth[p] - depth[v]
        new_len = _stretched(p, depth, min_depth, max_depth, factor) - _stretched(v, depth, min_depth, max_depth, factor)
        if new_len < 0.0 or new_len > BRLENS_MAX or (old_len > BRLENS_MIN and new_len < BRLENS_MIN):
            return -math.inf
    for v in range(parent.shape[0]):
        depth[v] = _stretched(v, depth, min_depth, max_depth, factor)
    return n_changed * math.log(factor)


def _stretched(v, depth, min_depth, max_depth, factor) -> float:
    """v's depth after TreeStretch by `factor`."""
    return depth[v] * factor if _movable(v, min_depth, max_depth) else depth[v]

