"""MrBayes 3.2.7a's ShowTree: the text drawing of a binary tree that `sumt showtreeprobs=yes` prints.

The drawing is 59 columns wide after a 3-space margin, one line per tip and one between tips; levels
are spread evenly over 60 columns by node height (tips at height 0). `sumt` draws the trees it rebuilt
from their packed form, whose nodes carry no names, so the tips have empty labels (as in MrBayes).
"""
from __future__ import annotations

from mbgpu.summary.treeorder import BinNode, downpass

_WIDTH = 60


def _coordinates(nodes: list[BinNode]) -> int:
    """Tip rows 0, 2, 4, ... left to right, an inner node halfway (integer) between its children and one
    level above the higher; the root row after the last tip. Returns the number of lines."""
    row = n_lines = 0
    for p in nodes:
        if p.left is None and p.right is None:
            p.x, p.y = row, 0
            row += 2
            n_lines += 2
        elif p.left is not None and p.right is not None and p.anc is not None:
            p.x = p.left.x + (p.right.x - p.left.x) // 2
            p.y = max(p.left.y, p.right.y) + 1
        else:
            p.x, p.y = row, 0
            row += 2
    return n_lines


def _branch(line: list, p: BinNode, j: int, n_levels: int, depth: int, root: BinNode, rooted: bool) -> None:
    """What node p (below the top node) puts on line j: its branch on its own row, a vertical bar where
    the line passes between its children."""
    if p.x == j:
        start = (n_levels - p.anc.y) * depth
        end = _WIDTH - 1 if p.y == 0 else min((n_levels - p.y) * depth, _WIDTH - 1)
        for k in range(start, end):
            line[k] = "-"
        line[start] = "/" if p.anc.left is p else "\\"
        if p.left is not None:
            line[end] = "+"
        if p.anc.anc is root and p.anc.right is p:
            if rooted:
                line[start] = "\\"
            else:
                line[end] = "+"
    elif p.left is not None and p.right is not None:
        if p.left.x < j < p.x or p.x < j < p.right.x:
            line[(n_levels - p.y) * depth] = "|"


def _top(line: list, p: BinNode, j: int, n_lines: int, rooted: bool) -> None:
    """Column 0 for the top node (the root's only child)."""
    if p.x == j or p.left.x < j < p.x or p.x < j < p.right.x:
        line[0] = "|"
    if not rooted:
        if p.x < j <= n_lines - 2:
            line[0] = "|"
        if j == p.right.x:
            line[0] = "+"
    elif j == p.x:
        line[0] = "+"


def show_tree(root: BinNode, rooted: bool) -> list[str]:
    """The lines ShowTree prints for a rebuilt tree (root: taxon 0 unrooted, an extra node rooted)."""
    nodes = downpass(root)
    n_lines = _coordinates(nodes)
    n_levels = root.left.y
    depth = _WIDTH // n_levels
    out = []
    for j in range(n_lines - 1):
        line = [" "] * (_WIDTH + 1)
        for p in nodes:
            if p.anc is None:
                continue
            if p.anc.anc is not None:
                _branch(line, p, j, n_levels, depth, root, rooted)
            else:
                _top(line, p, j, n_lines, rooted)
        out.append("   " + "".join(line[:_WIDTH - 1]) + " ")
    if not rooted:
        out += ["   |", "   \\" + "-" * (_WIDTH - 2) + " "]
    return out
