"""The `.t` tree file as MrBayes 3.2.7a writes it, and a reader for MrBayes' and our .t files.

Writer: `#NEXUS`, `[ID: n]`, `[Param: tree]`, `begin trees;`, a translate block (`%*d name,` right-aligned
to 8 characters for <= 99 taxa like MrBayes), one line per sample
`   tree gen.N = [&U] newick;` with branch lengths formatted by `set precision/scientific`, and `end;`.
Reader: the last `begin trees` block: translate table, tree names and nested-tuple topologies with
branch lengths, `[&...]` comments stripped; and the `[Param: ...]` name (`tree{2}` in a file of one of
several trees), which sumt puts into its `length{2}[i]` names.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Sequence, TextIO

from mbgpu.errors import InputFileError, Location


def format_length(x: float, scientific: bool = True, precision: int = 6) -> str:
    return "%.*e" % (precision, x) if scientific else "%.*f" % (precision, x)


class TFileWriter:
    """Writes the header on creation, `tree(gen, newick)` per sample, `close()` writes `end;`."""

    def __init__(self, stream: TextIO, run_id: str, taxa: Sequence[str], *, param: str = "tree",
                 header: bool = True):
        self.stream = stream
        if not header:  # continuing a file after a checkpoint
            return
        stream.write("#NEXUS\n[ID: %s]\n[Param: %s]\nbegin trees;\n   translate\n" % (run_id, param))
        width = max(len(str(len(taxa))), 2) + 6
        for i, name in enumerate(taxa):
            stream.write("%*d %s%s\n" % (width, i + 1, name, ";" if i == len(taxa) - 1 else ","))
        stream.flush()

    def tree(self, gen: int, newick: str, rooted: bool = False) -> None:
        self.stream.write("   tree gen.%d = [&%s] %s;\n" % (gen, "R" if rooted else "U", newick))
        self.stream.flush()

    def clock_tree(self, gen: int, text: str) -> None:
        """A clock tree's line: `text` is mbgpu.output.clock_trees.clock_tree_text (`[&B ..] = [&R] ...`)."""
        self.stream.write("   tree gen.%d %s;\n" % (gen, text))
        self.stream.flush()

    def close(self) -> None:
        self.stream.write("end;\n")
        self.stream.flush()


def newick_of(tree, scientific: bool = True, precision: int = 6, outgroup: int = 0,
              order_taxa: bool = False) -> str:
    """Newick of an `mbgpu.tree.Tree` with 1-based tip numbers (translate indices), MrBayes' number format.

    Unrooted trees are written as MrBayes writes them: the basal trifurcation is the outgroup's neighbour
    and the outgroup comes last, so no written clade holds the outgroup (sumt relies on that).
    `order_taxa` (`mcmc ordertaxa=yes`) orders the basal subtrees as MrBayes 3.2.7a does (basal_order).
    """
    kids = tree.children()
    parent = tree.parent
    fmt = lambda v: format_length(float(tree.brlen[v]), scientific, precision)  # noqa: E731
    og = outgroup
    base = int(parent[outgroup]) if 0 <= outgroup < len(parent) and not kids[outgroup] else -1
    if base < 0 or len(kids[tree.root]) == 2:
        base, outgroup = tree.root, -1

    def neighbours(v: int, came: int) -> list[tuple[int, str]]:
        """(node, length of the edge to it) for every neighbour of v but `came`, children first."""
        out = [(c, fmt(c)) for c in kids[v] if c != came and c != outgroup]
        up = int(parent[v])
        if up >= 0 and up != came:
            out.append((up, fmt(v)))
        return out

    def rec(v: int, came: int, length: str) -> str:
        nb = neighbours(v, came)
        if not nb:
            return "%d:%s" % (v + 1, length)
        return "(%s):%s" % (",".join(rec(w, v, ln) for w, ln in nb), length)

    first = neighbours(base, -1)
    if order_taxa:
        first = basal_order(first, base, lambda v, came: [w for w, _ in neighbours(v, came)], og)
    parts = [rec(w, base, ln) for w, ln in first]
    if outgroup >= 0:
        parts.append("%d:%s" % (outgroup + 1, fmt(outgroup)))
    return "(%s)" % ",".join(parts)


def basal_order(first: list, base: int, away, outgroup: int) -> list:
    """`first` (base's written subtrees, (node, length) pairs) reordered as MrBayes 3.2.7a's ordertaxa does.

    MrBayes labels every node with its smallest taxon index (the outgroup counting as -1) and means to
    put the smaller label left at every node, but its loop only reaches the root's child: only the
    subtrees at the base are ordered, by their smallest taxon (the outgroup's side first), each kept as
    it is. `away(v, came)` lists v's neighbours but `came`, as written.
    """
    def smallest(v: int, came: int) -> int:
        nxt = away(v, came)
        if not nxt:
            return -1 if v == outgroup else v
        return min(smallest(w, v) for w in nxt)

    return sorted(first, key=lambda item: smallest(item[0], base))


@dataclass
class TreeSample:
    """One `tree NAME = ...;` line: name, nested tuples of tip indices (0-based), lengths by node."""

    name: str
    rooted: bool
    topology: object
    lengths: dict = field(default_factory=dict)   # id(node tuple) is not stable; see parse_newick
    clockrate: float | None = None                # `[&clockrate=...]`: a clock tree whose rate is free
    relaxed: bool = False                         # `[&B ...]`/`[&E ...]` relaxed-clock annotations
    branch_sets: dict = field(default_factory=dict)   # `[&B name x]` values by name, in edge order (root none)
    events: bool = False                          # `[&E ...]` (CPP event counts) present


@dataclass
class TFile:
    path: str
    stamp: str
    taxa: list[str]
    trees: list[TreeSample]
    param: str = "tree"          # the `[Param: ...]` name, blanks removed as MrBayes' sumt reads it


_TOKEN = re.compile(r"\s*([(),:;]|[^(),:;\s]+)")


def parse_newick(text: str, index: dict, where: Location):
    """Parse newick into (nested tuple, list of (tipset bits, length)) with 0-based tip indices."""
    pos = 0
    edges: list[tuple[int, float]] = []

    def tok():
        nonlocal pos
        m = _TOKEN.match(text, pos)
        if not m:
            raise InputFileError("malformed tree description", where)
        pos = m.end()
        return m.group(1)

    def peek():
        m = _TOKEN.match(text, pos)
        return m.group(1) if m else ""

    def node():
        t = tok()
        if t == "(":
            kids, bits = [], 0
            while True:
                k, b = node()
                kids.append(k)
                bits |= b
                t = tok()
                if t == ")":
                    break
                if t != ",":
                    raise InputFileError("expected ',' or ')' in tree", where)
            res = tuple(kids)
        else:
            if t not in index:
                raise InputFileError("unknown taxon '%s' in tree" % t, where)
            res, bits = index[t], 1 << index[t]
        length = float("nan")
        if peek() == ":":
            tok()
            try:
                length = float(tok())
            except ValueError:
                raise InputFileError("bad branch length", where) from None
        edges.append((bits, length))
        return res, bits

    topo, _ = node()
    return topo, edges


def _branch_sets(body: str, where: Location) -> dict[str, list[float]]:
    """The `[&B name value]` comments of a relaxed-clock tree by name: each follows a node's length, so
    in written order they run in the postorder of the edges (the root has none)."""
    sets: dict[str, list[float]] = {}
    for name, value in re.findall(r"\[&B\s+(\S+)\s+([^\]\s]+)\]", body):
        try:
            sets.setdefault(name, []).append(float(value))
        except ValueError:
            raise InputFileError("bad branch value '%s'" % value, where) from None
    return sets


def _rate(found, path: str, i: int) -> float | None:
    """The value of a tree's `[&clockrate=...]` comment, if it has one."""
    if found is None:
        return None
    try:
        return float(found.group(1))
    except ValueError:
        raise InputFileError("bad clockrate '%s'" % found.group(1), Location(path, i + 1, 1)) from None


def read_tfile(path: str) -> TFile:
    """Read the last trees block of a .t file (MrBayes' or ours)."""
    try:
        with open(path, "r", encoding="utf-8", errors="replace") as fh:
            lines = fh.read().splitlines()
    except OSError as exc:
        raise InputFileError("cannot read tree file: %s" % exc.strerror, Location(path)) from None
    stamp, param = "", "tree"
    begins = [i for i, l in enumerate(lines) if l.strip().lower().startswith("begin trees")]
    for l in lines:
        m = re.match(r"\s*\[ID:\s*([^\]]*)\]", l)
        if m:
            stamp = m.group(1).strip()
            break
    for l in lines[:begins[-1] if begins else 0]:
        m = re.match(r"\s*\[Param\s*:([^\]]*)\]", l, re.I)
        if m:
            param = "".join(m.group(1).split())
    if not begins:
        raise InputFileError("no 'begin trees' block", Location(path))
    taxa: list[str] = []
    trees: list[TreeSample] = []
    i, in_tr = begins[-1] + 1, False
    index: dict[str, int] = {}
    while i < len(lines):
        line = lines[i].strip()
        low = line.lower()
        if low.startswith("translate"):
            in_tr = True
        elif in_tr and line:
            for part in line.rstrip(";").split(","):
                bits = part.split()
                if len(bits) >= 2:
                    index[bits[0]] = len(taxa)
                    index[" ".join(bits[1:])] = len(taxa)
                    taxa.append(" ".join(bits[1:]))
            if line.endswith(";"):
                in_tr = False
        elif low.startswith("tree "):
            m = re.match(r"tree\s+(\S+)\s*(?:\[[^\]]*\]\s*)*=\s*(.*)$", line, re.I)
            if not m or not m.group(2).endswith(";"):
                raise InputFileError("malformed tree line", Location(path, i + 1, 1))
            body = m.group(2)[:-1]
            rooted = "[&R]" in body
            rate = re.search(r"\[&clockrate=([^\]]*)\]", body)
            relaxed = re.search(r"\[&[BE]\s", line) is not None
            sets = _branch_sets(body, Location(path, i + 1, 1))
            events = re.search(r"\[&E\s", body) is not None
            body = re.sub(r"\[[^\]]*\]", "", body)
            topo, edges = parse_newick(body, index, Location(path, i + 1, 1))
            trees.append(TreeSample(m.group(1), rooted, topo, dict(edges=edges), _rate(rate, path, i), relaxed,
                                    sets, events))
        elif low.startswith("end;"):
            break
        i += 1
    if not trees:
        raise InputFileError("no trees in the last trees block", Location(path))
    return TFile(path, stamp, taxa, trees, param)
