"""MrBayes 3.2.7a's topology moves on a rooted clock tree (proposal.c): ExtSprClock and NNIClock, with
the arguments and return value of every move in mbgpu.clock.tree_moves. Sampled ancestors of the
fossilized birth-death tree are handled as MrBayes does: ExtSprClock may move one (with its parent node,
within its calibration range `min_depth`/`max_depth`) but never the lineage below one, and neither move
climbs into a sampled ancestor's zero-length branch. The root keeps its node id.
"""
from __future__ import annotations

import math

import numba

from mbgpu.clock.rooted import root_of
from mbgpu.clock.limits import BRLENS_MIN, TIME_MIN
from mbgpu.clock.tree_moves import is_sampled_ancestor
from mbgpu.core import rng
from mbgpu.jit import JIT_OPTIONS


@numba.njit(**JIT_OPTIONS)
def _replace_child(kids, p, old, new) -> None:
    """Put `new` in `old`'s place among p's children, keeping the row in increasing id order."""
    if kids[p, 0] == old:
        kids[p, 0] = new
    else:
        kids[p, 1] = new
    if kids[p, 0] > kids[p, 1]:
        kids[p, 0], kids[p, 1] = kids[p, 1], kids[p, 0]


@numba.njit(**JIT_OPTIONS)
def _sister(kids, parent, v) -> int:
    """The other child of v's parent."""
    p = parent[v]
    return kids[p, 1] if kids[p, 0] == v else kids[p, 0]


@numba.njit(**JIT_OPTIONS)
def _blocked_up(a, v, depth, n_tips, locked) -> bool:
    """The extension cannot climb into a: a tip, a locked (constrained) node or a node younger than v."""
    return a < n_tips or locked[a] or depth[a] < depth[v] + BRLENS_MIN


@numba.njit(**JIT_OPTIONS)
def _spr_prunable(v, parent, kids, depth, n_tips, min_depth, max_depth, locked, root) -> bool:
    """ExtSprClock may prune v: not the root nor a child of it, its parent not locked, its sister not a
    sampled ancestor, and not itself a sampled ancestor of fixed age."""
    if v == root or parent[v] == root or locked[parent[v]]:
        return False
    if is_sampled_ancestor(_sister(kids, parent, v), parent, depth, n_tips):
        return False
    return not (is_sampled_ancestor(v, parent, depth, n_tips) and min_depth[v] >= max_depth[v])


@numba.njit(**JIT_OPTIONS)
def _up_child(s, kids, depth, a) -> int:
    """The child of a the walk climbs to: the one that is not a zero-length branch, else a random one."""
    if depth[a] - depth[kids[a, 0]] < TIME_MIN:
        return kids[a, 1]
    if depth[a] - depth[kids[a, 1]] < TIME_MIN:
        return kids[a, 0]
    return kids[a, 0] if rng.uniform(s) < 0.5 else kids[a, 1]


@numba.njit(**JIT_OPTIONS)
def _window(v, a, b, depth, ancestor, min_depth, max_depth):
    """(top, length) of the range u's depth is drawn from on the branch a-b: BRLENS_MIN inside both
    ends and above v, or for a sampled ancestor v inside its calibration range."""
    if ancestor:
        top = min(depth[b] - BRLENS_MIN, max_depth[v])
        return top, top - max(depth[a] + BRLENS_MIN, min_depth[v])
    return depth[b] - BRLENS_MIN, depth[b] - max(depth[a], depth[v]) - 2.0 * BRLENS_MIN


@numba.njit(**JIT_OPTIONS)
def pick_prunable(s, parent, kids, depth, n_tips, min_depth, max_depth, locked) -> int:
    """ExtSprClock's subtree v, uniform among _spr_prunable nodes; -1 when there is none."""
    root = root_of(parent)
    n_free = 0
    for w in range(parent.shape[0]):
        if _spr_prunable(w, parent, kids, depth, n_tips, min_depth, max_depth, locked, root):
            n_free += 1
    if n_free == 0:
        return -1
    k = rng.randint(s, n_free)
    for w in range(parent.shape[0]):
        if _spr_prunable(w, parent, kids, depth, n_tips, min_depth, max_depth, locked, root):
            if k == 0:
                return w
            k -= 1
    return -1


@numba.njit(**JIT_OPTIONS)
def ext_spr_clock(s, parent, kids, depth, n_tips, min_depth, max_depth, locked, p_ext) -> float:
    """ExtSprClock (Move_ExtSPRClock): prune a subtree v with its parent u (pick_prunable) and regraft it by
    spr_from. Returns its log proposal ratio."""
    v = pick_prunable(s, parent, kids, depth, n_tips, min_depth, max_depth, locked)
    if v < 0:
        return -math.inf
    return spr_from(s, v, parent, kids, depth, n_tips, min_depth, max_depth, locked, p_ext)


@numba.njit(**JIT_OPTIONS)
def spr_from(s, v, parent, kids, depth, n_tips, min_depth, max_depth, locked, p_ext) -> float:
    """ExtSprClock's move of the picked subtree v: prune v with its parent u, walk the attachment point
    from u's sister a one branch at a time (first step forced, each further step with probability p_ext;
    up a child (the one not a sampled ancestor, else a random one) unless blocked, down unless the next
    node is the root or locked, turning up at a 50% chance), and regraft u uniformly on the final branch
    below its top node b and above both a and v; a sampled ancestor v moves with u, inside its
    calibration range. Returns ln(new window / old window) ± ln(2(1 - p_ext)) when only one of the walks
    starts or stops blocked."""
    ancestor = is_sampled_ancestor(v, parent, depth, n_tips)
    u = parent[v]
    a = _sister(kids, parent, v)
    b = parent[u]
    old_window = _window(v, a, b, depth, ancestor, min_depth, max_depth)[1]
    _replace_child(kids, b, u, a)                 # cut u out
    parent[a] = b
    start_locked = _blocked_up(a, v, depth, n_tips, locked)
    up = False if start_locked else rng.uniform(s) < 0.5
    steps = 0
    while steps == 0 or rng.uniform(s) < p_ext:
        if up:
            if _blocked_up(a, v, depth, n_tips, locked):
                break
            b = a
            a = _up_child(s, kids, depth, b)
        elif rng.uniform(s) < 0.5 or parent[b] < 0 or locked[b]:
            up = True
            a = kids[b, 1] if kids[b, 0] == a else kids[b, 0]
        else:
            a = b
            b = parent[b]
        steps += 1
    stop_locked = up and _blocked_up(a, v, depth, n_tips, locked)
    _replace_child(kids, b, a, u)                 # regraft u on the branch a-b
    kids[u, 0], kids[u, 1] = min(a, v), max(a, v)
    parent[a] = u
    parent[u] = b
    top, new_window = _window(v, a, b, depth, ancestor, min_depth, max_depth)
    if new_window <= 0.0:
        return -math.inf
    depth[u] = top - rng.uniform(s) * new_window
    if ancestor:
        depth[v] = depth[u]
    ratio = math.log(new_window / old_window)
    if not start_locked and stop_locked:
        ratio += math.log(2.0 * (1.0 - p_ext))
    elif start_locked and not stop_locked:
        ratio -= math.log(2.0 * (1.0 - p_ext))
    return ratio


@numba.njit(**JIT_OPTIONS)
def _nni_free(p, parent, kids, depth, n_tips, locked) -> bool:
    """NNIClock can swap a child of p with p's sister: p interior, not the root, not locked, and at
    least BRLENS_MIN older than its sister."""
    if p < n_tips or parent[p] < 0 or locked[p]:
        return False
    return depth[p] >= depth[_sister(kids, parent, p)] + BRLENS_MIN


@numba.njit(**JIT_OPTIONS)
def _count_nni_free(parent, kids, depth, n_tips, locked) -> int:
    n = 0
    for p in range(n_tips, parent.shape[0]):
        if _nni_free(p, parent, kids, depth, n_tips, locked):
            n += 1
    return n


@numba.njit(**JIT_OPTIONS)
def nni_clock(s, parent, kids, depth, n_tips, min_depth, max_depth, locked, tuning) -> float:
    """NNIClock (Move_NNIClock): pick a free interior branch p (uniformly; see _nni_free) and swap one of
    its children (at random; the one that is not a sampled ancestor if p has one) with p's sister;
    depths do not change. Returns
    ln(free branches before / free branches after). `tuning` is unused (the move has none)."""
    n_old = _count_nni_free(parent, kids, depth, n_tips, locked)
    if n_old == 0:
        return -math.inf
    k = rng.randint(s, n_old)
    p = -1
    for w in range(n_tips, parent.shape[0]):
        if _nni_free(w, parent, kids, depth, n_tips, locked):
            if k == 0:
                p = w
                break
            k -= 1
    a = _up_child(s, kids, depth, p)             # never a sampled-ancestor child
    u = parent[p]
    c = _sister(kids, parent, p)
    _replace_child(kids, p, a, c)
    _replace_child(kids, u, c, a)
    parent[a] = u
    parent[c] = p
    n_new = _count_nni_free(parent, kids, depth, n_tips, locked)
    return math.log(n_old / n_new)
