"""Sampled topologies as MrBayes 3.2.7a keeps them in `sumt`: packed order arrays, counted in a search tree.

MrBayes packs every binary topology into an "order" array (StoreUPolyTopology / StoreRPolyTopology):
label each node (a tip by its index, an internal node by the larger of its two children's smallest taxa
plus n-2 unrooted or n-1 rooted), then prune the tips from the last down, writing the label of each
pruned tip's sibling. The arrays key a binary search tree of distinct trees (AddSumtTree), listed in
preorder and then sorted by count; the tree drawn and written for each is rebuilt from its array by
stepwise addition (RetrieveUTopology / RetrieveRTopology), which fixes the order of every node's
children. Matching all of this is what makes `.trprobs` and `showtreeprobs` agree with MrBayes' own,
ties and child order included.
"""
from __future__ import annotations

from dataclasses import dataclass

from mbgpu.errors import InputFileError, Location
from mbgpu.tree_walks import postorder


@dataclass
class BinNode:
    """A node of a rebuilt binary tree: tips have no children; `index` is the 0-based taxon for tips."""

    index: int
    left: "BinNode | None" = None
    right: "BinNode | None" = None
    anc: "BinNode | None" = None
    x: int = 0
    y: int = 0


def _graph(topology) -> tuple[dict, object]:
    """Undirected adjacency of a nested-tuple tree (tips are ints, internal nodes get ('i', k) keys)."""
    adj: dict = {}
    count = [0]

    def build(v):
        if isinstance(v, int):
            adj.setdefault(v, [])
            return v
        key = ("i", count[0])
        count[0] += 1
        adj[key] = []
        for c in v:
            ck = build(c)
            adj[key].append(ck)
            adj[ck].append(key)
        return key

    return adj, build(topology)


def _contract(adj: dict, keep) -> None:
    """Remove internal nodes of degree two (the written root of an unrooted tree), joining their
    neighbours, so that every node left is a tip or a branching node; `keep` stays."""
    for w in [v for v in adj if not isinstance(v, int) and len(adj[v]) == 2 and v != keep]:
        a, b = adj.pop(w)
        adj[a] = [b if u == w else u for u in adj[a]]
        adj[b] = [a if u == w else u for u in adj[b]]


def _hang(adj: dict, root) -> dict:
    """Children of every node when the graph hangs from `root`."""
    kids: dict = {}
    stack = [(root, None)]
    while stack:
        v, came = stack.pop()
        kids[v] = [w for w in adj[v] if w != came]
        stack.extend((w, v) for w in kids[v])
    return kids


def _children(topology, n: int, rooted: bool, where: Location | None) -> tuple[object, dict]:
    """(root, children) of the binary tree MrBayes packs: hung from taxon 0 when unrooted."""
    adj, top = _graph(topology)
    root = top if rooted else 0
    if root not in adj:
        raise InputFileError("a tree does not hold all %d taxa" % n, where)
    _contract(adj, root)
    kids = _hang(adj, root)
    for v, ks in kids.items():
        want = 0 if isinstance(v, int) else 2
        if v == root and not rooted:
            want = 1
        if len(ks) != want:
            raise InputFileError("sumt can only calculate tree probabilities of binary trees", where)
    if sum(1 for v in kids if isinstance(v, int)) != n:
        raise InputFileError("a tree does not hold all %d taxa" % n, where)
    return root, kids


def order_array(topology, n: int, rooted: bool, where: Location | None = None) -> tuple[int, ...]:
    """MrBayes' packed form of a binary topology (StoreUPolyTopology / StoreRPolyTopology)."""
    root, kids = _children(topology, n, rooted, where)
    offset = n - 1 if rooted else n - 2
    low, label, parent = {}, {}, {}
    for v in postorder(root, kids):
        if isinstance(v, int):
            low[v] = label[v] = v
        else:
            a, b = (low[c] for c in kids[v])
            low[v], label[v] = min(a, b), max(a, b) + offset
        for c in kids[v]:
            parent[c] = v
    parent[root] = None
    first = 2 if rooted else 3
    order = [0] * max(n - first, 0)
    for k in range(n - 1, first - 1, -1):
        q = parent[k]
        sib = [c for c in kids[q] if c != k][0]
        order[k - first] = label[sib]
        up = parent[q]
        parent[sib] = up
        if up is not None:
            kids[up] = [sib if c == q else c for c in kids[up]]
    return tuple(order)


@dataclass
class _CountNode:
    order: tuple
    count: int = 1
    left: "_CountNode | None" = None
    right: "_CountNode | None" = None


@dataclass
class TreeCounter:
    """AddSumtTree's search tree of distinct order arrays (a smaller entry at the first difference goes
    right), and `in_preorder` for TreeCtrUppass."""

    root: _CountNode | None = None
    n_distinct: int = 0

    def add(self, order: tuple) -> None:
        if self.root is None:
            self.root, self.n_distinct = _CountNode(order), 1
            return
        node = self.root
        while True:
            diff = next((i for i, (a, b) in enumerate(zip(order, node.order)) if a != b), None)
            if diff is None:
                node.count += 1
                return
            side = "right" if order[diff] < node.order[diff] else "left"
            nxt = getattr(node, side)
            if nxt is None:
                setattr(node, side, _CountNode(order))
                self.n_distinct += 1
                return
            node = nxt

    def in_preorder(self) -> list[_CountNode]:
        out, stack = [], [self.root]
        while stack:
            v = stack.pop()
            if v is not None:
                out.append(v)
                stack.append(v.right)
                stack.append(v.left)
        return out


def rebuild(order: tuple, n: int, rooted: bool) -> BinNode:
    """RetrieveUTopology / RetrieveRTopology: the binary tree of an order array, by stepwise addition
    (each added tip becomes the left child of a new node put in place of the node it joins). Returns
    the root: taxon 0 (unrooted) or an extra node above the top (rooted), with a single (left) child."""
    tips = [BinNode(i) for i in range(n)]
    first = 2 if rooted else 3
    inner = {n: BinNode(-1)}
    root = BinNode(-1) if rooted else tips[0]
    base = inner[n]
    base.left, base.right = (tips[0], tips[1]) if rooted else (tips[1], tips[2])
    base.left.anc = base.right.anc = base
    root.left, base.anc = base, root
    for i in range(first, n):
        q = inner[i + (n - 1 if rooted else n - 2)] = BinNode(-1)
        r = tips[order[i - first]] if order[i - first] < n else inner[order[i - first]]
        p = tips[i]
        q.left, q.right, q.anc = p, r, r.anc
        if r.anc.left is r:
            r.anc.left = q
        else:
            r.anc.right = q
        p.anc = r.anc = q
    return root


def downpass(root: BinNode) -> list[BinNode]:
    """GetDownPass: postorder, left subtree before right, the root last."""
    return postorder(root, lambda v: [c for c in (v.left, v.right) if c is not None])


def newick(root: BinNode, rooted: bool) -> str:
    """WriteTopologyToFile from the top node: 1-based taxa, left before right; an unrooted tree ends
    with its root taxon at the basal node, `(A,B,1)`."""
    def write(v: BinNode) -> str:
        if v.left is None:
            return "%d" % (v.index + 1)
        return "(" + write(v.left) + "," + write(v.right) + ")"

    top = root.left
    if rooted:
        return write(top)
    return "(" + write(top.left) + "," + write(top.right) + ",%d)" % (root.index + 1)
