"""Node heights and ages of clock trees read by `sumt`, as MrBayes 3.2.7a's GetPolyDepths/GetPolyAges
compute them: each node's distance from the root summed down the tree, subtracted from the largest such
sum (so extant tips get print-precision noise such as 3e-08, not 0), divided by the tree's
`[&clockrate=...]` for ages."""
from __future__ import annotations


def node_depths(topology, edges: list[tuple[int, float]]) -> list[float]:
    """Heights of the nodes in `edges` order (the written tree's postorder, root last): MrBayes'
    GetPolyDepths, the root's branch ignored."""
    parent = [-1] * len(edges)
    _link(topology, parent, [0])
    path = [0.0] * len(edges)
    deepest = 0.0
    for i in range(len(edges) - 2, -1, -1):
        path[i] = path[parent[i]] + edges[i][1]
        if path[i] > deepest:
            deepest = path[i]
    return [deepest - p for p in path]


def _link(node, parent: list[int], counter: list[int]) -> int:
    """Number `node`'s subtree in postorder (as parse_newick lists edges); fill each child's parent."""
    kids = [_link(k, parent, counter) for k in node] if isinstance(node, tuple) else []
    me = counter[0]
    counter[0] += 1
    for k in kids:
        parent[k] = me
    return me


def node_ages(depths: list[float], clockrate: float) -> list[float]:
    """GetPolyAges of 3.2.7a: the height divided by the tree's clock rate."""
    return [d / clockrate for d in depths]
