"""ParsSPR(Tau,V): SPR with the regraft point drawn by parsimony (MrBayes Move_ParsSPR).

A branch u-s (not the anchor tip's branch) is drawn uniformly; the subtree S on s's side (away from the
anchor) is pruned with its attachment node u, leaving the rest R with u's two other branches joined.
Every other branch x-y of R is a candidate; its cost is the weighted number of patterns where S's
downpass set misses the union of the final Fitch sets at x and y, with pattern weights randomly
perturbed (each site -1 or +1 with probability r) and each partition's cost scaled by
-warp * log(1/k - exp(-k/(k-1) v_t rate)/k). A candidate is drawn with probability exp(-cost)/sum.
The reverse move prunes the same S from the same R, so log Hastings = log P(back) - log P(forth)
computed with the same perturbed weights. Lengths: the joined branch keeps u's length on the far side,
u carries its near-side branch to the near end x of the target (x-u), u-y keeps x-y's length; then
the joined branch, x-u and u-y are multiplied (lambda).
"""
from __future__ import annotations

import math

import numpy as np

from mbgpu.moves.base import Move, MoveContext, Proposal, aborted, brlen_bounds, make_proposal, multiply
from mbgpu.moves.graph import Adjacency, link, to_tree, undirected, unlink
from mbgpu.moves import bitplanes
from mbgpu.moves.bitplanes import PlaneOps
from mbgpu.moves.parsimony import downpass, final_sets, infer_n_states, missed_weights, rooted_children
from mbgpu.moves.weight_noise import WeightNoise
from mbgpu.tree import Tree


def planes_states(planes: np.ndarray | None, masks) -> int:
    """The state count of a pattern set: its planes' count when packed (no pass over the masks)."""
    return int(planes.shape[1]) if planes is not None else infer_n_states(np.asarray(masks))


def _attachment(tree: Tree, rng: np.random.Generator, anchor: int) -> tuple[int, int]:
    """(u, s): a uniform branch other than the anchor's; u is its end toward the anchor.

    The branches are the nodes other than the root in increasing order, the anchor's left out; the
    draw indexes that list without building it."""
    v = int(rng.random() * (tree.n_nodes - 2))
    for skip in sorted((tree.root, anchor)):
        if v >= skip:
            v += 1
    parent = tree.parent
    p = int(parent[v])
    z = anchor                                   # is v on the anchor's path to the root?
    while z >= 0 and z != v:
        z = int(parent[z])
    return (v, p) if z == v else (p, v)


class ParsSPR(Move):
    name = "ParsSPR(Tau,V)"
    weight = 5.0

    @classmethod
    def default_tuning(cls) -> dict[str, float]:
        return {"warp": 0.1, "r": 0.05, "v_t": 0.03, "lambda": 0.098}

    def _costs(self, adj: Adjacency, s: int, candidates: list[tuple[int, int]], ctx: MoveContext,
               rng: np.random.Generator, rooted) -> np.ndarray:
        """Cost of each candidate branch (x, y) of R for regrafting S (rooted at s); `rooted`: R's
        rooted_children from the anchor."""
        n = ctx.n_tips
        xs, ys = [x for x, _ in candidates], [y for _, y in candidates]
        cost = np.zeros(len(candidates))
        for i, (masks, weights) in enumerate(ctx.pattern_masks):
            planes, noise = self._prepared(ctx, i, masks, weights)
            k = ctx.n_states[i] if ctx.n_states else planes_states(planes, masks)
            rate = ctx.rate_mults[i] if ctx.rate_mults else 1.0
            factor = -self.tuning["warp"] * math.log(1.0 / k - math.exp(-k / (k - 1.0) * self.tuning["v_t"]
                                                                          * rate) / k)
            if bitplanes.AVAILABLE and noise.integer_base is not None:
                w_int = noise.draw_integer(rng)
            else:
                w = noise.draw(rng)
                w_int = bitplanes.integer_weights(w) if bitplanes.AVAILABLE else None
            if w_int is not None:                 # 64 patterns per word; the same integer costs
                missed = (ctx.parsimony.missed_weights(planes, adj, ctx.anchor, s, xs, ys, w_int, n, rooted=rooted)
                          if ctx.parsimony is not None else None)
                if missed is not None:            # the same integers, computed on the GPU
                    cost += factor * missed
                    continue
                final = final_sets(adj, ctx.anchor, planes, n, PlaneOps, rooted)
                s_set = downpass(adj, s, planes, n, ops=PlaneOps)[s]
                cost += factor * bitplanes.missed_weights(final, s_set, w_int, xs, ys)
                continue
            masks = np.asarray(masks, dtype=np.uint32)
            if masks.size and int(masks.max()) < 256:
                masks = masks.astype(np.uint8)    # the same bits in a quarter of the memory traffic
            final = final_sets(adj, ctx.anchor, masks, n, rooted=rooted)
            s_set = downpass(adj, s, masks, n)[s]
            cost += factor * missed_weights(final, s_set, w, xs, ys)
        return cost

    def _prepared(self, ctx: MoveContext, i: int, masks, weights) -> tuple[np.ndarray | None, WeightNoise]:
        """Pattern set i's bit planes (None without numpy's bit counts) and weight-noise plan, built once
        and shared by every chain through the move context."""
        r = self.tuning["r"]
        got = ctx.prepared.get(("pars_spr", i))
        if got is None or got[0] is not masks or got[1] is not weights or got[2] != r:
            m = np.asarray(masks)
            planes = bitplanes.pack_masks(m, infer_n_states(m)) if bitplanes.AVAILABLE else None
            got = ctx.prepared[("pars_spr", i)] = (masks, weights, r, planes, WeightNoise(weights, r))
        return got[3], got[4]

    def propose(self, tree: Tree, rng: np.random.Generator, ctx: MoveContext) -> Proposal:
        n = tree.n_tips
        u, s = _attachment(tree, rng, ctx.anchor)
        adj = undirected(tree)
        a, b = (z for z in adj[u] if z != s)
        if a < n and b < n:
            return aborted(tree)
        la, lb = unlink(adj, u, a), unlink(adj, u, b)
        link(adj, a, b, 0.0)                      # R's joined branch; length set below
        rooted = order, parent, _ = rooted_children(adj, ctx.anchor)
        candidates = [(parent[y], y) for y in order[1:]]
        joined = next(j for j, (x, y) in enumerate(candidates) if {x, y} == {a, b})
        ls = unlink(adj, u, s)                    # S alone, for its downpass set
        cost = self._costs(adj, s, candidates, ctx, rng, rooted) if ctx.pattern_masks else np.zeros(len(candidates))
        link(adj, u, s, ls)
        logw = cost.min() - cost
        forth = np.exp(logw)
        forth[joined] = 0.0
        if not forth.sum() > 0.0:                 # large data: every other target underflowed; renormalise
            logw -= np.delete(logw, joined).max()   # (the joined branch's logw may now be far above 0)
            forth = np.exp(np.where(np.arange(len(logw)) == joined, -np.inf, logw))
        c = int(np.searchsorted(np.cumsum(forth), rng.random() * forth.sum(), side="right"))
        c = min(c, len(candidates) - 1)
        while forth[c] == 0.0:
            c -= 1
        with np.errstate(over="ignore"):          # an overflow to inf is handled by _log_sum
            back = np.exp(logw)
        back[c] = 0.0
        log_h = (logw[joined] - _log_sum(back, logw, c)) - (logw[c] - math.log(forth.sum()))
        x, y = candidates[c]
        log_h += self._rewire(adj, parent, u, a, b, la, lb, x, y, rng, brlen_bounds(ctx.brlens_prior))
        prop = make_proposal(tree, to_tree(tree, adj), log_h)
        prop.detail = {"subtree": s, "attach": u}
        return prop

    def _rewire(self, adj: Adjacency, parent: dict, u: int, a: int, b: int, la: float, lb: float, x: int, y: int,
                rng: np.random.Generator, bounds: tuple[float, float]) -> float:
        """Regraft u into R's branch x-y (y a child of x in R rooted at the anchor: `parent`) with the
        near/far length bookkeeping and three multipliers."""
        # is the target on a's side of the joined branch a-b? (the side away from the anchor is a subtree)
        near_a = not _below(parent, x, b) if parent[b] == a else _below(parent, x, a)
        near, far, l_near, l_far = (a, b, la, lb) if near_a else (b, a, lb, la)
        if _below(parent, near, y):
            x, y = y, x                               # x is the end of the target nearer to the joined branch
        lam = self.tuning["lambda"]
        log_h = 0.0
        new_far, lh = multiply(l_far, lam, rng, *bounds)
        log_h += lh
        link(adj, near, far, new_far)
        l_xy = unlink(adj, x, y)
        new_near, lh = multiply(l_near, lam, rng, *bounds)
        log_h += lh
        new_xy, lh = multiply(l_xy, lam, rng, *bounds)
        log_h += lh
        link(adj, x, u, new_near)
        link(adj, u, y, new_xy)
        return log_h


def _below(parent: dict, z: int, v: int) -> bool:
    """Whether z is v or lies under v in the rooted order `parent` (root: -1)."""
    while z != v and z >= 0:
        z = parent[z]
    return z == v


def _log_sum(weights: np.ndarray, logw: np.ndarray, skip: int) -> float:
    """log of weights.sum() (= sum of exp(logw) without `skip`), also when every term underflowed or one
    overflowed (then the log-sum-exp of logw)."""
    total = weights.sum()
    if 0.0 < total < math.inf:
        return math.log(total)
    rest = np.delete(logw, skip)
    top = rest.max()
    return float(top + math.log(np.exp(rest - top).sum()))
