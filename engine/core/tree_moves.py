"""Compiled topology moves of unrooted trees: NNI(Tau,V), MultNNI(Tau,V...), ExtSPR(Tau,V), ExtTBR(Tau,V).

Ports of mbgpu.moves.nni, mbgpu.moves.spr and mbgpu.moves.tbr (MrBayes Move_NNI, Move_ExtSPR,
Move_ExtTBR) with the graph helpers of mbgpu.moves.graph, acting on one chain's node arrays
(engine/core/trees.py) in place. Each returns the log Hastings ratio (log proposal ratio plus log
Jacobian), or -inf for an aborted move (the arrays are then in no particular state: the caller works on
a scratch copy). Node ids and the root node are kept, as in the Python moves.

Arguments: `parent`, `kids`, `brlen` (the tree, changed in place), `n_tips`, `s` (the chain's xoshiro
state, engine/core/rng.py); ExtSPR and ExtTBR also `tuning` float64[2] = (p_ext, lambda) and `lo`,
`hi`, the branch-length limits (mbgpu.moves.base.brlen_bounds of the brlens prior).
`ext_spr_detail` is ext_spr also returning the moved subtree and attachment node (the Python move's
`detail`, used by the tests).

The extending moves rewire an undirected view of the tree (`nbr` int32[N, 3] neighbours, -1 where
empty, `nln` float64[N, 3] the lengths of those edges), as the Python moves rewire their adjacency
dicts; every node whose edges change is marked together with its old ancestors (`mark`), and only the
marked nodes are re-directed away from the root at the end (graph.to_tree), everything else hanging off
unchanged.
"""
from __future__ import annotations

import math

import numba
import numpy as np

from mbgpu.core.rng import uniform
from mbgpu.core.branch_moves import multiply
from mbgpu.core.trees import sort_kids
from mbgpu.jit import JIT_OPTIONS

EXT_SPR_TUNING = np.array([0.5, 0.098])     # (p_ext, lambda) of ExtSPR(Tau,V), as mbgpu.moves.spr
EXT_TBR_TUNING = np.array([0.5, 0.098])     # (p_ext, lambda) of ExtTBR(Tau,V), as mbgpu.moves.tbr


@numba.njit(**JIT_OPTIONS)
def _replace_kid(kids, v, old, new):
    for j in range(3):
        if kids[v, j] == old:
            kids[v, j] = new
            return


@numba.njit(**JIT_OPTIONS)
def nni(parent, kids, brlen, n_tips, s):
    """NNI(Tau,V): a uniform internal branch u-v (u a non-root internal node, v its parent); one of u's
    two children, drawn 50/50, is swapped with the lowest-numbered of v's other neighbours; subtrees
    keep their branches (when that neighbour is v's parent, u and v change places on the path: u
    takes v's old branch, v u's). log Hastings = 0; aborted (-inf) below 4 taxa."""
    u, v, a, c = nni_draw(parent, kids, n_tips, s)
    if u < 0:
        return -math.inf
    nni_swap(parent, kids, brlen, u, v, a, c)
    return 0.0


@numba.njit(**JIT_OPTIONS)
def mult_nni(parent, kids, brlen, n_tips, s, r0, rows):
    """MultNNI(Tau,V...) (mbgpu.moves.nni.MultNNI): one NNI drawn on the first tree t with rows[t] (row
    r0 + t of these arrays) and applied to every such tree, each keeping its own branch lengths (the
    trees share one topology and node ids). log Hastings = 0; aborted (-inf) below 4 taxa."""
    first = 0
    while not rows[first]:
        first += 1
    u, v, a, c = nni_draw(parent[r0 + first], kids[r0 + first], n_tips, s)
    if u < 0:
        return -math.inf
    for t in range(rows.shape[0]):
        if rows[t]:
            nni_swap(parent[r0 + t], kids[r0 + t], brlen[r0 + t], u, v, a, c)
            sort_kids(kids[r0 + t])
    return 0.0


@numba.njit(**JIT_OPTIONS)
def nni_draw(parent, kids, n_tips, s):
    """NNI's draw (u, v, a, c): the branch u-v and the subtrees a (u's child) and c (v's other neighbour)
    it exchanges (kids in increasing order, as states keep them); u = -1 below 4 taxa (no draw)."""
    n_nodes = parent.shape[0]
    count = n_nodes - n_tips - 1                  # internal branches
    if count < 1:
        return -1, -1, -1, -1
    root = 0
    for v in range(n_tips, n_nodes):
        if parent[v] < 0:
            root = v
            break
    u = n_tips + int(uniform(s) * count)
    if u >= n_tips + count:
        u = n_tips + count - 1
    if u >= root:
        u += 1
    v = parent[u]
    a0, a1 = -1, -1                               # u's two children
    for j in range(3):
        k = kids[u, j]
        if k >= 0:
            if a0 < 0:
                a0 = k
            else:
                a1 = k
    a = a0 if uniform(s) < 0.5 else a1
    c = parent[v]                                 # the lowest of v's neighbours but u
    for j in range(3):
        k = kids[v, j]
        if k >= 0 and k != u and (c < 0 or k < c):
            c = k
    return u, v, a, c


@numba.njit(**JIT_OPTIONS)
def nni_swap(parent, kids, brlen, u, v, a, c):
    """Exchange subtrees a and c of nni_draw in place (mbgpu.moves.nni.swapped)."""
    parent[a] = v
    if parent[c] == v:                            # c a child of v: exchange a and c
        parent[c] = u
        _replace_kid(kids, u, a, c)
        _replace_kid(kids, v, c, a)
    else:                                         # c is v's parent: c - u - v, a below v
        bu, bv = brlen[u], brlen[v]
        parent[u], brlen[u] = c, bv
        parent[v], brlen[v] = u, bu
        _replace_kid(kids, c, v, u)
        _replace_kid(kids, u, a, v)
        _replace_kid(kids, v, u, a)


# ---------------------------------------------------------------------- the undirected view (graph.py)
@numba.njit(**JIT_OPTIONS)
def _undirected(parent, kids, brlen, nbr, nln):
    """nbr[v] = v's neighbours (-1 padded), nln[v] the lengths of those edges (graph.undirected)."""
    for v in range(parent.shape[0]):
        j = 0
        p = parent[v]
        if p >= 0:
            nbr[v, 0] = p
            nln[v, 0] = brlen[v]
            j = 1
        for i in range(3):
            c = kids[v, i]
            if c >= 0:
                nbr[v, j] = c
                nln[v, j] = brlen[c]
                j += 1
        while j < 3:
            nbr[v, j] = -1
            nln[v, j] = 0.0
            j += 1


@numba.njit(**JIT_OPTIONS)
def _scratch(n_nodes):
    """nbr (N, 3), mark (N, zeroed) and a DFS stack (N) in one int32 block; nln (N, 3) float64."""
    block = np.empty(5 * n_nodes, np.int32)
    mark = block[3 * n_nodes:4 * n_nodes]
    mark[:] = 0
    return (block[:3 * n_nodes].reshape((n_nodes, 3)), np.empty((n_nodes, 3), np.float64), mark,
            block[4 * n_nodes:])


@numba.njit(**JIT_OPTIONS)
def _touch(parent, mark, v):
    """Mark v and its old ancestors (the region to_tree re-directs); parent still holds the old tree."""
    while v >= 0 and mark[v] == 0:
        mark[v] = 1
        v = parent[v]


@numba.njit(**JIT_OPTIONS)
def _slot(nbr, a, b):
    for j in range(3):
        if nbr[a, j] == b:
            return j
    return -1


@numba.njit(**JIT_OPTIONS)
def _length(nbr, nln, a, b):
    return nln[a, _slot(nbr, a, b)]


@numba.njit(**JIT_OPTIONS)
def _set_half(nbr, nln, a, b, length):
    j = _slot(nbr, a, b)
    if j < 0:
        j = _slot(nbr, a, -1)
    nbr[a, j] = b
    nln[a, j] = length


@numba.njit(**JIT_OPTIONS)
def _link(parent, nbr, nln, mark, a, b, length):
    """Edge a-b with `length` (added, or its length set)."""
    _set_half(nbr, nln, a, b, length)
    _set_half(nbr, nln, b, a, length)
    _touch(parent, mark, a)
    _touch(parent, mark, b)


@numba.njit(**JIT_OPTIONS)
def _unlink(parent, nbr, nln, mark, a, b):
    """Remove edge a-b; returns its length."""
    j = _slot(nbr, a, b)
    length = nln[a, j]
    nbr[a, j] = -1
    nbr[b, _slot(nbr, b, a)] = -1
    _touch(parent, mark, a)
    _touch(parent, mark, b)
    return length


@numba.njit(**JIT_OPTIONS)
def _to_tree(parent, kids, brlen, nbr, nln, mark, stack, root):
    """Re-direct the marked region away from the root (graph.to_tree): parent, brlen and kids of the
    marked nodes are rewritten from nbr/nln; the others keep theirs. Clears the marks."""
    if mark[root] == 0:
        return
    mark[root] = 0
    stack[0] = root
    top = 1
    while top > 0:
        top -= 1
        v = stack[top]
        p = parent[v]
        k = 0
        for j in range(3):
            w = nbr[v, j]
            if w < 0 or w == p:
                continue
            kids[v, k] = w
            k += 1
            if mark[w] != 0:
                mark[w] = 0
                parent[w] = v
                brlen[w] = nln[v, j]
                stack[top] = w
                top += 1
        while k < 3:
            kids[v, k] = -1
            k += 1


@numba.njit(**JIT_OPTIONS)
def _can_slide(nbr, w, keep, n_tips):
    """w can move away from `keep`: w is internal and one of its other neighbours is internal."""
    if w < n_tips:
        return False
    for j in range(3):
        z = nbr[w, j]
        if z >= n_tips and z != keep:
            return True
    return False


@numba.njit(**JIT_OPTIONS)
def _choose_direction(nbr, w, keep, n_tips, s):
    """(behind, ahead, start_constrained): ahead is internal when exactly one of w's other neighbours
    is, else drawn 50/50 (constrained when both are tips)."""
    o0, o1 = -1, -1
    for j in range(3):
        z = nbr[w, j]
        if z >= 0 and z != keep:
            if o0 < 0:
                o0 = z
            else:
                o1 = z
    internal = (o0 >= n_tips) + (o1 >= n_tips)
    if internal == 1:
        if o0 >= n_tips:
            return o1, o0, True
        return o0, o1, True
    if uniform(s) < 0.5:
        return o1, o0, internal == 0
    return o0, o1, internal == 0


@numba.njit(**JIT_OPTIONS)
def _walk(nbr, behind, ahead, n_tips, s, p_ext, forced):
    """Slide along edges from behind->ahead: a forced first step, then each with probability p_ext,
    into one of the two edges ahead, until a tip; returns (x, y, steps, stop_constrained)."""
    x, y, steps = behind, ahead, 0
    while forced or uniform(s) < p_ext:
        forced = False
        if y < n_tips:
            break
        z0, z1 = -1, -1
        for j in range(3):
            z = nbr[y, j]
            if z >= 0 and z != x:
                if z0 < 0:
                    z0 = z
                else:
                    z1 = z
        x = y
        y = z0 if uniform(s) < 0.5 else z1
        steps += 1
    return x, y, steps, y < n_tips


@numba.njit(**JIT_OPTIONS)
def _constraint_log_ratio(start_c, stop_c, p_ext):
    """+-log(2 (1 - p_ext)) when only one end of the path was forced by a tip."""
    if stop_c and not start_c:
        return math.log(2.0 * (1.0 - p_ext))
    if start_c and not stop_c:
        return -math.log(2.0 * (1.0 - p_ext))
    return 0.0


@numba.njit(**JIT_OPTIONS)
def _slide_node(parent, nbr, nln, mark, w, keep, n_tips, s, p_ext, lam, lo, hi, forced):
    """Prune w from between `behind` and `ahead` (kept on `keep`; the joined edge takes the length of
    w-behind), multiply the carried length w-ahead, slide and regraft into x-y (x-w: the carried length,
    w-y: the old x-y length). With zero steps w goes back in place with its ahead edge multiplied.
    Returns (log Hastings, steps)."""
    behind, ahead, start_c = _choose_direction(nbr, w, keep, n_tips, s)
    l_behind = _unlink(parent, nbr, nln, mark, w, behind)
    carried = _unlink(parent, nbr, nln, mark, w, ahead)
    _link(parent, nbr, nln, mark, ahead, behind, l_behind)
    new_carried, log_h = multiply(s, carried, lam, lo, hi)
    x, y, steps, stop_c = _walk(nbr, behind, ahead, n_tips, s, p_ext, forced)
    if steps == 0:                                # back in place: w-behind as before, w-ahead multiplied
        l_behind = _unlink(parent, nbr, nln, mark, behind, ahead)
        _link(parent, nbr, nln, mark, w, behind, l_behind)
        _link(parent, nbr, nln, mark, w, ahead, new_carried)
        return log_h, 0
    old = _unlink(parent, nbr, nln, mark, x, y)   # regraft into x-y
    _link(parent, nbr, nln, mark, x, w, new_carried)
    _link(parent, nbr, nln, mark, w, y, old)
    return log_h + _constraint_log_ratio(start_c, stop_c, p_ext), steps


@numba.njit(**JIT_OPTIONS)
def _root_of(parent, n_tips):
    for v in range(n_tips, parent.shape[0]):
        if parent[v] < 0:
            return v
    return -1


# ---------------------------------------------------------------------- ExtSPR
@numba.njit(**JIT_OPTIONS)
def ext_spr_detail(parent, kids, brlen, n_tips, s, tuning, lo, hi):
    """ext_spr, returning (log Hastings, subtree, attach): the moved attachment node `attach` carried
    the subtree on the side of its neighbour `subtree` (the Python move's detail); (-inf, -1, -1) when
    aborted."""
    if n_tips < 4:
        return -math.inf, -1, -1
    p_ext, lam = tuning[0], tuning[1]
    n_nodes = parent.shape[0]
    root = _root_of(parent, n_tips)
    nbr, nln, mark, stack = _scratch(n_nodes)
    _undirected(parent, kids, brlen, nbr, nln)
    while True:                                   # a uniform branch v-u, redrawn while neither end moves
        v = int(uniform(s) * (n_nodes - 1))
        if v >= n_nodes - 1:
            v = n_nodes - 2
        if v >= root:
            v += 1
        u = parent[v]
        move_u = _can_slide(nbr, u, v, n_tips)
        move_v = _can_slide(nbr, v, u, n_tips)
        if move_u or move_v:
            break
    if move_u and (not move_v or uniform(s) < 0.5):
        w, sub = u, v
    else:
        w, sub = v, u
    new_len, log_h = multiply(s, _length(nbr, nln, w, sub), lam, lo, hi)
    _link(parent, nbr, nln, mark, w, sub, new_len)
    lh, _ = _slide_node(parent, nbr, nln, mark, w, sub, n_tips, s, p_ext, lam, lo, hi, True)
    _to_tree(parent, kids, brlen, nbr, nln, mark, stack, root)
    return log_h + lh, sub, w


@numba.njit(**JIT_OPTIONS)
def ext_spr(parent, kids, brlen, n_tips, s, tuning, lo, hi):
    """ExtSPR(Tau,V): a uniform branch; one of its movable ends w (internal, with an internal neighbour
    besides the other end; 50/50 when both are) carries the subtree behind it along an extending path
    (one forced step, then each with probability p_ext = tuning[0]); the branch to the subtree and the
    carried branch are multiplied with lambda = tuning[1], reflected into [lo, hi]. log Hastings: the
    two log(new/old) plus +-log(2 (1 - p_ext)) when a tip forced only the start or only the stop.
    Aborted (-inf) below 4 taxa."""
    return ext_spr_detail(parent, kids, brlen, n_tips, s, tuning, lo, hi)[0]


# ---------------------------------------------------------------------- ExtTBR
@numba.njit(**JIT_OPTIONS)
def ext_tbr(parent, kids, brlen, n_tips, s, tuning, lo, hi):
    """ExtTBR(Tau,V): a uniform internal branch u-v (redrawn while neither end can move), multiplied;
    each end slides along its own side as in ExtSPR carrying its ahead branch (multiplied): one end,
    drawn 50/50 among the movable ones, takes its first step for sure, the other moves only with
    probability p_ext per step (and goes back in place with its ahead branch multiplied when it takes
    none). tuning = (p_ext, lambda). Aborted (-inf) below 5 taxa."""
    if n_tips < 5:
        return -math.inf
    p_ext, lam = tuning[0], tuning[1]
    n_nodes = parent.shape[0]
    root = _root_of(parent, n_tips)
    nbr, nln, mark, stack = _scratch(n_nodes)
    _undirected(parent, kids, brlen, nbr, nln)
    count = n_nodes - n_tips - 1                  # internal branches: non-root internal nodes
    while True:
        v = n_tips + int(uniform(s) * count)
        if v >= n_tips + count:
            v = n_tips + count - 1
        if v >= root:
            v += 1
        u = parent[v]
        move_u = _can_slide(nbr, u, v, n_tips)
        move_v = _can_slide(nbr, v, u, n_tips)
        if move_u or move_v:
            break
    first = u if move_u and (not move_v or uniform(s) < 0.5) else v
    new_len, log_h = multiply(s, brlen[v], lam, lo, hi)
    _link(parent, nbr, nln, mark, u, v, new_len)
    lh, _ = _slide_node(parent, nbr, nln, mark, u, v, n_tips, s, p_ext, lam, lo, hi, first == u)
    log_h += lh
    lh, _ = _slide_node(parent, nbr, nln, mark, v, u, n_tips, s, p_ext, lam, lo, hi, first == v)
    log_h += lh
    _to_tree(parent, kids, brlen, nbr, nln, mark, stack, root)
    return log_h
