"""MrBayes 3.2.7a's topology moves on a rooted clock tree (proposal.c): ExtSprClock and NNIClock, with
the arguments and return value of every move in mbgpu.clock.tree_moves (the depth ranges are not read:
only fossil sampled ancestors, not handled here, would need them). The root keeps its node id.
"""
from __future__ import annotations

import math

from mbgpu.clock.rooted import root_of
from mbgpu.clock.param_moves import BRLENS_MIN
from mbgpu.core import rng


def _replace_child(kids, p, old, new) -> None:
    """Put `new` in `old`'s place among p's children, keeping the row in increasing id order."""
    if kids[p, 0] == old:
        kids[p, 0] = new
    else:
        kids[p, 1] = new
    if kids[p, 0] > kids[p, 1]:
        kids[p, 0], kids[p, 1] = kids[p, 1], kids[p, 0]


def _sister(kids, parent, v) -> int:
    """The other child of v's parent."""
    p = parent[v]
    return kids[p, 1] if kids[p, 0] == v else kids[p, 0]


def _blocked_up(a, v, depth, n_tips, locked) -> bool:
    """The extension cannot climb into a: a tip, a locked (constrained) node or a node younger than v."""
    return a < n_tips or locked[a] or depth[a] < depth[v] + BRLENS_MIN


def _spr_prunable(v, parent, locked, root) -> bool:
    """ExtSprClock may prune v: not the root nor a child of it, and its parent not locked."""
    return v != root and parent[v] != root and not locked[parent[v]]


def ext_spr_clock(s, parent, kids, depth, n_tips, min_depth, max_depth, locked, p_ext) -> float:
    """ExtSprClock (Move_ExtSPRClock): prune a subtree v with its parent u (v uniform among nodes that are
    not the root's children and whose parent is not locked), walk the attachment point from u's sister a
    one branch at a time (first step forced, each further step with probability p_ext; up a random child
    unless blocked, down unless the next node is the root or locked, turning up at a 50% chance), and
    regraft u uniformly on the final branch below its top node b and above both a and v. Returns
    ln(new window / old window) ± ln(2(1 - p_ext)) when only one of the walks starts or stops blocked."""
    root = root_of(parent)
    n_free = 0
    for w in range(parent.shape[0]):
        if _spr_prunable(w, parent, locked, root):
            n_free += 1
    if n_free == 0:
        return -math.inf
    k = rng.randint(s, n_free)
    v = -1
    for w in range(parent.shape[0]):
        if _spr_prunable(w, parent, locked, root):
            if k == 0:
                v = w
                break
            k -= 1
    u = parent[v]
    a = _sister(kids, parent, v)
    b = parent[u]
    old_window = depth[b] - max(depth[v], depth[a]) - 2.0 * BRLENS_MIN
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
            a = kids[b, 0] if rng.uniform(s) < 0.5 else kids[b, 1]
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
    new_window = depth[b] - max(depth[a], depth[v]) - 2.0 * BRLENS_MIN
    if new_window <= 0.0:
        return -math.inf
    depth[u] = depth[b] - BRLENS_MIN - rng.uniform(s) * new_window
    ratio = math.log(new_window / old_window)
    if not start_locked and stop_locked:
        ratio += math.log(2.0 * (1.0 - p_ext))
    elif start_locked and not stop_locked:
        ratio -= math.log(2.0 * (1.0 - p_ext))
    return ratio


def _nni_free(p, parent, kids, depth, n_tips, locked) -> bool:
    """NNIClock can swap a child of p with p's sister: p interior, not the root, not locked, and at
    least BRLENS_MIN older than its sister."""
    if p < n_tips or parent[p] < 0 or locked[p]:
        return False
    return depth[p] >= depth[_sister(kids, parent, p)] + BRLENS_MIN


def _count_nni_free(parent, kids, depth, n_tips, locked) -> int:
    n = 0
    for p in range(n_tips, parent.shape[0]):
        if _nni_free(p, parent, kids, depth, n_tips, locked):
            n += 1
    return n


def nni_clock(s, parent, kids, depth, n_tips, min_depth, max_depth, locked, tuning) -> float:
    """NNIClock (Move_NNIClock): pick a free interior branch p (uniformly; see _nni_free) and swap one of
    its children, chosen at random, with p's sister; depths do not change. Returns
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
    a = kids[p, 0] if rng.uniform(s) < 0.5 else kids[p, 1]
    u = parent[p]
    c = _sister(kids, parent, p)
    _replace_child(kids, p, a, c)
    _replace_child(kids, u, c, a)
    parent[a] = u
    parent[c] = p
    n_new = _count_nni_free(parent, kids, depth, n_tips, locked)
    return math.log(n_old / n_new)
