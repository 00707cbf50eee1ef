"""MrBayes 3.2.7a's ParsSPRClock(Tau,V) (Move_ParsSPRClock, proposal.c): the parsimony-biased SPR of a
rooted clock tree, on the arrays of mbgpu.clock.rooted, reusing the packed Fitch sets of the compiled
unrooted ParsSPR (mbgpu.core.pars_spr: `prepare_pars_data` gives the `data` tuple; its kernels do the
Fitch passes and the weighted counts).

The move: a node v is drawn uniformly among those whose parent u is neither the root nor locked (and
whose branch, u's and the sister a's are not the zero-length branch of a sampled ancestor). u is cut
out (a takes u's place under b = u's parent); the candidates are the branches (c's parent, c) of the
rest R reached from a and from b's path down to the first locked node or the root (whose two children
count), climbing only through unlocked nodes older than v + BRLENS_MIN. A candidate's cost is, summed
over partitions, L * -warp log(1/k - exp(-k/(k-1) (L / n_sites + 0.0001))/k), with L the weight of the
patterns where v's downpass set meets neither c's nor c's parent's final Fitch set of R (MrBayes'
"s/n" branch-length approximation; 3.2.7a has no weight noise and no v_t here: its only tuning is
warp). c != a is drawn with probability exp(-cost)/sum; u goes back on c's branch at a depth uniform
in (max(depth c, depth v) + BRLENS_MIN, depth d - BRLENS_MIN), d = c's parent. Log proposal ratio:
    [-cost(a) - log sum_{!=c}] - [-cost(c) - log sum_{!=a}] + log((new window) / (old window))
(the back move prunes the same v from the same R: the same candidates and costs). MrBayes then adds the
clock tree prior ratio; the caller does that.

The older MrBayes text (tomfy/MyMrBayes: fixed v_t and weight noise r) is not what mb-double runs: its
ParsSPRClock acceptance rate under the prior matches this version's, not that one's
(tests/test_clock/test_pars_spr_clock.py). Relaxed clocks (MrBayes also moves CPP events and
IGR/TK02 effective lengths here) and sampled ancestors are not handled.

Compiled (numba, nopython) like the kernels of mbgpu.core.pars_spr it calls.
"""
from __future__ import annotations

import math

import numba
import numpy as np

from mbgpu.clock.limits import BRLENS_MIN, TIME_MIN
from mbgpu.clock.rooted import root_of
from mbgpu.clock.topology_moves import _replace_child
from mbgpu.core.pars_spr import (_add_costs_float, _add_costs_int, _down, _final, _load_weights,
                                 _meets, _part_shape, _plane_spans, _weight_scratch)
from mbgpu.core.rng import randint, uniform
from mbgpu.jit import JIT_OPTIONS

# MrBayes' defaults (model.c, showmoves): the only tuning parameter is warp = 0.1 (propset refuses r and
# v_t here), not autotuned; relative weight 8 (docs/plans/clocks.md §4)
PARSSPRCLOCK_WARP = 0.1
PARSSPRCLOCK_WEIGHT = 8.0


@numba.njit(**JIT_OPTIONS)
def _pickable(v, parent, depth, kids, locked, root) -> bool:
    """v can be pruned: its parent u is not the root nor locked, and none of v's, u's and v's sister's
    branches is shorter than TIME_MIN (MrBayes' test for a sampled ancestor)."""
    if v == root or parent[v] == root:
        return False
    u = parent[v]
    a = kids[u, 0] if kids[u, 1] == v else kids[u, 1]
    if locked[u]:
        return False
    return (depth[u] - depth[v] >= TIME_MIN and depth[u] - depth[a] >= TIME_MIN
            and depth[parent[u]] - depth[u] >= TIME_MIN)


@numba.njit(**JIT_OPTIONS)
def _draw_pruned(s, parent, depth, kids, locked, root) -> int:
    """A uniform prunable node (MrBayes redraws until one fits: the same distribution), -1 if none."""
    n_ok = 0
    for v in range(parent.shape[0]):
        n_ok += _pickable(v, parent, depth, kids, locked, root)
    if n_ok == 0:
        return -1
    k = randint(s, n_ok)
    for v in range(parent.shape[0]):
        if _pickable(v, parent, depth, kids, locked, root):
            if k == 0:
                return v
            k -= 1
    return -1


@numba.njit(**JIT_OPTIONS)
def _rest_order(rkids, root, order) -> int:
    """Preorder of R (children rkids) from the root into order; returns its size."""
    order[0] = root
    head, end = 0, 1
    while head < end:
        x = order[head]
        head += 1
        if rkids[x, 0] >= 0:
            order[end] = rkids[x, 0]
            order[end + 1] = rkids[x, 1]
            end += 2
    return end


@numba.njit(**JIT_OPTIONS)
def _mark(marked, order, n_r, rpar, a, b, root, depth, v, locked, rkids) -> None:
    """MrBayes' candidate marks: a; b and down until a locked node or the root, whose two children;
    then up through marked, unlocked parents older than v + BRLENS_MIN (order: R's preorder)."""
    marked[:] = False
    marked[a] = True
    x = b
    while not locked[x] and x != root:
        marked[x] = True
        x = rpar[x]
    marked[rkids[x, 0]] = True
    marked[rkids[x, 1]] = True
    for i in range(1, n_r):
        y = order[i]
        p = rpar[y]
        if not marked[y] and marked[p] and not locked[p] and depth[p] > depth[v] + BRLENS_MIN:
            marked[y] = True


@numba.njit(**JIT_OPTIONS)
def _fitch(sets, meets, order, n_r, s_order, n_s, rpar, rkids, kids, sub, n_tips, tip_planes, info, i, fe, fs):
    """Partition i (one span of all its words): downpass sets of R (rooted at order[0]) and of sub's
    subtree (s_order: its preorder), R's final sets, and meets[x] = the patterns where x's final set
    meets sub's downpass set (MrBayes GetParsDP / GetParsFP)."""
    k, nw, col, woff = _part_shape(info, i)
    width = k * nw
    for t in range(n_tips):
        for w in range(width):
            sets[t, w] = tip_planes[t, col + w]
    for j in range(n_s - 1, -1, -1):
        x = s_order[j]
        if x >= n_tips:
            _down(sets, x, kids[x, 0], kids[x, 1], k, nw, nw, fe)
    for j in range(n_r - 1, -1, -1):
        x = order[j]
        if x >= n_tips:
            _down(sets, x, rkids[x, 0], rkids[x, 1], k, nw, nw, fe)
    _meets(sets, meets, order[0], sub, k, nw, nw, woff)
    for j in range(1, n_r):
        x = order[j]
        if x >= n_tips:
            _final(sets, meets, x, rpar[x], rkids[x, 0], rkids[x, 1], sub, k, nw, nw, woff, fe, fs)
        else:
            _meets(sets, meets, x, sub, k, nw, nw, woff)


@numba.njit(**JIT_OPTIONS)
def _n_sites(info, base_w, i) -> float:
    """Partition i's number of sites (MrBayes' numUncompressedChars): the sum of its pattern weights."""
    total = 0.0
    for j in range(info[i, 4], info[i, 4] + info[i, 5]):
        total += base_w[j]
    return total


@numba.njit(**JIT_OPTIONS)
def _costs(cost, order, n_r, s_order, n_s, rpar, rkids, kids, sub, n_tips, warp, fixed_w, tip_planes, info,
           part_f, base_w, base_i, count, base_planes, gidx, groups, cdf, tab_off, noise):
    """cost[j] of candidate (rpar[order[j]], order[j]) for j = 1 .. n_r - 1: over partitions, L times
    -warp log(1/k - exp(-k/(k-1) (L / n_sites + 0.0001))/k), L the weight of the patterns the candidate
    misses (MrBayes' s/n approximation of the branch length; the data's weights, or fixed_w in tests)."""
    for j in range(n_r):
        cost[j] = 0.0
    n_words = 0
    for i in range(info.shape[0]):
        n_words += info[i, 1]
    n_nodes = kids.shape[0]
    sets = np.empty((n_nodes, max(tip_planes.shape[1], 1)), dtype=np.uint64)
    meets = np.empty((n_nodes, max(n_words, 1)), dtype=np.uint64)
    miss, wp, wf, ev_j, ev_step = _weight_scratch(info)
    flags = np.empty((2, miss.shape[0]), dtype=np.uint64)
    span = np.zeros((64, 2), dtype=np.int64)
    length = np.empty(n_r)
    s = np.zeros(4, dtype=np.uint64)               # (no weight noise is drawn: r = 0)
    for i in range(info.shape[0]):
        if info[i, 5] == 0:
            continue
        _fitch(sets, meets, order, n_r, s_order, n_s, rpar, rkids, kids, sub, n_tips, tip_planes, info, i,
               flags[0], flags[1])
        integer, n_bits = _load_weights(s, i, 0.0, fixed_w, info, base_w, base_i, count, base_planes,
                                        gidx, groups, cdf, tab_off, noise, wp, wf, ev_j, ev_step)
        for j in range(n_r):
            length[j] = 0.0
        if integer:
            _plane_spans(wp, info[i, 1], n_bits, span)
            _add_costs_int(length, order, rpar, n_r, meets, info[i, 3], info[i, 1], wp, n_bits, span, 1.0, miss)
        else:
            _add_costs_float(length, order, rpar, n_r, meets, info[i, 3], info[i, 5], wf, 1.0)
        k = part_f[i, 0]
        n_sites = _n_sites(info, base_w, i)
        for j in range(1, n_r):
            v_approx = length[j] / n_sites + 0.0001
            cost[j] += -warp * math.log(1.0 / k - math.exp(-k / (k - 1.0) * v_approx) / k) * length[j]


@numba.njit(**JIT_OPTIONS)
def _choose(s, cost, order, n_r, marked, a):
    """(position of c, log P(back) - log P(forth)): c drawn among the marked candidates but a with
    weights exp(min - cost) (MrBayes' sums; each is at least 1, so no under/overflow)."""
    lo = math.inf
    for j in range(1, n_r):
        if marked[order[j]] and order[j] != a:
            lo = min(lo, cost[j])
    total = 0.0
    ja = 0
    for j in range(1, n_r):
        if order[j] == a:
            ja = j
        elif marked[order[j]]:
            total += math.exp(lo - cost[j])
    target = uniform(s) * total
    acc = 0.0
    jc = 0
    for j in range(1, n_r):
        if marked[order[j]] and order[j] != a:
            jc = j
            acc += math.exp(lo - cost[j])
            if acc > target:
                break
    log_r = cost[jc] - lo + math.log(total)
    lo2 = math.inf
    for j in range(1, n_r):
        if marked[order[j]] and j != jc:
            lo2 = min(lo2, cost[j])
    total2 = 0.0
    for j in range(1, n_r):
        if marked[order[j]] and j != jc:
            total2 += math.exp(lo2 - cost[j])
    return jc, log_r + lo2 - cost[ja] - math.log(total2)


@numba.njit(**JIT_OPTIONS)
def pars_spr_clock(s, parent, kids, depth, n_tips, min_depth, max_depth, locked, warp, tip_planes, info,
                   part_f, base_w, base_i, count, base_planes, gidx, groups, cdf, tab_off, noise, threads):
    """ParsSPRClock (Move_ParsSPRClock) in place; returns the log proposal ratio, -inf where MrBayes
    aborts (no prunable node, or the target branch shorter than 2 BRLENS_MIN) or u's new depth leaves
    [min_depth[u], max_depth[u]] (never for an unlocked u in MrBayes' settings). warp: the tuning; the
    rest: mbgpu.core.pars_spr.prepare_pars_data's arrays, n_states as MrBayes counts them (2 for standard
    data); their rate multipliers, weight-noise tables and `threads` are not used."""
    v = _draw_pruned(s, parent, depth, kids, locked, root_of(parent))
    if v < 0:
        return -math.inf
    return pars_spr_from(s, v, parent, kids, depth, n_tips, min_depth, max_depth, locked, warp, tip_planes, info,
                         part_f, base_w, base_i, count, base_planes, gidx, groups, cdf, tab_off, noise, threads)


@numba.njit(**JIT_OPTIONS)
def pick_pruned(s, parent, kids, depth, locked) -> int:
    """ParsSPRClock's subtree v (uniform among the prunable nodes), -1 if none."""
    return _draw_pruned(s, parent, depth, kids, locked, root_of(parent))


@numba.njit(**JIT_OPTIONS)
def pars_spr_from(s, v, parent, kids, depth, n_tips, min_depth, max_depth, locked, warp, tip_planes, info,
                  part_f, base_w, base_i, count, base_planes, gidx, groups, cdf, tab_off, noise, threads):
    """ParsSPRClock's move of the picked subtree v (pars_spr_clock's arguments)."""
    n_nodes = parent.shape[0]
    root = root_of(parent)
    u = parent[v]
    a = kids[u, 0] if kids[u, 1] == v else kids[u, 1]
    b = parent[u]
    old_window = depth[b] - max(depth[v], depth[a])
    rpar = parent.copy()
    rpar[a] = b
    rkids = kids.copy()
    _replace_child(rkids, b, u, a)
    order = np.empty(n_nodes, dtype=np.int64)
    n_r = _rest_order(rkids, root, order)
    s_order = np.empty(n_nodes, dtype=np.int64)
    n_s = _rest_order(kids, v, s_order)
    marked = np.zeros(n_nodes, dtype=np.bool_)
    _mark(marked, order, n_r, rpar, a, b, root, depth, v, locked, rkids)
    cost = np.empty(n_r)
    _costs(cost, order, n_r, s_order, n_s, rpar, rkids, kids, v, n_tips, warp, base_w[:0], tip_planes, info,
           part_f, base_w, base_i, count, base_planes, gidx, groups, cdf, tab_off, noise)
    jc, log_r = _choose(s, cost, order, n_r, marked, a)
    c = order[jc]
    d = rpar[c]
    window = depth[d] - max(depth[c], depth[v])
    if window - 2.0 * BRLENS_MIN <= 0.0:
        return -math.inf
    new_depth = depth[d] - uniform(s) * (window - 2.0 * BRLENS_MIN) - BRLENS_MIN
    if new_depth < min_depth[u] or new_depth > max_depth[u]:
        return -math.inf
    parent[a] = b                                  # cut u out, then put it on c's branch
    _replace_child(kids, b, u, a)
    _replace_child(kids, u, a, c)
    parent[c] = u
    parent[u] = d
    _replace_child(kids, d, c, u)
    depth[u] = new_depth
    return log_r + math.log((window - 2.0 * BRLENS_MIN) / (old_window - 2.0 * BRLENS_MIN))
