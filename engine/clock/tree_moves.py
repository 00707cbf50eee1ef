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

Compiled with numba (plain loops over arrays, no Python objects), as every kernel of mbgpu.clock. Sampled ancestors of the fossilized birth-death tree (a dated tip on a branch shorter than
TIME_MIN, MrBayes' interior node with a zero-length child) move with their parent node, as in MrBayes:
the fossil's calibration range (`min_depth`/`max_depth` of the tip) then bounds the parent's depth.
"""
from __future__ import annotations

import math

import numba
import numpy as np

from mbgpu.clock.limits import BRLENS_MAX, BRLENS_MIN, TIME_MIN, TREEHEIGHT_MAX
from mbgpu.core import rng
from mbgpu.jit import JIT_OPTIONS

# default tuning, autotune target acceptance rate and relative weight (showmoves, docs/plans/clocks.md §4)
NODESLIDER_DELTA, NODESLIDER_TARGET, NODESLIDER_WEIGHT = 0.05, 0.25, 20.0
# TreeStretch's lambda is 2 ln 1.01 = 0.0199 in model.c (MrBayes 3.2.x and develop; showmoves prints 0.020)
TREESTRETCH_LAMBDA, TREESTRETCH_TARGET, TREESTRETCH_WEIGHT = 2.0 * math.log(1.01), 0.25, 3.0
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


@numba.njit(**JIT_OPTIONS)
def _movable(v, min_depth, max_depth) -> bool:
    """A node whose depth can change: not an undated tip, fixed calibration or fixed tree age."""
    return min_depth[v] < max_depth[v]


@numba.njit(**JIT_OPTIONS)
def is_sampled_ancestor(v, parent, depth, n_tips) -> bool:
    """v is a fossil on a zero-length branch (MrBayes: a tip whose length is below TIME_MIN)."""
    return v < n_tips and parent[v] >= 0 and depth[parent[v]] - depth[v] < TIME_MIN


@numba.njit(**JIT_OPTIONS)
def _slidable(v, parent, depth, n_tips, min_depth, max_depth) -> bool:
    """NodesliderClock's candidates: movable nodes other than sampled ancestors (which move with their
    parent node)."""
    return _movable(v, min_depth, max_depth) and not is_sampled_ancestor(v, parent, depth, n_tips)


@numba.njit(**JIT_OPTIONS)
def node_slider_clock(s, parent, kids, depth, n_tips, min_depth, max_depth, locked, delta) -> float:
    """NodesliderClock (Move_NodeSliderClock): one movable node (interior, root unless its age is fixed,
    or a tip with a non-fixed calibration that is not a sampled ancestor), picked uniformly, slides by a
    window `delta` between its oldest child (+BRLENS_MIN; 0 for a tip; a sampled-ancestor child gives its
    calibration minimum instead and its calibration maximum caps the top) and its parent (-BRLENS_MIN;
    TREEHEIGHT_MAX for the root), narrowed to its calibration / tree-age range, reflecting at the
    bounds; sampled-ancestor children move with it. Symmetric: returns 0."""
    n_free = 0
    for v in range(parent.shape[0]):
        if _slidable(v, parent, depth, n_tips, min_depth, max_depth):
            n_free += 1
    if n_free == 0:
        return -math.inf
    k = rng.randint(s, n_free)
    p = -1
    for v in range(parent.shape[0]):
        if _slidable(v, parent, depth, n_tips, min_depth, max_depth):
            if k == 0:
                p = v
                break
            k -= 1
    lo = 0.0
    hi = TREEHEIGHT_MAX if parent[p] < 0 else depth[parent[p]] - BRLENS_MIN
    if p >= n_tips:
        for j in range(2):
            c = kids[p, j]
            if depth[p] - depth[c] > 0.0:
                lo = max(lo, depth[c] + BRLENS_MIN)
            else:                                   # sampled ancestor: its calibration bounds p
                lo = max(lo, min_depth[c])
            if depth[p] - depth[c] < TIME_MIN:
                hi = min(hi, max_depth[c])
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
    if p >= n_tips:
        for j in range(2):
            c = kids[p, j]
            if depth[p] - depth[c] <= 0.0:
                depth[c] = new
    depth[p] = new
    return 0.0


@numba.njit(**JIT_OPTIONS)
def tree_stretch(s, parent, kids, depth, n_tips, min_depth, max_depth, locked, lam) -> float:
    """TreeStretch (Move_TreeStretch): every movable node depth (interior nodes, dated tips with a
    non-fixed calibration, the root unless its age is fixed) times c = exp(lam (u - 0.5)); a node with a
    sampled-ancestor child takes the child's new depth instead (the pair counts once, not at all when
    the fossil's age is fixed). Aborts when a node leaves its range, a branch turns negative, exceeds
    BRLENS_MAX, drops below BRLENS_MIN or a zero-length branch grows. Returns k ln c, k = the number of
    nodes scaled."""
    factor = math.exp(lam * (rng.uniform(s) - 0.5))
    n = parent.shape[0]
    new = np.empty(n)
    n_changed = 0
    for v in range(n_tips):                        # tips first: a sampled ancestor sets its parent
        new[v] = depth[v] * factor if _movable(v, min_depth, max_depth) else depth[v]
        if _movable(v, min_depth, max_depth):
            if new[v] < min_depth[v] or new[v] > max_depth[v]:
                return -math.inf
            n_changed += 1
    for v in range(n_tips, n):
        new[v] = depth[v]
        if not _movable(v, min_depth, max_depth):
            continue
        new[v] = depth[v] * factor
        if new[v] < min_depth[v] or new[v] > max_depth[v]:
            return -math.inf
        n_changed += 1
        for j in range(2):
            c = kids[v, j]
            if depth[v] - depth[c] < TIME_MIN:     # sampled ancestor: v stays on it
                new[v] = new[c]
                if new[v] < min_depth[v] or new[v] > max_depth[v]:
                    return -math.inf
                n_changed -= 1
    for v in range(n):
        p = parent[v]
        if p < 0:
            continue
        old_len = depth[p] - depth[v]
        new_len = new[p] - new[v]
        if (new_len < 0.0 or new_len > BRLENS_MAX or (old_len > BRLENS_MIN and new_len < BRLENS_MIN)
                or (old_len < TIME_MIN and new_len > TIME_MIN)):
            return -math.inf
    for v in range(n):
        depth[v] = new[v]
    return n_changed * math.log(factor)
