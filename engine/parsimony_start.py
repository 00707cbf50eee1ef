"""`mcmc starttree=parsimony`: MrBayes' start trees "using random addition sequences and parsimony".

Taxa join in a random order (the chain's own stream); each goes on the edge where it adds the least to
the Fitch length (ties drawn at random), found in one pass per addition from the Fitch sets below each
node and above it: inserting tip t on the edge above x costs the weight of the patterns where t shares
no state with x's edge set (D(x) and U(x) combined as Fitch combines). Every branch is 0.02 long, as
in MrBayes.
"""
from __future__ import annotations

import numpy as np

from mbgpu.tree import Tree, _tree_from_adjacency


def _fitch(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    both = a & b
    return np.where(both != 0, both, a | b)


def _edge_sets(adj: list[dict], root: int, masks: np.ndarray) -> tuple[dict, dict]:
    """For every node x but `root`: the Fitch set of the edge between x and its parent (tree rooted at
    `root`), from the sets below x (down pass) and above it (up pass); and every node's parent."""
    parent, order = {root: -1}, [root]
    for v in order:
        for w in adj[v]:
            if w not in parent:
                parent[w] = v
                order.append(w)
    kids = {v: [w for w in adj[v] if parent.get(w) == v] for v in order}
    down: dict[int, np.ndarray] = {}
    for v in reversed(order):
        if not kids[v]:
            down[v] = masks[v]
        else:
            acc = down[kids[v][0]]
            for w in kids[v][1:]:
                acc = _fitch(acc, down[w])
            down[v] = acc
    up: dict[int, np.ndarray] = {}
    edge: dict[int, np.ndarray] = {}
    for v in order[1:]:
        p = parent[v]
        others = [down[w] for w in kids[p] if w != v] + ([up[p]] if p in up else [])
        acc = others[0]
        for s in others[1:]:
            acc = _fitch(acc, s)
        up[v] = acc
        edge[v] = _fitch(down[v], acc)
    return edge, parent


def parsimony_tree(masks: np.ndarray, weights: np.ndarray, rng: np.random.Generator,
                   brlen: float = 0.02) -> Tree:
    """A stepwise-addition parsimony tree over the taxa (rows) of `masks` [ntax, patterns]."""
    n = masks.shape[0]
    order = rng.permutation(n).tolist()
    adj: list[dict] = [dict() for _ in range(2 * n - 2)]
    hub = n
    for t in order[:3]:
        adj[hub][t] = adj[t][hub] = brlen
    next_node = n + 1
    for t in order[3:]:
        edge, parent = _edge_sets(adj, hub, masks)
        nodes = list(edge)
        cost = np.array([float(((edge[x] & masks[t]) == 0) @ weights) for x in nodes])
        best = np.flatnonzero(cost <= cost.min() + 1e-9)
        x = nodes[int(best[rng.integers(best.size)])] if best.size > 1 else nodes[int(best[0])]
        p = parent[x]
        m = next_node
        next_node += 1
        del adj[x][p], adj[p][x]
        for a in (x, p, t):
            adj[m][a] = adj[a][m] = brlen
    return _tree_from_adjacency(n, adj, hub)

