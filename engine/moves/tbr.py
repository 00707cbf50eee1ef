"""ExtTBR(Tau,V): extending tree-bisection-reconnection (MrBayes Move_ExtTBR).

An internal branch u-v is drawn uniformly (redrawn while neither end can move). It is multiplied, and
each end slides away along its own side exactly as in ExtSPR (see spr.slide_node), carrying its ahead
branch (multiplied). One end, drawn 50/50 among the movable ones, takes its first step for sure; the
other moves only with probability p_ext per step. The reverse move retraces both paths; tips that
forced a start or a stop give the +-log(2 (1 - p_ext)) terms, per end that moved.
"""
from __future__ import annotations

import numpy as np

from mbgpu.moves.base import Move, MoveContext, Proposal, aborted, brlen_bounds, make_proposal, multiply
from mbgpu.moves.graph import link, to_tree, undirected
from mbgpu.moves.spr import can_slide, slide_node
from mbgpu.tree import Tree


class ExtTBR(Move):
    name = "ExtTBR(Tau,V)"
    weight = 5.0

    @classmethod
    def default_tuning(cls) -> dict[str, float]:
        return {"p_ext": 0.5, "lambda": 0.098}

    def propose(self, tree: Tree, rng: np.random.Generator, ctx: MoveContext) -> Proposal:
        n = tree.n_tips
        if n < 5:
            return aborted(tree)
        bounds = brlen_bounds(ctx.brlens_prior)
        adj = undirected(tree)
        internal = [v for v in range(n, tree.n_nodes) if tree.parent[v] >= 0]
        while True:
            v = internal[int(rng.random() * len(internal))]
            u = int(tree.parent[v])
            free = [w for w, s in ((u, v), (v, u)) if can_slide(adj, w, s, n)]
            if free:
                break
        first = free[0] if len(free) == 1 or rng.random() < 0.5 else free[1]
        new_len, log_h = multiply(adj[u][v], self.tuning["lambda"], rng, *bounds)
        link(adj, u, v, new_len)
        p_ext, lam = self.tuning["p_ext"], self.tuning["lambda"]
        for w, s in ((u, v), (v, u)):
            lh, _ = slide_node(adj, w, s, n, rng, p_ext, lam, bounds, forced=(w == first))
            log_h += lh
        return make_proposal(tree, to_tree(tree, adj), log_h)
