"""The fossilized birth-death moves of MrBayes 3.2.7a (proposal.c Move_AddBranch / Move_DelBranch): a fossil
(a tip deeper than 0) on a zero-length branch is a sampled ancestor; AddBranch gives one a branch (its parent
node moves up), DelBranch takes a fossil tip's branch away (its parent node moves down onto it).

Trees are the arrays of mbgpu.clock.rooted (parent, kids, depth in substitution units, tips 0..n_tips-1);
only depths change. Calibrations are per node: `cal_kind[v]` (a mbgpu.clock.distributions kind, -1 when v
is not dated) and its age bounds `cal_min[v]`, `cal_max[v]` (Distribution.min/max, time units); the tree-age
prior's (kind, min, max) stand in for an undated root. Each kernel returns the log proposal ratio (counts of
candidates and the Jacobian) or -inf where MrBayes aborts, the arrays then unchanged; the caller adds the
prior ratio (mbgpu.clock.fossilized).

Relaxed clocks (igr / tk02, `rates` by node id as mbgpu.clock.relaxed_state): AddBranch gives the fossil the
rate of its parent node (proposal.c: `igrRate[p->index] = igrRate[q->index]`, the same for tk02; no proposal
term: the rate is set, not drawn); DelBranch leaves the fossil's rate alone (its branch, of zero length, has
no prior term and no effective length). Neither checks the effective lengths' bounds. The caller recomputes
the effective lengths from the new lengths and rates; a strict clock passes a scratch array.
"""
from __future__ import annotations

import math

import numba

from mbgpu.clock.distributions import FIXED
from mbgpu.clock.limits import BRLENS_MIN, TREEHEIGHT_MAX
from mbgpu.core import rng
from mbgpu.jit import JIT_OPTIONS

ADD_BRANCH_WEIGHT = 15.0                 # MrBayes' relative weights (clocks.md §4); no tuning, no autotune
DEL_BRANCH_WEIGHT = 15.0


@numba.njit(**JIT_OPTIONS)
def fossil_counts(parent, depth, n_tips):
    """(sampled ancestors, fossil tips): tips deeper than 0 on a zero-length / positive-length branch."""
    n_ancestors = n_fossil_tips = 0
    for v in range(n_tips):
        if depth[v] > 0.0:
            if depth[parent[v]] - depth[v] > 0.0:
                n_fossil_tips += 1
            else:
                n_ancestors += 1
    return n_ancestors, n_fossil_tips


@numba.njit(**JIT_OPTIONS)
def _nth_fossil(parent, depth, n_tips, ancestor, j):
    """The j-th (from 0, in id order) sampled ancestor (`ancestor`) or fossil tip."""
    for v in range(n_tips):
        if depth[v] > 0.0 and (depth[parent[v]] - depth[v] > 0.0) != ancestor:
            if j == 0:
                return v
            j -= 1
    return -1


@numba.njit(**JIT_OPTIONS)
def _depth_window(p, q, parent, depth, clock_rate, cal_kind, cal_min, cal_max, age_kind, age_min, age_max):
    """(lowest, highest) depth of q above fossil p as MrBayes bounds it: p's depth + BRLENS_MIN up to q's
    parent's depth - BRLENS_MIN (TREEHEIGHT_MAX at the root), cut at q's calibration maximum (the tree-age
    prior's for an undated root); (1, 0) (empty) when that calibration is fixed or its minimum is above
    the lowest depth, where MrBayes aborts."""
    lo = depth[p] + BRLENS_MIN
    above = parent[q]
    hi = TREEHEIGHT_MAX if above < 0 else depth[above] - BRLENS_MIN
    kind, c_min, c_max = -1, 0.0, math.inf
    if cal_kind[q] >= 0:
        kind, c_min, c_max = cal_kind[q], cal_min[q], cal_max[q]
    elif above < 0:
        kind, c_min, c_max = age_kind, age_min, age_max
    if kind >= 0:
        if kind == FIXED or c_min * clock_rate > lo:
            return 1.0, 0.0
        if c_max * clock_rate < hi:
            hi = c_max * clock_rate
    return lo, hi


@numba.njit(**JIT_OPTIONS)
def add_branch(s, parent, kids, depth, n_tips, clock_rate, cal_kind, cal_min, cal_max,
               age_kind, age_min, age_max, rates) -> float:
    """AddBranch(V) (Move_AddBranch): pick one of the k sampled ancestors p uniformly and raise its parent
    node by a length drawn uniformly in (0, hi - lo) of the depth window. Log ratio: log k - log(m + 1)
    (m fossil tips before the move) + log((hi - lo) / clock rate), the Jacobian in time units. The fossil
    takes its parent's relaxed-clock rate (rates[p] = rates[q])."""
    n_ancestors, n_fossil_tips = fossil_counts(parent, depth, n_tips)
    if n_ancestors == 0:
        return -math.inf
    p = _nth_fossil(parent, depth, n_tips, True, rng.randint(s, n_ancestors))
    q = parent[p]
    lo, hi = _depth_window(p, q, parent, depth, clock_rate, cal_kind, cal_min, cal_max, age_kind, age_min,
                           age_max)
    if lo >= hi:
        return -math.inf
    depth[q] += rng.uniform(s) * (hi - lo)
    rates[p] = rates[q]
    return math.log(n_ancestors) - math.log(n_fossil_tips + 1) + math.log((hi - lo) / clock_rate)


@numba.njit(**JIT_OPTIONS)
def del_branch(s, parent, kids, depth, n_tips, clock_rate, cal_kind, cal_min, cal_max,
               age_kind, age_min, age_max, rates) -> float:
    """DelBranch(V) (Move_DelBranch): pick one of the m fossil tips p uniformly and lower its parent node q
    onto it (p becomes a sampled ancestor); aborts when p's sister is deeper than p - BRLENS_MIN or the
    window of the reverse AddBranch is empty. Log ratio: log m - log(k + 1) - log((hi - lo) / clock rate).
    `rates` stay as they are (MrBayes leaves the new sampled ancestor's rate)."""
    n_ancestors, n_fossil_tips = fossil_counts(parent, depth, n_tips)
    if n_fossil_tips == 0:
        return -math.inf
    p = _nth_fossil(parent, depth, n_tips, False, rng.randint(s, n_fossil_tips))
    q = parent[p]
    sister = kids[q, 0] if kids[q, 1] == p else kids[q, 1]
    lo, hi = _depth_window(p, q, parent, depth, clock_rate, cal_kind, cal_min, cal_max, age_kind, age_min,
                           age_max)
    if depth[sister] > depth[p] - BRLENS_MIN or lo >= hi:
        return -math.inf
    depth[q] = depth[p]
    return math.log(n_fossil_tips) - math.log(n_ancestors + 1) - math.log((hi - lo) / clock_rate)
