"""Walks of an undirected tree given as adjacency (adj[v]: v's neighbours, e.g. {w: branch length}) from a
chosen root. Shared by ParsSPR's parsimony on the host (mbgpu.moves.parsimony) and on the GPU
(mbgpu.cuda.parsimony), so the CUDA code imports no move module.
"""
from __future__ import annotations

from typing import Iterable, Sequence


def rooted_order(adj: Sequence[Iterable[int]], root: int) -> tuple[list[int], dict[int, int]]:
    """Preorder of the component of `root` in adj and each node's parent in it (root: -1).

    >>> rooted_order([{1: 0.1}, {0: 0.1, 2: 0.2}, {1: 0.2}], 1)
    ([1, 0, 2], {1: -1, 0: 1, 2: 1})
    """
    order, parent, _ = rooted_children(adj, root)
    return order, parent


def rooted_children(adj: Sequence[Iterable[int]], root: int) -> tuple[list[int], dict[int, int], dict[int, list[int]]]:
    """rooted_order(adj, root) and each node's children in adjacency order, in the same one walk (in a
    tree every neighbour not yet reached when a node is visited is its child)."""
    parent = {root: -1}
    order = [root]
    kids: dict[int, list[int]] = {}
    for v in order:
        got = kids[v] = [w for w in adj[v] if w not in parent]
        for w in got:
            parent[w] = v
        order += got
    return order, parent, kids


def postorder(root, kids) -> list:
    """Children before parents, each node's children in their order in `kids[v]` (a mapping or
    sequence of child lists; tips may be absent from a mapping or have empty lists), or in the order
    `kids(v)` gives them when `kids` is a function.

    >>> postorder(0, {0: [1, 2], 2: [3, 4]})
    [1, 3, 4, 2, 0]
    """
    children = kids if callable(kids) else (lambda v: kids.get(v, ())) if hasattr(kids, "get") \
        else kids.__getitem__
    out, stack = [], [(root, False)]
    while stack:
        v, done = stack.pop()
        if done:
            out.append(v)
            continue
        stack.append((v, True))
        stack.extend((c, False) for c in reversed(children(v)))
    return out
