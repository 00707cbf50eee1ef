"""Fitch parsimony on state-set bit masks (uint32 per tip and pattern), for ParsSPR's proposal weights.

Sets are vectors over patterns; a tip's set is its mask (ambiguity = several bits). The downpass set of
a node is the intersection of its children's sets, or their union where that is empty; the final
(uppass) sets follow the usual Fitch/Hartigan rules.
"""
from __future__ import annotations

import numpy as np

from engine.moves.graph import Adjacency


def rooted_order(adj: Adjacency, root: int) -> tuple[list[int], dict[int, int]]:
    """Preorder of the component of `root` in adj and each node's parent in it (root: -1)."""
    parent = {root: -1}
    order = [root]
    for v in order:
        for w in adj[v]:
            if w not in parent:
                parent[w] = v
                order.append(w)
    return order, parent


def downpass(adj: Adjacency, root: int, masks: np.ndarray, n_tips: int,
             order: list[int] | None = None, parent: dict[int, int] | None = None) -> dict[int, np.ndarray]:
    """Fitch downpass sets of every node of the component hanging from `root` (root's set included).

    `root` may be a tip only when it is the tree's root of this traversal (its set is then its mask).
    """
    if order is None or parent is None:
        order, parent = rooted_order(adj, root)
    sets: dict[int, np.ndarray] = {}
    for v in reversed(order):
        kids = [w for w in adj[v] if parent.get(w) == v]
        if v < n_tips or not kids:
            sets[v] = masks[v]
            continue
        acc = sets[kids[0]]
        for k in kids[1:]:
            both = acc & sets[k]
            acc = np.where(both != 0, both, acc | sets[k])
        sets[v] = acc
    return sets


def final_sets(adj: Adjacency, anchor: int, masks: np.ndarray, n_tips: int) -> dict[int, np.ndarray]:
    """Fitch final sets of the tree component containing tip `anchor`, rooted at that tip."""
    order, parent = rooted_order(adj, anchor)
    down = downpass(adj, anchor, masks, n_tips, order, parent)
    final: dict[int, np.ndarray] = {anchor: masks[anchor]}
    for v in order[1:]:
        if v < n_tips:
            final[v] = masks[v]
            continue
        up = final[parent[v]]
        kids = [w for w in adj[v] if parent.get(w) == v]
        d = down[v]
        union_kids = np.bitwise_or.reduce([down[k] for k in kids])
        inter_kids = np.bitwise_and.reduce([down[k] for k in kids])
        covers = (d & up) == up
        f = np.where(inter_kids == 0, d | up, d | (up & union_kids))
        final[v] = np.where(covers, up, f)
    return final


def infer_n_states(masks: np.ndarray) -> int:
    """Number of states: the highest bit used by any mask."""
    top = int(np.bitwise_or.reduce(masks, axis=None)) if masks.size else 1
    return max(top.bit_length(), 2)
