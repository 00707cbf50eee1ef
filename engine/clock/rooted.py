"""Rooted clock trees as the arrays the clock priors read: `parent` int64[N] (-1 at the root), `depth`
float64[N] (node depth in substitution units = age x clock rate; extant tips exactly 0) and `n_tips`
(tips are nodes 0..n_tips-1, internal nodes n_tips..N-1), the node ids of mbgpu.tree.Tree and of the
compiled core's ChainTrees (engine/core/trees.py), whose rooted trees add one depth per node.
"""
from __future__ import annotations

import numba
import numpy as np

from mbgpu.jit import JIT_OPTIONS
from mbgpu.tree import Tree


@numba.njit(**JIT_OPTIONS)
def children(parent: np.ndarray) -> np.ndarray:
    """kids int64[N, 2]: each node's two children in increasing id order, -1 for a tip."""
    kids = np.full((parent.shape[0], 2), -1, dtype=np.int64)
    for v in range(parent.shape[0]):
        p = parent[v]
        if p >= 0:
            if kids[p, 0] < 0:
                kids[p, 0] = v
            else:
                assert kids[p, 1] < 0, "a rooted clock tree is bifurcating"
                kids[p, 1] = v
    return kids


@numba.njit(**JIT_OPTIONS)
def written_children(parent: np.ndarray, n_tips: int, tip_rank: np.ndarray) -> np.ndarray:
    """kids int64[N, 2] with each node's children ordered by the smallest `tip_rank` below them: given the
    tips' positions in a written Newick tree, the order it was written in (MrBayes' left, right)."""
    kids = children(parent)
    low = np.full(parent.shape[0], np.iinfo(np.int64).max, dtype=np.int64)
    low[:n_tips] = tip_rank[:n_tips]
    for v in internal_postorder(parent, n_tips):
        low[v] = min(low[kids[v, 0]], low[kids[v, 1]])
        if low[kids[v, 1]] < low[kids[v, 0]]:
            kids[v, 0], kids[v, 1] = kids[v, 1], kids[v, 0]
    return kids


@numba.njit(**JIT_OPTIONS)
def root_of(parent: np.ndarray) -> int:
    """The node whose parent is -1."""
    for v in range(parent.shape[0]):
        if parent[v] < 0:
            return v
    raise AssertionError("no root")


@numba.njit(**JIT_OPTIONS)
def internal_postorder(parent: np.ndarray, n_tips: int) -> np.ndarray:
    """Internal nodes, children before parents, the root last (MrBayes' intDownPass order of use)."""
    kids = children(parent)
    out = np.empty(parent.shape[0] - n_tips, dtype=np.int64)
    stack = np.empty(parent.shape[0], dtype=np.int64)
    stack[0] = root_of(parent)
    top = 1
    k = out.shape[0]
    while top > 0:                       # reverse preorder is a postorder
        top -= 1
        v = stack[top]
        if v >= n_tips:
            k -= 1
            out[k] = v
            stack[top] = kids[v, 0]
            stack[top + 1] = kids[v, 1]
            top += 2
    return out


def depths_of(tree: Tree, dated_tips=()) -> np.ndarray:
    """Node depths of a rooted tree with branch lengths, with MrBayes' arithmetic (SetNodeDepths): up the
    tree each internal node at the larger of (child depth + child branch length), tips at 0; then down
    from the root each node at (parent depth - its branch length), tips not in `dated_tips` at 0.
    (The rounding decides ties between a dated tip and an internal node in the uniform prior.)"""
    parent, brlen, n_tips = tree.parent, tree.brlen, tree.n_tips
    post = internal_postorder(parent, n_tips)
    kids = children(parent)
    depth = np.zeros(parent.shape[0])
    for v in post:
        depth[v] = max(depth[c] + brlen[c] for c in kids[v])
    dated = set(int(v) for v in dated_tips)
    for v in post[::-1]:                                       # preorder of internal nodes
        for c in kids[v]:
            depth[c] = 0.0 if c < n_tips and int(c) not in dated else depth[v] - brlen[c]
    return depth


@numba.njit(**JIT_OPTIONS)
def branch_lengths(parent: np.ndarray, depth: np.ndarray) -> np.ndarray:
    """Branch length above each node (parent depth - depth; 0 at the root), substitution units."""
    out = np.zeros(parent.shape[0])
    for v in range(parent.shape[0]):
        if parent[v] >= 0:
            out[v] = depth[parent[v]] - depth[v]
    return out


@numba.njit(**JIT_OPTIONS)
def unrooted_view_into(parent, lengths, t_parent, t_brlen):
    """The rooted tree without its root, into t_parent / t_brlen (N - 1 nodes): the root's first internal
    child becomes the root of a trifurcation, its sibling hangs below it on the two branches' summed
    length, and the last node id takes the old root's id (tips unchanged). The one rule of a clock tree's
    unrooted view (mbgpu.clock.chain_tree.ClockTree and the compiled core's rows)."""
    n = parent.shape[0]
    n_tips = (n + 1) // 2
    par = parent.copy()
    bl = lengths.copy()
    r = root_of(parent)
    a, b = -1, -1
    for v in range(n):
        if parent[v] == r:
            if a < 0:
                a = v
            else:
                b = v
    keep, other = (a, b) if a >= n_tips else (b, a)
    par[keep], par[other] = -1, keep
    bl[other] += bl[keep]
    bl[keep] = 0.0
    last = n - 1
    if r != last:
        par[r], bl[r] = par[last], bl[last]
        for v in range(n):
            if par[v] == last:
                par[v] = r
    for v in range(last):
        t_parent[v] = par[v]
        t_brlen[v] = bl[v]


@numba.njit(**JIT_OPTIONS)
def moved_lengths(parent, depth, old_parent, old_depth, brlen) -> bool:
    """MrBayes' branch lengths after a move, in place in `brlen` (the old lengths): only a branch whose ends
    moved (its node or parent changed, or either end's depth) gets its depth difference (0 at the root);
    the others keep theirs (a start tree's as written). Returns whether any branch moved."""
    any_moved = False
    for v in range(parent.shape[0]):
        p = parent[v]
        moved = p != old_parent[v] or depth[v] != old_depth[v]
        if p >= 0 and depth[p] != old_depth[max(old_parent[v], 0)]:
            moved = True
        if moved:
            brlen[v] = depth[p] - depth[v] if p >= 0 else 0.0
            any_moved = True
    return any_moved


@numba.njit(**JIT_OPTIONS)
def keep_written_order(written, kids):
    """Each node's written children (the .t file's order) where they are still its children, else its
    sorted children `kids`, in place."""
    for v in range(kids.shape[0]):
        a, b = written[v, 0], written[v, 1]
        if a > b:
            a, b = b, a
        if a != kids[v, 0] or b != kids[v, 1]:
            written[v, 0], written[v, 1] = kids[v, 0], kids[v, 1]
