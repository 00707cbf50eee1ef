"""NNI(Tau,V): nearest-neighbour interchange on an unrooted tree (MrBayes Move_NNI).

An internal branch u-v is drawn uniformly; one of u's two other subtrees is swapped with a fixed one of
v's other subtrees, giving each of the two NNI neighbours probability 1/2. Subtrees keep their branch
lengths, so the move is symmetric: log Hastings = 0.
"""
from __future__ import annotations

import numpy as np

from engine.moves.base import Move, MoveContext, Proposal, aborted, make_proposal
from engine.moves.graph import link, to_tree, undirected, unlink
from engine.tree import Tree


class NNI(Move):
    name = "NNI(Tau,V)"
    weight = 5.0

    def propose(self, tree: Tree, rng: np.random.Generator, ctx: MoveContext) -> Proposal:
        n = tree.n_tips
        internal = [v for v in range(n, tree.n_nodes) if tree.parent[v] >= 0]
        if not internal:
            return aborted(tree)
        u = internal[int(rng.random() * len(internal))]
        v = int(tree.parent[u])
        adj = undirected(tree)
        a_side = sorted(w for w in adj[u] if w != v)
        c_side = sorted(w for w in adj[v] if w != u)
        a = a_side[0] if rng.random() < 0.5 else a_side[1]
        c = c_side[0]
        la, lc = unlink(adj, u, a), unlink(adj, v, c)
        link(adj, u, c, lc)
        link(adj, v, a, la)
        return make_proposal(tree, to_tree(tree, adj), 0.0)
