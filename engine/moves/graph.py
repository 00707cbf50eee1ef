"""Undirected views of a Tree for rewiring moves, and the way back to a parent array with stable ids.

Moves rewire an adjacency (node -> {neighbour: branch length}); `to_tree` re-directs it away from the
old root node, so node ids never change, the root stays the same trifurcating node, and only edges on
the path between the old and new attachment points change direction. `link`/`unlink` record the nodes
whose edges they change, so `to_tree` re-directs only those nodes and their old ancestors (everything
else hangs off unchanged) instead of walking the whole tree.
"""
from __future__ import annotations

import numpy as np

from mbgpu.tree import Tree


class Adjacency(list):
    """adj[v] = {w: length of edge v-w}; `touched`: the nodes whose edges link/unlink changed."""

    def __init__(self, items=()):
        super().__init__(items)
        self.touched: set[int] = set()


def undirected(tree: Tree) -> Adjacency:
    """adj[v] = {w: length of edge v-w} for every edge of the tree (nothing touched yet)."""
    adj = Adjacency([{} for _ in range(tree.n_nodes)])
    for v, p, length in zip(range(tree.n_nodes), tree.parent.tolist(), tree.brlen.tolist()):
        if p >= 0:
            adj[v][p] = length
            adj[p][v] = length
    return adj


def to_tree(template: Tree, adj) -> Tree:
    """Direct `adj` away from template's root node; ids and n_tips are kept.

    With an Adjacency, only the touched nodes and their ancestors in `template` are re-directed: any
    other node's subtree is intact and leaves only through its old parent edge, so its parent and
    branch length stay (and the re-directed nodes reach the root through each other).
    """
    root = template.root
    touched = getattr(adj, "touched", None)
    if touched is None:
        return _to_tree_full(template, adj)
    old_parent = template.parent.tolist()
    region = set()
    for v in touched:
        while v >= 0 and v not in region:
            region.add(v)
            v = old_parent[v]
    parent, brlen = template.parent.copy(), template.brlen.copy()
    if region:
        region.discard(root)
        stack = [root]
        while stack:
            v = stack.pop()
            for w, length in adj[v].items():
                if w in region:
                    region.discard(w)
                    parent[w] = v
                    brlen[w] = length
                    stack.append(w)
        assert not region, "rewired tree is disconnected"
    new = Tree(template.n_tips, parent, brlen)
    new._root = root
    return new


def _to_tree_full(template: Tree, adj) -> Tree:
    """to_tree for an adjacency that did not record its changes: one walk over the whole tree."""
    root, n = template.root, template.n_nodes
    parent, brlen = [-1] * n, [0.0] * n
    parent[root] = root                   # marks the visited nodes until the end
    stack = [root]
    while stack:
        v = stack.pop()
        for w, length in adj[v].items():
            if parent[w] == -1:
                parent[w] = v
                brlen[w] = length
                stack.append(w)
    assert -1 not in parent, "rewired tree is disconnected"
    parent[root] = -1
    return Tree(template.n_tips, np.array(parent, dtype=np.int64), np.array(brlen, dtype=np.float64))


def link(adj: Adjacency, a: int, b: int, length: float) -> None:
    adj[a][b] = length
    adj[b][a] = length
    _touch(adj, a, b)


def unlink(adj: Adjacency, a: int, b: int) -> float:
    length = adj[a].pop(b)
    del adj[b][a]
    _touch(adj, a, b)
    return length


def _touch(adj, a: int, b: int) -> None:
    touched = getattr(adj, "touched", None)
    if touched is not None:
        touched.add(a)
        touched.add(b)


def prune(adj: Adjacency, w: int, keep: int, ahead: int, behind: int) -> tuple[float, float]:
    """Remove degree-3 node w from between `ahead` and `behind` (w stays linked to `keep`).

    The joined edge ahead-behind takes the length of w-behind; returns (w-behind, w-ahead) lengths.
    """
    assert set(adj[w]) == {keep, ahead, behind}
    l_behind = unlink(adj, w, behind)
    l_ahead = unlink(adj, w, ahead)
    link(adj, ahead, behind, l_behind)
    return l_behind, l_ahead


def regraft(adj: Adjacency, w: int, x: int, y: int, len_xw: float) -> None:
    """Insert w into edge x-y: x-w gets `len_xw`, w-y keeps the old length of x-y."""
    old = unlink(adj, x, y)
    link(adj, x, w, len_xw)
    link(adj, w, y, old)


def check_tree(tree: Tree, lo: float = 0.0, hi: float = np.inf) -> None:
    """Assert an unrooted binary tree: trifurcating root, binary internal nodes, tips 0..n-1 leaves,
    connected, every branch length finite and within [lo, hi] (and > 0)."""
    n, kids = tree.n_tips, tree.children()
    assert tree.n_nodes == 2 * n - 2, "wrong node count"
    root = tree.root
    assert root >= n and len(kids[root]) == 3, "root must be an internal node with three children"
    for v in range(tree.n_nodes):
        if v < n:
            assert not kids[v], "tip %d has children" % v
        elif v != root:
            assert len(kids[v]) == 2, "internal node %d has %d children" % (v, len(kids[v]))
    assert tree.postorder().size == tree.n_nodes
    b = tree.brlen[tree.parent >= 0]
    assert np.all(np.isfinite(b)) and np.all(b > 0.0), "non-positive branch length"
    assert np.all(b >= lo) and np.all(b <= hi), "branch length out of bounds"


def dirty_nodes(old: Tree, new: Tree) -> np.ndarray:
    """Internal nodes of `new` whose conditional likelihoods must be recomputed after the proposal.

    A node is dirty when it gained or lost a child, a child's branch changed, or a child is dirty.
    Returned in postorder of `new` (children first), so it can be fed to the likelihood as is.
    """
    changed = np.flatnonzero((old.parent != new.parent) | (old.brlen != new.brlen))
    seeds = set(new.parent[changed].tolist()) | set(old.parent[changed].tolist())
    seeds.discard(-1)
    dirty: set[int] = set()
    for v in seeds:
        while v >= 0 and v not in dirty:
            dirty.add(v)
            v = int(new.parent[v])
    order = [v for v in new.postorder().tolist() if v in dirty and v >= new.n_tips]
    return np.array(order, dtype=np.int64)


def path_to_root(tree: Tree, v: int) -> list[int]:
    """v and its ancestors, ending at the root."""
    parent = tree.parent.tolist()
    out = [v]
    while parent[out[-1]] >= 0:
        out.append(parent[out[-1]])
    return out
