"""Trees as node arrays, the form the compiled core keeps for every chain.

Node ids are those of mbgpu.tree.Tree: tips 0..n_tips-1, internal nodes n_tips..2 n_tips - 2. One
chain's tree is three arrays: `parent` int32[N] (-1 at the root), `kids` int32[N, 3] (a node's children
in any order, -1 padded; tips have none, the root of an unrooted tree three, other internal nodes
two) and `brlen` float64[N] (the branch above each node; 0 at the root). Moves keep all three
consistent, keep the root node and keep every node id.
"""
from __future__ import annotations

import numba
import numpy as np

from mbgpu.jit import JIT_OPTIONS
from mbgpu.tree import Tree


def to_arrays(tree: Tree) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(parent int32, kids int32 (N, 3) with children in increasing order, brlen float64) of a Tree."""
    parent = np.ascontiguousarray(tree.parent, dtype=np.int32)
    kids = np.full((parent.size, 3), -1, dtype=np.int32)
    fill_kids(parent, kids)
    return parent, kids, np.array(tree.brlen, dtype=np.float64)


def from_arrays(n_tips: int, parent: np.ndarray, brlen: np.ndarray) -> Tree:
    """The Tree of one chain's arrays (copies)."""
    return Tree(n_tips, np.array(parent, dtype=np.int64), np.array(brlen, dtype=np.float64))


class ChainTrees:
    """Every chain's tree as arrays (row, node), current and proposed (`_p`): one row per chain, or with
    R trees per chain (`unlink topology`) chain c's tree t in row c R + t."""

    def __init__(self, trees):
        if trees is None:                    # of_tree's view
            return
        got = [to_arrays(t) for t in trees]
        self.parent = np.stack([g[0] for g in got])
        self.kids = np.stack([g[1] for g in got])
        self.brlen = np.stack([g[2] for g in got])
        self.parent_p, self.kids_p, self.brlen_p = self.parent.copy(), self.kids.copy(), self.brlen.copy()

    def of_tree(self, t: int, n_trees: int) -> "ChainTrees":
        """Tree t of every chain of R = n_trees, one row per chain: views of these arrays (itself when R
        is 1), what a pattern set on tree t computes from."""
        if n_trees == 1:
            return self
        view = ChainTrees(None)
        for name in ("parent", "kids", "brlen", "parent_p", "kids_p", "brlen_p"):
            setattr(view, name, getattr(self, name)[t::n_trees])
        return view


@numba.njit(**JIT_OPTIONS)
def fill_kids(parent, kids):
    """kids from parent: each node's children in increasing node order, -1 padded."""
    kids[:] = -1
    for v in range(parent.shape[0]):
        p = parent[v]
        if p >= 0:
            j = 0
            while kids[p, j] >= 0:
                j += 1
            kids[p, j] = v


@numba.njit(**JIT_OPTIONS)
def sort_kids(kids):
    """Every node's children in increasing order, -1 padding last (what to_arrays gives): the form a
    chain's accepted state is kept in, so that moves choosing a child by position draw the same from
    a state restored from a checkpoint as from the state in memory."""
    for v in range(kids.shape[0]):
        n = 0
        for j in range(3):                   # the children first, in insertion order
            if kids[v, j] >= 0:
                kids[v, n] = kids[v, j]
                n += 1
        for j in range(n, 3):
            kids[v, j] = -1
        for i in range(1, n):                # then sorted (at most three)
            x, j = kids[v, i], i
            while j > 0 and kids[v, j - 1] > x:
                kids[v, j] = kids[v, j - 1]
                j -= 1
            kids[v, j] = x


@numba.njit(**JIT_OPTIONS)
def root_of(parent):
    """The node without a parent."""
    for v in range(parent.shape[0]):
        if parent[v] < 0:
            return v
    return -1


@numba.njit(**JIT_OPTIONS)
def n_kids(kids, v):
    """How many children v has."""
    n = 0
    while n < 3 and kids[v, n] >= 0:
        n += 1
    return n


@numba.njit(**JIT_OPTIONS)
def is_consistent(parent, kids, n_tips):
    """True when kids and parent describe the same tree: tips childless, one root with 3 children
    (unrooted) or 2 (rooted), other internal nodes 2, every node reaching the root."""
    n = parent.shape[0]
    roots = 0
    for v in range(n):
        k = n_kids(kids, v)
        if v < n_tips and k != 0:
            return False
        for j in range(k):
            if parent[kids[v, j]] != v:
                return False
        if parent[v] < 0:
            roots += 1
            if v < n_tips or k < 2:
                return False
        elif v >= n_tips and k != 2:
            return False
        elif parent[v] >= 0:
            p, found = parent[v], False
            for j in range(3):
                found |= kids[p, j] == v
            if not found:
                return False
    if roots != 1:
        return False
    for v in range(n):                      # no cycles: every node reaches the root in < n steps
        u, steps = v, 0
        while parent[u] >= 0 and steps < n:
            u = parent[u]
            steps += 1
        if steps >= n:
            return False
    return True
