"""NNI(Tau,V): nearest-neighbour interchange on an unrooted tree (MrBayes Move_NNI).

An internal branch u-v is drawn uniformly; one of u's two other subtrees is swapped with a fixed one of
v's other subtrees, giving each of the two NNI neighbours probability 1/2. Subtrees keep their branch
lengths, so the move is symmetric: log Hastings = 0.
"""
from __future__ import annotations

import numpy as np

from mbgpu.moves.base import Move, MoveContext, Proposal, aborted, make_proposal
from mbgpu.tree import Tree


class NNI(Move):
    name = "NNI(Tau,V)"
    weight = 5.0

    def propose(self, tree: Tree, rng: np.random.Generator, ctx: MoveContext) -> Proposal:
        drawn = self.draw(tree, rng)
        if drawn is None:
            return aborted(tree)
        return make_proposal(tree, swapped(tree, *drawn), 0.0)

    @staticmethod
    def draw(tree: Tree, rng: np.random.Generator) -> tuple[int, int, int, int] | None:
        """(u, v, a, c) of swapped(): the branch u-v and the subtrees exchanged; None: no internal branch."""
        n, root = tree.n_tips, tree.root
        count = tree.n_nodes - n - 1                 # internal branches: non-root internal nodes, in order
        if count < 1:
            return None
        u = n + int(rng.random() * count)
        if u >= root:
            u += 1
        parent = tree.parent
        v = int(parent[u])
        a_side = np.flatnonzero(parent == u).tolist()              # u's neighbours but v: its children
        c_side = [w for w in np.flatnonzero(parent == v).tolist() if w != u]
        if parent[v] >= 0:
            c_side = sorted(c_side + [int(parent[v])])             # v's neighbours but u
        a = a_side[0] if rng.random() < 0.5 else a_side[1]
        return u, v, a, c_side[0]


def swapped(tree: Tree, u: int, v: int, a: int, c: int) -> Tree:
    """The tree with subtree a (a child of u, u a child of v) and c (v's other neighbour) exchanged, each
    keeping its branch; directed away from the same root. When c is v's parent the path through u and
    v turns round: u hangs from c with v's old branch, v from u with u's old branch."""
    parent, brlen = tree.parent.copy(), tree.brlen.copy()
    parent[a] = v
    if parent[c] == v:
        parent[c] = u
    else:
        parent[u], brlen[u] = c, tree.brlen[v]
        parent[v], brlen[v] = u, tree.brlen[u]
    return Tree(tree.n_tips, parent, brlen)


class MultNNI(NNI):
    """MultNNI(Tau,V...): one NNI applied to every tree sharing a topology (`unlink brlens` inside a linked
    topology; MrBayes' Move_NNI_Hetero). The branch and the swap are drawn on the first tree as NNI draws
    them; every tree keeps its own branch lengths, so the move is symmetric: log Hastings = 0."""

    name = "MultNNI(Tau,V)"
    weight = 15.0

    def propose_shared(self, trees: list[Tree], rng: np.random.Generator) -> list[Tree] | None:
        """The moved trees (one topology, each its own branch lengths), or None when no move is possible."""
        drawn = self.draw(trees[0], rng)
        if drawn is None:
            return None
        return [swapped(tree, *drawn) for tree in trees]
