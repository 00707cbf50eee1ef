"""Branch-length moves of unrooted trees: Multiplier(V), TLMultiplier(V), Nodeslider(V) (MrBayes
Move_BrLen, Move_TreeLen, Move_NodeSlider). The topology never changes."""
from __future__ import annotations

import math

import numpy as np

from mbgpu.moves.base import Move, MoveContext, Proposal, aborted, brlen_bounds, make_proposal, multiply
from mbgpu.moves.graph import path_to_root
from mbgpu.tree import Tree


def _edges(tree: Tree) -> np.ndarray:
    """Nodes with a branch above them (every node but the root)."""
    return np.flatnonzero(tree.parent >= 0)


class Multiplier(Move):
    """Multiplier(V): one uniformly chosen branch times exp(lambda (u - 1/2)), reflected at the limits."""

    name = "Multiplier(V)"
    weight = 20.0
    target = 0.25

    @classmethod
    def default_tuning(cls) -> dict[str, float]:
        return {"lambda": 2.0 * math.log(2.0)}

    def propose(self, tree: Tree, rng: np.random.Generator, ctx: MoveContext) -> Proposal:
        lo, hi = brlen_bounds(ctx.brlens_prior)
        edges = _edges(tree)
        v = int(edges[int(rng.random() * edges.size)])
        new = tree.copy()
        new.brlen[v], log_h = multiply(float(tree.brlen[v]), self.tuning["lambda"], rng, lo, hi)
        return make_proposal(tree, new, log_h)


class TreeLengthMultiplier(Move):
    """TLMultiplier(V): all branches times one factor; aborted when any branch leaves the limits."""

    name = "TLMultiplier(V)"
    weight = 3.0
    target = 0.25

    @classmethod
    def default_tuning(cls) -> dict[str, float]:
        return {"lambda": 2.0 * math.log(2.0)}

    def propose(self, tree: Tree, rng: np.random.Generator, ctx: MoveContext) -> Proposal:
        lo, hi = brlen_bounds(ctx.brlens_prior)
        scaler = math.exp(self.tuning["lambda"] * (rng.random() - 0.5))
        edges = _edges(tree)
        scaled = tree.brlen[edges] * scaler
        if np.any(scaled < lo) or np.any(scaled > hi):
            return aborted(tree)
        new = tree.copy()
        new.brlen[edges] = scaled
        return make_proposal(tree, new, edges.size * math.log(scaler))


def _toward_anchor(tree: Tree, p: int, anchor_path: set[int], kids_p: list[int]) -> int:
    """The neighbour of internal node p (children `kids_p`) on the path to the anchor tip."""
    if p in anchor_path:
        return next(c for c in kids_p if c in anchor_path)
    return int(tree.parent[p])


class NodeSlider(Move):
    """Nodeslider(V): pick an internal node p, its branch toward the anchor tip and one other branch;
    multiply their summed length m (reflected into [2 min, 2 max]) and place p uniformly on the path.

    log Hastings = log(range_new / range_old) + 2 log(m_new / m_old) (MrBayes Move_NodeSlider).
    """

    name = "Nodeslider(V)"
    weight = 7.0

    @classmethod
    def default_tuning(cls) -> dict[str, float]:
        return {"lambda": 0.191}

    def propose(self, tree: Tree, rng: np.random.Generator, ctx: MoveContext) -> Proposal:
        lo, hi = brlen_bounds(ctx.brlens_prior)
        n = tree.n_tips
        p = n + int(rng.random() * (tree.n_nodes - n))
        kids_p = np.flatnonzero(tree.parent == p).tolist()     # p's children in increasing order
        anchor_path = set(path_to_root(tree, ctx.anchor))
        down = _toward_anchor(tree, p, anchor_path, kids_p)
        others = [z for z in kids_p + [int(tree.parent[p])] if z >= 0 and z != down]
        q = others[0] if rng.random() < 0.5 else others[1]
        e_down = p if tree.parent[p] == down else down      # node holding the branch p-down
        e_q = q if tree.parent[q] == p else p
        old_m = float(tree.brlen[e_down] + tree.brlen[e_q])
        new_m = old_m * math.exp(self.tuning["lambda"] * (rng.random() - 0.5))
        while new_m < 2.0 * lo or new_m > 2.0 * hi:
            new_m = 4.0 * lo * lo / new_m if new_m < 2.0 * lo else 4.0 * hi * hi / new_m
        new_min, new_max = max(lo, new_m - hi), min(hi, new_m - lo)
        old_min, old_max = max(lo, old_m - hi), min(hi, old_m - lo)
        x_q = new_min + rng.random() * (new_max - new_min)
        new = tree.copy()
        new.brlen[e_q] = x_q
        new.brlen[e_down] = max(new_m - x_q, lo)
        log_h = math.log((new_max - new_min) / (old_max - old_min)) + 2.0 * math.log(new_m / old_m)
        return make_proposal(tree, new, log_h)
