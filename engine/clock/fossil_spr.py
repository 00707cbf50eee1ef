"""ExtFossilSprClock (MrBayes 3.2.7a proposal.c Move_ExtFossilSPRClock): ExtSprClock restricted to fossil
subtrees (every tip below dated), for the fossilized birth-death tree. Same arguments and return value as
the moves of mbgpu.clock.tree_moves; a tip is dated when its depth range is not [0, 0].

MrBayes gives it weight 0 (not in the default move list of clock:fossilization); `propset
ExtFossilSprClock(Tau,V)$prob=...` switches it on. Its proposal ratio adds log(n_old / n_new) where n counts
the nodes MrBayes' code counts, i.e. the non-root nodes that may NOT be picked, and the division is C's
integer division (as written in 3.2.7a; kept).
Where no node can be picked but that count is positive MrBayes loops forever; we return -inf.
"""
from __future__ import annotations

import math

import numba
import numpy as np

from mbgpu.clock.rooted import root_of
from mbgpu.clock.topology_moves import _sister, _spr_prunable, spr_from
from mbgpu.clock.tree_moves import is_sampled_ancestor
from mbgpu.core import rng
from mbgpu.jit import JIT_OPTIONS

EXTFOSSILSPR_P_EXT, EXTFOSSILSPR_WEIGHT = 0.5, 0.0       # not autotuned; off unless propset


@numba.njit(**JIT_OPTIONS)
def fossil_subtrees(parent, n_tips, max_depth) -> np.ndarray:
    """bool per node: every tip below it is dated (MrBayes' p->x of Move_ExtFossilSPRClock)."""
    only = np.ones(parent.shape[0], dtype=np.bool_)
    for t in range(n_tips):
        if max_depth[t] <= 0.0:                              # an undated (extant) tip
            v = t
            while v >= 0 and only[v]:
                only[v] = False
                v = parent[v]
    return only


@numba.njit(**JIT_OPTIONS)
def _count_unmovable(parent, kids, depth, n_tips, locked, only, root) -> int:
    """MrBayes' numMovableNodes: non-root nodes whose parent is locked or the root, whose sister is a
    sampled ancestor, or that are not fossil subtrees."""
    n = 0
    for v in range(parent.shape[0]):
        if v == root:
            continue
        sister = _sister(kids, parent, v)
        if (locked[parent[v]] or parent[v] == root or is_sampled_ancestor(sister, parent, depth, n_tips)
                or not only[v]):
            n += 1
    return n


@numba.njit(**JIT_OPTIONS)
def ext_fossil_spr_clock(s, parent, kids, depth, n_tips, min_depth, max_depth, locked, p_ext) -> float:
    """ExtFossilSprClock: v uniform among ExtSprClock's prunable nodes that are fossil subtrees, moved as
    ExtSprClock moves it (topology_moves.spr_from); log ratio = spr_from's + log(n_old // n_new) of
    _count_unmovable (-inf when n_old < n_new). Returns 0 without a change when that count is 0 (MrBayes'
    early return)."""
    root = root_of(parent)
    only = fossil_subtrees(parent, n_tips, max_depth)
    n_old = _count_unmovable(parent, kids, depth, n_tips, locked, only, root)
    if n_old == 0:
        return 0.0
    n_free = 0
    for w in range(parent.shape[0]):
        if only[w] and _spr_prunable(w, parent, kids, depth, n_tips, min_depth, max_depth, locked, root):
            n_free += 1
    if n_free == 0:
        return -math.inf
    k = rng.randint(s, n_free)
    v = -1
    for w in range(parent.shape[0]):
        if only[w] and _spr_prunable(w, parent, kids, depth, n_tips, min_depth, max_depth, locked, root):
            if k == 0:
                v = w
                break
            k -= 1
    ratio = spr_from(s, v, parent, kids, depth, n_tips, min_depth, max_depth, locked, p_ext)
    if ratio == -math.inf:
        return ratio
    n_new = _count_unmovable(parent, kids, depth, n_tips, locked, fossil_subtrees(parent, n_tips, max_depth), root)
    if n_new == n_old:
        return ratio
    quotient = n_old // n_new                   # MrBayes divides the two ints: 0 (never accepted) if n_old < n_new
    return ratio + math.log(quotient) if quotient > 0 else -math.inf
