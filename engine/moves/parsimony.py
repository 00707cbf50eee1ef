"""Fitch parsimony on state-set bit masks (uint32 per tip and pattern), for ParsSPR's proposal weights.

Sets are vectors over patterns; a tip's set is its mask (ambiguity = several bits). The downpass set of
a node is the intersection of its children's sets, or their union where that is empty; the final
(uppass) sets follow the usual Fitch/Hartigan rules.
"""
from __future__ import annotations

import numpy as np

from mbgpu.moves.graph import Adjacency
from mbgpu.tree_walks import rooted_children, rooted_order

# rooted_children and rooted_order live in mbgpu.tree_walks (the GPU's parsimony uses them too); ParsSPR
# takes them from here with the rest of the host parsimony.
__all__ = ["rooted_order", "rooted_children", "MaskOps", "downpass", "final_sets", "missed_weights", "infer_n_states"]


class MaskOps:
    """Set operations on one state-set mask per pattern (uint8/uint32 vectors)."""

    @staticmethod
    def empty(x: np.ndarray) -> np.ndarray:
        return x == 0

    @staticmethod
    def subset(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """Per pattern: a is a subset of b."""
        return (a & b) == a

    @staticmethod
    def select(cond: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """np.where(cond, a, b) for unsigned masks, without branches (several times faster)."""
        return b ^ ((a ^ b) * cond)


def downpass(adj: Adjacency, root: int, masks: np.ndarray, n_tips: int,
             order: list[int] | None = None, parent: dict[int, int] | None = None,
             ops=MaskOps) -> dict[int, np.ndarray]:
    """Fitch downpass sets of every node of the component hanging from `root` (root's set included).

    `root` may be a tip only when it is the tree's root of this traversal (its set is then its mask).
    `ops`: MaskOps for one mask per pattern, mbgpu.moves.bitplanes.PlaneOps for packed bit planes.
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
            acc = ops.select(ops.empty(both), acc | sets[k], both)   # the intersection, or the union if empty
        sets[v] = acc
    return sets


def final_sets(adj: Adjacency, anchor: int, masks: np.ndarray, n_tips: int, ops=MaskOps,
               rooted=None) -> dict[int, np.ndarray]:
    """Fitch final sets of the tree component containing tip `anchor`, rooted at that tip (`rooted`: its
    rooted_children when the caller has it)."""
    order, parent = rooted[:2] if rooted is not None else rooted_order(adj, anchor)
    down = downpass(adj, anchor, masks, n_tips, order, parent, ops)
    final: dict[int, np.ndarray] = {anchor: masks[anchor]}
    for v in order[1:]:
        if v < n_tips:
            final[v] = masks[v]
            continue
        up = final[parent[v]]
        kids = [w for w in adj[v] if parent.get(w) == v]
        d = down[v]
        union_kids, inter_kids = down[kids[0]], down[kids[0]]
        for k in kids[1:]:
            union_kids, inter_kids = union_kids | down[k], inter_kids & down[k]
        f = ops.select(ops.empty(inter_kids), d | up, d | (up & union_kids))
        final[v] = ops.select(ops.subset(up, d), up, f)
    return final


def missed_weights(final: dict, s_set: np.ndarray, w: np.ndarray, xs, ys) -> np.ndarray:
    """For each branch (xs[j], ys[j]): the total weight of the patterns where neither end's final set meets
    `s_set`, i.e. w[((final[x] | final[y]) & s_set) == 0].sum().

    With integer weights (ParsSPR's perturbed site counts) below 2**24 every partial sum is an exact
    integer, so a float32 dot product gives exactly that sum; other weights take the direct path.
    """
    w = np.asarray(w, dtype=np.float64)
    if not (np.all(w == np.floor(w)) and np.abs(w).sum() < 2.0 ** 24):
        return np.array([float(w[((final[x] | final[y]) & s_set) == 0].sum()) for x, y in zip(xs, ys)])
    row = {v: r for r, v in enumerate(sorted(set(xs) | set(ys)))}
    miss = np.empty((len(row), w.size), dtype=np.float32)
    for v, r in row.items():
        np.equal(final[v] & s_set, 0, out=miss[r], casting="unsafe")
    w32 = w.astype(np.float32)
    weighted = {x: miss[row[x]] * w32 for x in set(xs)}
    return np.array([float(np.dot(weighted[x], miss[row[y]])) for x, y in zip(xs, ys)])


def infer_n_states(masks: np.ndarray) -> int:
    """Number of states: the highest bit used by any mask."""
    top = int(np.bitwise_or.reduce(masks, axis=None)) if masks.size else 1
    return max(top.bit_length(), 2)
