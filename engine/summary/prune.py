"""`sumt` after `delete`: the trees read are pruned to the included taxa, as MrBayes 3.2.7a prunes them.

DoSumtTree first hangs each tree at its `localOutGroup` (MovePolyCalculationRoot) and only then prunes,
so that number, an index among the included taxa, picks a tip of the full tree (the outgroup only when no
deleted taxon precedes it); the pruned tree is counted as it stands. A deleted taxon's tip is cut off; a node left with one child joins its two branches (lengths added);
an unrooted tree whose basal node is left with two children gets a basal trifurcation again (the two
branches to the root become one). The splits, consensus and tree probabilities are then those of the
pruned trees over the remaining taxa, numbered in the file's order, and the screen names the pruned
taxa as MrBayes does.
"""
from __future__ import annotations

import dataclasses
from mbgpu.errors import InputFileError, Location
from mbgpu.output.tfile import TFile, TreeSample
from mbgpu.summary.outgroup import linked_nodes, move_root


def deleted_names(settings, taxa: list[str]) -> list[str]:
    """The taxa of the tree files that are deleted now, in the files' order."""
    matrix = getattr(settings, "matrix", None)
    deleted = getattr(settings, "deleted", frozenset())
    if matrix is None or not deleted:
        return []
    gone = {matrix.taxa[i] for i in deleted}
    return [t for t in taxa if t in gone]


def pruned_files(files: list[TFile], drop: list[str], hangs=lambda run, k: None) -> list[TFile]:
    """Every file's taxa and trees without the taxa `drop`; an unrooted tree k of run r is first hung at
    the taxon numbered hangs(r, k) in the file (None: as written)."""
    if not drop:
        return files
    taxa = files[0].taxa
    if len(taxa) - len(drop) < 3:
        raise InputFileError("pruned tree has less than three taxa in it", Location(files[0].path))
    gone = {taxa.index(t) for t in drop}
    renumber = {old: new for new, old in enumerate(i for i in range(len(taxa)) if i not in gone)}
    return [dataclasses.replace(f, taxa=[t for t in f.taxa if t not in drop],
                                trees=[_pruned(t, gone, renumber, hangs(r, k)) for k, t in enumerate(f.trees)])
            for r, f in enumerate(files)]


def pruned_lines(drop: list[str]) -> list[str]:
    """MrBayes' report of the pruned taxa (its line breaks after 60 characters of names)."""
    if not drop:
        return []
    head = ("   The following taxon was pruned from trees:" if len(drop) == 1 else
            "   The following %d taxa were pruned from trees:" % len(drop))
    lines, cur, width = [head], "      ", 0
    for j, name in enumerate(drop, 1):
        width += len(name) + 2
        if width > 60:
            lines.append(cur)
            cur, width = "      ", 0
        cur += (name if len(drop) == 1 else name + " " if len(drop) == 2 and j == 1 else
                "and " + name if j == len(drop) else name + ", ")
    return lines + [cur, ""]


def _pruned(tree: TreeSample, drop: set[int], renumber: dict[int, int], hang: int | None) -> TreeSample:
    """One tree without the tips `drop`, cut one at a time in the tree's downpass order as MrBayes'
    PrunePolyTree does (the order decides how joined branch lengths are added), tips renumbered; an
    unrooted tree with a three-way root is first hung at taxon `hang`."""
    root, tips = linked_nodes(tree.topology, tree.lengths["edges"])
    if hang is not None and not tree.rooted and len(root.kids) == 3 and hang in tips:
        root = move_root(root, tips[hang])
    for t in [t for t in tips if t in drop]:          # tips in the order the file lists them
        root = _cut(tips[t], root, tree.rooted)
    out: list[tuple[int, float]] = []
    topo, _ = _rebuild(root, renumber, out)
    return TreeSample(tree.name, tree.rooted, topo, dict(edges=out), tree.clockrate)


def _cut(tip, root, rooted: bool):
    """Remove one tip; a node left with one child is replaced by it (the child's branch plus the
    node's), an unrooted basal node left with two children takes an internal child's children."""
    parent = tip.anc
    parent.kids.remove(tip)
    if parent is root:
        if len(root.kids) == 1 and root.kids[0].kids:
            root = root.kids[0]
            root.anc = None
        elif not rooted and len(root.kids) == 2:
            _trifurcate(root)
        return root
    if len(parent.kids) == 1:
        child, up = parent.kids[0], parent.anc
        child.length = child.length + parent.length
        child.anc = up
        up.kids[up.kids.index(parent)] = child
    return root


def _trifurcate(root) -> None:
    """An unrooted tree's basal node with two children: the first internal child's children take its
    place, followed by the other child, whose branch gets the internal child's added."""
    a, b = root.kids
    if not a.kids:
        a, b = b, a
    if not a.kids:
        return                                           # two tips: nothing to dissolve
    b.length = b.length + a.length
    for k in a.kids:
        k.anc = root
    root.kids = a.kids + [b]


def _rebuild(node, renumber: dict[int, int], out: list) -> tuple[object, int]:
    """Nested tuples and (bits, length) in postorder, as parse_newick gives them."""
    if node.tip is not None:
        tip = renumber[node.tip]
        out.append((1 << tip, node.length))
        return tip, 1 << tip
    parts = [_rebuild(k, renumber, out) for k in node.kids]
    bits = 0
    for _, b in parts:
        bits |= b
    out.append((bits, node.length))
    return tuple(p for p, _ in parts), bits
