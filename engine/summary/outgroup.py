"""Where MrBayes 3.2.7a's `sumt` roots the unrooted trees it reads: at its `localOutGroup`.

DoSumtTree moves each sampled tree's root to the outgroup taxon (MovePolyCalculationRoot: the outgroup
becomes the last child of a three-way root), labels every node with the taxa below it and adds the
nodes, in postorder, to its split counter. A split is thus keyed by its side without the outgroup, and
the order in which splits first appear (which decides MrBayes' ties, hence the split numbers) is that of
the re-rooted tree, not of the file.

MrBayes' quirk, kept: DoSumtTree moves the root of the first sampled tree of run 1 before it sets
`localOutGroup` for this sumt, so that one tree is rooted at the value `localOutGroup` had before: 0 in
a session whose first `sumt` this is (`outgroup` and `mcmc` leave it alone), else what the last `sumt`
left there (its outgroup, ResetTaxonSet). Where that taxon is not the outgroup, every split of that
tree that separates the two is keyed by its other side and counted apart: a split of all N trees shows
N-1, and a split seen once (the same split) joins the list, where it may reach the consensus.
"""
from __future__ import annotations

from mbgpu.tree_walks import postorder


class _Node:
    __slots__ = ("kids", "anc", "tip", "length", "mark")

    def __init__(self, tip, kids, length):
        self.tip, self.kids, self.length, self.anc, self.mark = tip, kids, length, None, False
        for k in kids:
            k.anc = self


def outgroup_index(settings, taxa: list[str]) -> int:
    """The outgroup's index among the trees' taxa (DoSumtTree: 0 when the file lacks it)."""
    matrix = getattr(settings, "matrix", None)
    og = getattr(settings, "outgroup", 0)
    if matrix is None or not 0 <= og < len(matrix.taxa):
        return 0
    name = matrix.taxa[og]
    return taxa.index(name) if name in taxa else 0


def stale_outgroup(settings) -> int:
    """`localOutGroup` as this sumt finds it: where the first sampled tree of run 1 is rooted."""
    return getattr(settings, "sumt_outgroup", 0)


def remember_outgroup(settings) -> None:
    """What ResetTaxonSet leaves in `localOutGroup` after a sumt: the outgroup among the included taxa
    (0 when it is deleted)."""
    og, deleted = getattr(settings, "outgroup", 0), getattr(settings, "deleted", frozenset())
    if hasattr(settings, "sumt_outgroup"):
        settings.sumt_outgroup = 0 if og in deleted else og - sum(1 for d in deleted if d < og)


def linked_nodes(topology, edges) -> tuple[_Node, dict[int, _Node]]:
    """The written tree as linked nodes (children in file order) with the file's branch lengths, and its
    tips by taxon in the file's order; `edges` are (taxa below, length) in the file's postorder, as
    parse_newick gives them. Also prune.py's."""
    stack: list[_Node] = []
    tips: dict[int, _Node] = {}
    walk = postorder(topology, lambda v: v if isinstance(v, tuple) else ())
    for v, (_, length) in zip(walk, edges):
        if isinstance(v, tuple):
            kids = stack[len(stack) - len(v):]
            del stack[len(stack) - len(v):]
            stack.append(_Node(None, kids, length))
        else:
            tips[v] = _Node(v, [], length)
            stack.append(tips[v])
    return stack[0], tips


def move_root(root: _Node, target: _Node) -> _Node:
    """MovePolyCalculationRoot: walk the root down to the target's neighbour, each old root becoming the
    last child of the node below it (taking that node's branch length), then put the target last."""
    q = target
    while q is not None:
        q.mark, q = True, q.anc
    p = root
    while True:
        q = next(c for c in p.kids if c.mark)
        if q is target:
            break
        p.kids.remove(q)
        q.kids.append(p)
        p.anc, p.length = q, q.length
        q.anc, q.length = None, 0.0
        p = q
    p.kids.remove(target)
    p.kids.append(target)
    return p


def hung_edges(topology, edges, root_taxon: int) -> list[tuple[int, float]]:
    """(taxa below, branch length) of every node, in postorder, of an unrooted tree re-rooted at
    `root_taxon` as DoSumtTree does it. A root of other than three children is left as written, its
    splits keyed by their side without `root_taxon`, as mbgpu read them before (MrBayes leaves a
    root of two alone and stops on one of more than three)."""
    root, tips = linked_nodes(topology, edges)
    if len(root.kids) != 3 or root_taxon not in tips:
        full, og = (1 << len(tips)) - 1, 1 << root_taxon
        return [(b ^ full if b & og and b != og and b != full else b, length) for b, length in edges]
    root = move_root(root, tips[root_taxon])
    bits: dict[int, int] = {}
    out = []
    for v in postorder(root, lambda v: v.kids):
        b = 1 << v.tip if v.tip is not None else 0
        for k in v.kids:
            b |= bits[id(k)]
        bits[id(v)] = b
        out.append((b, v.length))
    return out
