"""MrBayes 3.2.7a's screen drawings of the `sumt` consensus tree: "Clade credibility values" (ShowConTree)
and "Phylogram (based on average branch lengths)" (ShowConPhylogram), 80 columns after a 3-space margin.

Tips are labelled `name (k)` cut to 20 characters (the name ending in `~` when cut). The credibility tree
spaces its levels evenly, puts each split's support (%) on its branch and, when it is 11 or more levels
deep, draws the deepest subtrees first ("Subtree rooted at node N") and then the rest with `(N)` in their
place. The phylogram places nodes by their summed median branch lengths, with a scale bar below; a
clock tree's by its nodes' median heights (or ages), with a time axis below (clock_axis).
Line ends are as MrBayes prints them: a drawn line stops after its tip label, other lines are 80 wide.
"""
from __future__ import annotations

import math

from mbgpu.tree_walks import postorder

_SCREEN = 80
_MAX_LABEL = 20
_MIN_BRANCH = 5


class DrawNode:
    """A consensus node for drawing: children in order, the taxon (tips), support, median length."""

    __slots__ = ("kids", "anc", "tip", "name", "support", "length", "index", "x", "y", "mark", "f", "height")

    def __init__(self, tip: int | None = None, name: str = "", support: float = 0.0, length: float = 0.0):
        self.kids: list[DrawNode] = []
        self.anc: DrawNode | None = None
        self.tip, self.name, self.support, self.length = tip, name, support, length
        self.index = tip if tip is not None else -1
        self.x = self.y = self.mark = 0
        self.f = 0.0
        self.height: float | None = None      # clock trees: the node's median height (or age)


def _c_number(n: int) -> str:
    """The taxon number as MrBayes' Label spells it: digit by digit, zeros owed appended at the end (so
    101 comes out as `110`, a MrBayes quirk kept as it is only formatting)."""
    k = int(math.log10(n)) + 1
    out = ""
    while n != 0:
        step = int(math.pow(10, int(math.log10(n))))
        out += "%d" % (n // step)
        n %= step
        k -= 1
    return out + "0" * k


def tip_label(name: str, index: int, limit: int = _MAX_LABEL) -> str:
    """`name (index+1)`, at most `limit` characters: a longer name is cut and ends in `~`."""
    digits = int(math.log10(index + 1))
    length = min(len(name) + 4 + digits, limit)
    keep = length - 4 - digits
    shown = name[:keep - 1] + ("~" if len(name) > keep else name[keep - 1:keep])
    return "%s (%s)" % (shown, _c_number(index + 1))


def _postorder(root: DrawNode) -> list[DrawNode]:
    """GetPolyDownPass: children in order before their parent, the root last."""
    return postorder(root, lambda v: v.kids)


def _put(line: list, at: int, text: str) -> None:
    if len(line) < at + len(text):
        line.extend(" " * (at + len(text) - len(line)))
    line[at:at + len(text)] = list(text)


def _support_label(line: list, frm: int, to: int, p: DrawNode) -> None:
    """The support (%) centred on the branch from column `frm` to the node's `+` at `to`."""
    text = "%d" % int(p.support * 100.0 + 0.5)
    _put(line, int(frm + 1.5 + (to - frm - 1 - len(text)) / 2.0), text)


def _depths(nodes: list[DrawNode], max_width: int) -> DrawNode:
    """Levels of the undrawn nodes (tips 0); stops at the first node `max_width` levels up, else the root."""
    p = nodes[-1]
    for p in nodes:
        if p.mark == 0:
            p.x = 0
            if p.kids and p.kids[0].mark == 0:
                p.x = max([0] + [q.x for q in p.kids]) + 1
                if p.x >= max_width:
                    return p
    return p


def _place(nodes: list[DrawNode], top: DrawNode, tree_w: int) -> int:
    """Mark the part to draw (top and its undrawn descendants), turn levels into columns, give tips rows
    0, 2, 4, ... and inner nodes the middle of their first and last child; returns the number of lines."""
    width = top.x if top.anc is None else top.x + 1
    top.mark = 1
    top.x = int(tree_w - 0.5 - (tree_w - 1) * (top.x / width))
    for p in reversed(nodes[:-1]):
        if p.mark == 0 and p.anc.mark == 1:
            p.mark = 1
            p.x = int(tree_w - 0.5 - (tree_w - 1) * (p.x / width))
    n_lines = 0
    for p in nodes:
        if p.mark == 1:
            if p.kids and p.kids[0].mark == 1:
                p.y = int(0.5 + (p.kids[0].y + p.kids[-1].y) / 2.0)
            else:
                p.y = n_lines
                n_lines += 2
    return n_lines


def _credibility_line(nodes, row: int, tree_w: int, marks: list) -> tuple[str, int]:
    """One line of ShowConTree; returns it and how many nodes it finished drawing."""
    line, end, done = [" "] * _SCREEN, _SCREEN, 0
    for p in nodes:
        if p.mark != 1 or p.y != row:
            continue
        if not p.kids:
            text = tip_label(p.name, p.index)
            _put(line, tree_w + 1, text)
            end = tree_w + 1 + len(text)
        elif p.kids[0].mark == 2:
            text = "(%d)" % p.index
            _put(line, tree_w + 1, text)
            end = tree_w + 1 + len(text)
        if p.anc is None:
            line[p.x] = "+"
            done += 1
        elif p.anc.mark == 0:
            line[0:p.x] = ["-"] * p.x
            line[p.x] = "+"
            _support_label(line, 0, p.x, p)
        else:
            frm, to = p.anc.x, p.x
            line[frm + 1:to + 1] = ["-"] * (to - frm)
            if p is p.anc.kids[0]:
                line[frm], marks[frm] = "/", 1
            elif p is p.anc.kids[-1]:
                line[frm], marks[frm] = "\\", 0
            if p.kids and p.kids[0].mark != 2:
                line[to] = "+"
                _support_label(line, frm, to, p)
            done += 1
    for j in range(tree_w):
        if marks[j] == 1 and line[j] == " ":
            line[j] = "|"
    return "   " + "".join(line[:end]), done


def credibility_tree(root: DrawNode) -> list[str]:
    """ShowConTree(..., 80, showSupport=YES): the lines MrBayes prints under 'Clade credibility values:'."""
    nodes = _postorder(root)
    inner = [p for p in nodes if p.kids]
    for k, p in enumerate(inner):
        p.index = len(nodes) - len(inner) + k
    longest = max(len(tip_label(p.name, p.index)) for p in nodes if not p.kids)
    longest = max(longest, int(3.0 + math.log10(len(nodes))))
    tree_w = _SCREEN - longest - 1
    max_width = tree_w // _MIN_BRANCH
    for p in nodes:
        p.mark = 0
    left, divided, marks, out = len(nodes), False, [0] * _SCREEN, []
    while left > 0:
        p = _depths(nodes, max_width)
        if p.anc is not None:
            for q in list(p.kids):
                if q.x == p.x - 1 and q.mark == 0:
                    p = q
            out += ["   Subtree rooted at node %d:" % p.index, ""]
            divided = True
        elif divided:
            out += ["   Root part of tree:", ""]
        for row in range(_place(nodes, p, tree_w)):
            text, done = _credibility_line(nodes, row, tree_w, marks)
            out.append(text)
            left -= done
        for p in nodes:
            if p.mark == 1:
                p.mark = 0 if p.anc is not None and p.anc.mark == 0 else 2
    return out


def _phylogram_scale(nodes: list[DrawNode]) -> tuple[float, int]:
    """Columns per unit of length so that the farthest tip's label still fits, and the tree's width."""
    scale, tree_w = 0.0, 0
    nodes[-1].f = 0.0
    for p in reversed(nodes[:-1]):
        p.f = p.anc.f + p.length if p.height is None else nodes[-1].height - p.height
        if not p.kids:
            room = _SCREEN - len(tip_label(p.name, p.index)) - 2
            if p.f / room > scale:
                scale, tree_w = p.f / room, room
    return scale, tree_w


def _scale_bar(scale: float) -> str:
    """The bar under the phylogram: a round length (1, 2 or 5 times a power of ten) and its width."""
    bar = math.pow(10, math.floor(math.log10(scale * 80)))
    n = int(bar / scale)
    for limit, factor in ((80, 10), (40, 5), (16, 2)):
        if n > limit:
            n //= factor
            bar /= factor
            break
    return "   |" + "-" * (n - 1) + "| %1.3f expected changes per site" % bar


def clock_axis(scale: float, tree_w: int, last: list[str], ages: bool = False) -> list[str]:
    """ShowConPhylogram's axis under a clock tree: ticks every round length back from the tips, their
    values centred on them; both lines overwrite the buffer of the last drawn row, as MrBayes does."""
    bar = math.pow(10, math.floor(math.log10(scale * 80)))
    n = int(bar / scale)
    for limit, factor in ((80, 10), (40, 5), (16, 2)):
        if n > limit:
            bar /= factor
            break
    line = ["-"] * tree_w + last[tree_w:]
    n_times = int(tree_w / (bar / scale))
    for i in range(n_times + 1):
        line[tree_w - int(i * bar / scale)] = "|"
    axis = "   " + "".join(line)
    f = tree_w * scale
    expo = f >= 1000.0 or f < 0.10
    precision = 0 if expo else 2 - int(math.log10(f))
    pos, f = 0, n_times * bar
    while pos < tree_w:
        text = "%.2e" % f if expo else "%.*f" % (precision, f)
        spaces = tree_w - int(n_times * (bar / scale)) - len(text) // 2 - pos
        if spaces >= 0 or (spaces >= -2 and pos == 0):
            put = " " * max(spaces, 0) + text
            line[pos:pos + len(put)] = list(put)
            pos += len(put)
        f -= bar
        n_times -= 1
    units = "[User-defined time units]" if ages else "[Expected changes per site]"
    return [axis, "   " + "".join(line), "", "   " + units]


def phylogram(root: DrawNode, ages: bool = False) -> list[str] | None:
    """ShowConPhylogram: the drawing and its scale bar (a time axis for clock trees, whose nodes carry
    heights, or ages: `ages`); None where the lengths give nothing to draw (all zero, or not numbers)."""
    nodes = _postorder(root)
    scale, tree_w = _phylogram_scale(nodes)
    if not scale > 0.0 or not math.isfinite(scale):
        return None
    for p in nodes:
        p.x = int(0.5 + p.f / scale)
    n_lines = 0
    for p in nodes:
        if p.kids:
            p.y = int(0.5 + (p.kids[0].y + p.kids[-1].y) / 2.0)
        else:
            p.y, n_lines = n_lines, n_lines + 2
    marks, out = [0] * _SCREEN, []
    for row in range(n_lines):
        line, end = [" "] * _SCREEN, _SCREEN
        for p in nodes:
            if p.y == row:
                end = _phylogram_branch(line, p, marks, end)
        for j in range(_SCREEN):
            if marks[j] >= 1 and line[j] == " ":
                line[j] = "|"
        out.append("   " + "".join(line[:end]))
    if root.height is not None:
        return out + clock_axis(scale, tree_w, line, ages)
    return out + [_scale_bar(scale)]


def _phylogram_branch(line: list, p: DrawNode, marks: list, end: int) -> int:
    """Draw node p's branch on its row (the root: `+`); returns where the printed line ends."""
    if p.anc is None:
        line[p.x] = "+"
        return end
    frm, to = p.anc.x, p.x
    line[frm + 1:to + 1] = ["-"] * (to - frm)
    if p is p.anc.kids[0]:
        line[frm] = "/" if marks[frm] == 0 else "|"
        marks[frm] += 1
    elif p is p.anc.kids[-1]:
        line[frm] = "\\" if marks[frm] == 1 else "|"
        marks[frm] -= 1
    if p.kids:
        line[to] = "+" if frm != to else "|"
        return end
    text = tip_label(p.name, p.index)
    _put(line, to + 2, text)
    return to + 2 + len(text)
