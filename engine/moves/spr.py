"""ExtSPR(Tau,V): extending subtree-prune-and-regraft (MrBayes Move_ExtSPR, Lakner et al. 2008).

A branch s-w is drawn uniformly; w (internal, with at least one internal neighbour besides s) is the
attachment node that moves, carrying the subtree on s's side. w is pruned from between `behind` and
`ahead` (the joined branch keeps the length of w-behind), then slides away: one step is forced, and
each further step is taken with probability p_ext, choosing one of the two branches ahead at random,
until it fails or reaches a tip. w is inserted there: behind-w gets the carried length w-ahead
(multiplied), w-ahead keeps the old length of the target branch; the branch s-w is multiplied too.
The reverse move retraces the path, so the topology part of the Hastings ratio is 1 except when the
start or the stop was forced by a tip: +-log(2 (1 - p_ext)).
"""
from __future__ import annotations

import math

import numpy as np

from mbgpu.moves.base import Move, MoveContext, Proposal, aborted, brlen_bounds, make_proposal, multiply
from mbgpu.moves.graph import Adjacency, link, prune, regraft, to_tree, undirected, unlink
from mbgpu.tree import Tree


def can_slide(adj: Adjacency, w: int, keep: int, n_tips: int) -> bool:
    """w can move away from `keep`: w is internal and one of its other neighbours is internal."""
    return w >= n_tips and any(z >= n_tips for z in adj[w] if z != keep)


def choose_direction(adj: Adjacency, w: int, keep: int, n_tips: int,
                     rng: np.random.Generator) -> tuple[int, int, bool]:
    """(behind, ahead, start_constrained): ahead is internal when possible, else drawn 50/50."""
    others = [z for z in adj[w] if z != keep]
    internal = [z for z in others if z >= n_tips]
    if len(internal) == 1:
        ahead = internal[0]
        return next(z for z in others if z != ahead), ahead, True
    i = 0 if rng.random() < 0.5 else 1
    return others[1 - i], others[i], len(internal) == 0


def walk(adj: Adjacency, behind: int, ahead: int, n_tips: int, rng: np.random.Generator,
         p_ext: float, forced: bool) -> tuple[int, int, int, bool]:
    """Slide along edges from behind->ahead; returns (x, y, steps, stop_constrained) for edge x-y."""
    x, y, steps = behind, ahead, 0
    while forced or rng.random() < p_ext:
        forced = False
        if y < n_tips:
            break
        nxt = [z for z in adj[y] if z != x]
        x, y = y, nxt[0] if rng.random() < 0.5 else nxt[1]
        steps += 1
    return x, y, steps, y < n_tips


def constraint_log_ratio(start_constrained: bool, stop_constrained: bool, p_ext: float) -> float:
    """Correction when only one end of the path was forced by a tip (MrBayes' log(2 (1 - p_ext)))."""
    if stop_constrained and not start_constrained:
        return math.log(2.0 * (1.0 - p_ext))
    if start_constrained and not stop_constrained:
        return -math.log(2.0 * (1.0 - p_ext))
    return 0.0


def slide_node(adj: Adjacency, w: int, keep: int, n_tips: int, rng: np.random.Generator,
               p_ext: float, lam: float, bounds: tuple[float, float], forced: bool) -> tuple[float, int]:
    """Prune w (kept attached to `keep`), slide it and regraft; returns (log Hastings, steps).

    With zero steps (possible only when not forced) w goes back in place with its ahead branch
    multiplied, as MrBayes' ExtTBR does.
    """
    behind, ahead, start_c = choose_direction(adj, w, keep, n_tips, rng)
    _, carried = prune(adj, w, keep, ahead, behind)
    new_carried, log_h = multiply(carried, lam, rng, *bounds)
    x, y, steps, stop_c = walk(adj, behind, ahead, n_tips, rng, p_ext, forced)
    if steps == 0:
        l_behind = unlink(adj, behind, ahead)
        link(adj, w, behind, l_behind)
        link(adj, w, ahead, new_carried)
        return log_h, 0
    regraft(adj, w, x, y, new_carried)
    return log_h + constraint_log_ratio(start_c, stop_c, p_ext), steps


class ExtSPR(Move):
    name = "ExtSPR(Tau,V)"
    weight = 5.0

    @classmethod
    def default_tuning(cls) -> dict[str, float]:
        return {"p_ext": 0.5, "lambda": 0.098}

    def propose(self, tree: Tree, rng: np.random.Generator, ctx: MoveContext) -> Proposal:
        n = tree.n_tips
        if n < 4:
            return aborted(tree)
        bounds = brlen_bounds(ctx.brlens_prior)
        adj = undirected(tree)
        edges = np.flatnonzero(tree.parent >= 0)
        while True:
            v = int(edges[int(rng.random() * edges.size)])
            u = int(tree.parent[v])
            movable = [(w, s) for w, s in ((u, v), (v, u)) if can_slide(adj, w, s, n)]
            if movable:
                break
        w, s = movable[0] if len(movable) == 1 or rng.random() < 0.5 else movable[1]
        new_len, log_h = multiply(adj[w][s], self.tuning["lambda"], rng, *bounds)
        link(adj, w, s, new_len)
        lh, _ = slide_node(adj, w, s, n, rng, self.tuning["p_ext"], self.tuning["lambda"], bounds, True)
        prop = make_proposal(tree, to_tree(tree, adj), log_h + lh)
        prop.detail = {"subtree": s, "attach": w}
        return prop
