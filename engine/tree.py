"""Trees as parent arrays: tips are nodes 0..n_tips-1 in taxon order, internal nodes follow.

`parent[v]` is -1 at the root; `brlen[v]` is the length of the branch above v (0 at the root). An
unrooted tree is stored as MrBayes stores it: a root with three children (a basal trifurcation).
The likelihood code only needs parent/brlen, postorder() and children().
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Mapping, Sequence, Union

import numpy as np

from mbgpu.errors import DataError
from mbgpu.tree_walks import postorder

BrlenSource = Union[float, Callable[[np.random.Generator, int], np.ndarray]]


@dataclass
class Tree:
    """A tree over `n_tips` taxa: `parent` int64[n_nodes] (-1 at the root), `brlen` float64[n_nodes]."""

    n_tips: int
    parent: np.ndarray
    brlen: np.ndarray

    def __post_init__(self) -> None:
        self.parent = np.asarray(self.parent, dtype=np.int64)
        self.brlen = np.asarray(self.brlen, dtype=np.float64)
        assert self.parent.shape == self.brlen.shape
        assert np.count_nonzero(self.parent < 0) == 1, "a tree has exactly one root"

    @property
    def n_nodes(self) -> int:
        return int(self.parent.size)

    @property
    def root(self) -> int:
        """The node whose parent is -1 (remembered while it still is: a tree has exactly one)."""
        r = self.__dict__.get("_root")
        if r is None or r >= self.parent.size or self.parent[r] >= 0:
            r = self._root = int(np.flatnonzero(self.parent < 0)[0])
        return r

    def copy(self) -> "Tree":
        """An independent copy; it shares the topology cache, which is checked against parent on use."""
        new = Tree(self.n_tips, self.parent.copy(), self.brlen.copy())
        if "_root" in self.__dict__:
            new._root = self._root            # checked against parent on use
        cached = getattr(self, "_topo_cache", None)
        if cached is not None:
            new._topo_cache = cached
        return new

    def children(self) -> list[list[int]]:
        """children()[v] lists v's children in increasing node order (a fresh list each call)."""
        return [list(k) for k in self._topology()[0]]

    def _topology(self) -> tuple:
        """(children, postorder) cached against the parent array's bytes (trees are rarely mutated)."""
        key = self.parent.tobytes()
        cached = getattr(self, "_topo_cache", None)
        if cached is not None and cached[0] == key:
            return cached[1]
        kids: list[list[int]] = [[] for _ in range(self.n_nodes)]
        for v, p in enumerate(self.parent.tolist()):
            if p >= 0:
                kids[p].append(v)
        value = (kids, self._postorder(kids))
        self._topo_cache = (key, value)
        return value

    def postorder(self) -> np.ndarray:
        """All nodes, every child before its parent, the root last (int64)."""
        return self._topology()[1].copy()

    def _postorder(self, kids) -> np.ndarray:
        order = postorder(self.root, kids)
        if len(order) != self.n_nodes:
            raise DataError("tree is not connected: %d of %d nodes reachable from the root"
                            % (len(order), self.n_nodes))
        return np.array(order, dtype=np.int64)

    def total_length(self) -> float:
        return float(self.brlen[self.parent >= 0].sum())

    def splits(self) -> set[frozenset[int]]:
        """Non-trivial bipartitions as frozensets of tips, normalised to the side without tip 0."""
        kids = self.children()
        below: dict[int, frozenset[int]] = {}
        out: set[frozenset[int]] = set()
        everything = frozenset(range(self.n_tips))
        for v in self.postorder().tolist():
            below[v] = frozenset([v]) if v < self.n_tips else frozenset().union(*(below[c] for c in kids[v]))
            side = below[v] if 0 not in below[v] else everything - below[v]
            if 1 < len(side) < self.n_tips - 1:
                out.add(side)
        return out

    # ------------------------------------------------------------------ re-rooting
    def _undirected(self) -> list[dict[int, float]]:
        """Adjacency with branch lengths; a degree-2 root is suppressed (its two branches joined)."""
        adj: list[dict[int, float]] = [dict() for _ in range(self.n_nodes)]
        for v, p in enumerate(self.parent.tolist()):
            if p >= 0:
                adj[v][p] = adj[p][v] = float(self.brlen[v])
        r = self.root
        if len(adj[r]) == 2:
            (a, la), (b, lb) = adj[r].items()
            del adj[a][r], adj[b][r]
            adj[a][b] = adj[b][a] = la + lb
            adj[r] = {}
        return adj

    def reroot(self, node: int) -> "Tree":
        """The same unrooted tree rooted at internal node `node` (a bifurcating root is removed first).

        Tips keep their numbers; internal nodes are renumbered in postorder with the root last.
        """
        if not self.n_tips <= node < self.n_nodes:
            raise ValueError("reroot needs an internal node, got %d" % node)
        adj = self._undirected()
        if not adj[node]:
            raise ValueError("node %d is the suppressed bifurcating root" % node)
        return _tree_from_adjacency(self.n_tips, adj, node)

    def deroot(self) -> "Tree":
        """An unrooted representation (trifurcating root) of this tree; unchanged when already so."""
        if len(self.children()[self.root]) != 2:
            return self.copy()
        adj = self._undirected()
        start = next(v for v in range(self.n_tips, self.n_nodes) if len(adj[v]) >= 3)
        return _tree_from_adjacency(self.n_tips, adj, start)

    def keep_tips(self, keep: Sequence[int]) -> "Tree":
        """The unrooted tree of the tips `keep` alone (MrBayes' `delete`): the other tips go, nodes left
        with one neighbour go, and a node left with two is joined into one branch (lengths added). Tip
        keep[i] becomes tip i."""
        adj = self._undirected()
        gone = set(range(self.n_tips)) - set(keep)
        stack = list(gone)
        while stack:
            v = stack.pop()
            for w in list(adj[v]):
                del adj[w][v]
                if w >= self.n_tips and len(adj[w]) <= 1 and w not in gone:
                    gone.add(w)
                    stack.append(w)
            adj[v] = {}
        for v in range(self.n_tips, self.n_nodes):
            if len(adj[v]) == 2:
                (a, la), (b, lb) = adj[v].items()
                del adj[a][v], adj[b][v]
                adj[a][b] = adj[b][a] = la + lb
                adj[v] = {}
        new = {old: i for i, old in enumerate(keep)}
        inner = [v for v in range(self.n_tips, self.n_nodes) if adj[v]]
        new.update({old: len(keep) + i for i, old in enumerate(inner)})
        small = [dict() for _ in range(len(new))]
        for old, i in new.items():
            small[i] = {new[w]: length for w, length in adj[old].items()}
        if len(keep) < 3 or not inner:
            raise ValueError("a tree needs at least 3 tips, %d kept" % len(keep))
        start = next(i for i in range(len(keep), len(new)) if len(small[i]) >= 3)
        return _tree_from_adjacency(len(keep), small, start)

    # ------------------------------------------------------------------ Newick
    @classmethod
    def from_newick(cls, text: str, taxon_index: Mapping[str, int]) -> "Tree":
        """Parse Newick text; tip labels resolve through `taxon_index` (names and translate keys)."""
        return _parse_newick(text, taxon_index)

    def to_newick(self, names: Sequence[str], precision: int | None = None) -> str:
        """Newick with branch lengths (shortest round-trip repr, or `%.{precision}g`), quoted labels."""
        kids = self.children()
        text: dict[int, str] = {}
        for v in self.postorder().tolist():
            if v < self.n_tips:
                label = _quote(names[v])
            else:
                label = "(" + ",".join(text.pop(c) for c in kids[v]) + ")"
            if self.parent[v] >= 0:
                x = float(self.brlen[v])
                label += ":" + (repr(x) if precision is None else "%.*g" % (precision, x))
            text[v] = label
        return text[self.root] + ";"


def _quote(name: str) -> str:
    """Quote a label containing Newick punctuation or blanks (NEXUS style, '' escapes a quote)."""
    if any(ch in name for ch in " \t\n()[]{}/\\,;:=*'\"`+-<>"):
        return "'" + name.replace("'", "''") + "'"
    return name


def _tree_from_adjacency(n_tips: int, adj: list[dict[int, float]], root: int) -> Tree:
    """Direct an undirected tree away from `root`; internal nodes renumbered postorder, root last."""
    parent_of = {root: -1}
    order = [root]
    for v in order:
        for w in sorted(adj[v]):
            if w not in parent_of:
                parent_of[w] = v
                order.append(w)
    internal = [v for v in reversed(order) if v >= n_tips]
    new_id = {v: v for v in range(n_tips)}
    new_id.update({v: n_tips + i for i, v in enumerate(internal)})
    n_nodes = n_tips + len(internal)
    parent = np.full(n_nodes, -1, dtype=np.int64)
    brlen = np.zeros(n_nodes)
    for v, p in parent_of.items():
        if p >= 0:
            parent[new_id[v]] = new_id[p]
            brlen[new_id[v]] = adj[v][p]
    return Tree(n_tips, parent, brlen)


def _draw_lengths(brlen: BrlenSource, rng: np.random.Generator, n: int) -> np.ndarray:
    if callable(brlen):
        return np.asarray(brlen(rng, n), dtype=np.float64)
    return np.full(n, float(brlen))


def random_tree(n_tips: int, rng: np.random.Generator, brlen: BrlenSource | None = None) -> Tree:
    """A random unrooted binary tree (trifurcating root) by stepwise addition of tips on random edges.

    `brlen`: a constant, or a function (rng, n) -> n lengths; default exponential with mean 0.1.
    """
    if n_tips < 3:
        raise ValueError("random_tree needs at least 3 tips")
    n_nodes = 2 * n_tips - 2
    parent = np.full(n_nodes, -1, dtype=np.int64)
    root = n_tips
    parent[[0, 1, 2]] = root
    next_internal = n_tips + 1
    edges = [0, 1, 2]                       # nodes whose parent edge can be split
    for tip in range(3, n_tips):
        below = edges[int(rng.integers(len(edges)))]
        mid = next_internal
        next_internal += 1
        parent[mid] = parent[below]
        parent[below] = mid
        parent[tip] = mid
        edges.extend([mid, tip])
    lengths = _draw_lengths(brlen if brlen is not None else (lambda g, n: g.exponential(0.1, n)),
                            rng, n_nodes)
    lengths[root] = 0.0
    tree = Tree(n_tips, parent, lengths)
    return _tree_from_adjacency(n_tips, tree._undirected(), root)


# ---------------------------------------------------------------------- Newick reading
_PUNCT = "(),:;[]'"


def _newick_tokens(text: str) -> list[tuple[str, str, int]]:
    """Tokens (kind, value, offset): kind is one of ( ) , : ; or 'label'. Comments [..] are dropped."""
    out: list[tuple[str, str, int]] = []
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch.isspace():
            i += 1
        elif ch == "[":
            depth, j = 1, i + 1
            while j < n and depth:
                depth += {"[": 1, "]": -1}.get(text[j], 0)
                j += 1
            if depth:
                raise DataError("tree: unterminated comment starting at character %d" % (i + 1))
            i = j
        elif ch == "'":
            j, buf = i + 1, []
            while True:
                k = text.find("'", j)
                if k < 0:
                    raise DataError("tree: unterminated quoted label at character %d" % (i + 1))
                buf.append(text[j:k])
                if k + 1 < n and text[k + 1] == "'":
                    buf.append("'")
                    j = k + 2
                    continue
                break
            out.append(("label", "".join(buf), i))
            i = k + 1
        elif ch in "(),:;":
            out.append((ch, ch, i))
            i += 1
        elif ch == "]":
            raise DataError("tree: unexpected ']' at character %d" % (i + 1))
        else:
            j = i
            while j < n and not text[j].isspace() and text[j] not in _PUNCT:
                j += 1
            out.append(("label", text[i:j].replace("_", " "), -1 - i))
            i = j
    return out


def _resolve(label: str, quoted: bool, taxon_index: Mapping[str, int]) -> int:
    """Tip index of a label: exact, else with blanks/underscores swapped (NEXUS unquoted labels)."""
    candidates = [label] if quoted else [label, label.replace(" ", "_")]
    candidates.append(label.replace("_", " "))
    for c in candidates:
        if c in taxon_index:
            return int(taxon_index[c])
    raise DataError("tree: unknown taxon %r" % label)


def tips_in_written_order(text: str, taxon_index: Mapping[str, int]) -> list[int]:
    """The tip indices of a Newick text in the order they are written (the labels after '(' or ',').
    MrBayes keeps a user tree's written order as its nodes' left/right, and prints trees in it."""
    out: list[int] = []
    prev = ""
    for kind, value, where in _newick_tokens(text):
        if kind == "label" and prev in ("(", ","):
            out.append(_resolve(value, where >= 0, taxon_index))
        prev = kind
    return out


def _parse_newick(text: str, taxon_index: Mapping[str, int]) -> Tree:
    """Iterative Newick parser (deep trees do not hit the recursion limit)."""
    tokens = _newick_tokens(text)
    parent: list[int] = []
    length: list[float] = []
    tip_of: dict[int, int] = {}
    stack: list[int] = []
    last = -1                      # node just closed (a tip or ')'), awaiting label / length
    pos = 0

    def new_node() -> int:
        parent.append(stack[-1] if stack else -1)
        length.append(0.0)
        return len(parent) - 1

    while pos < len(tokens):
        kind, value, where = tokens[pos]
        pos += 1
        if kind == ";":
            break
        if kind == "(":
            if last >= 0:
                raise DataError("tree: '(' after a complete subtree at character %d" % (where + 1))
            stack.append(new_node())
        elif kind in (",", ")"):
            if last < 0 or not stack:
                raise DataError("tree: misplaced %r at character %d" % (kind, where + 1))
            last = stack.pop() if kind == ")" else -1
        elif kind == "label":
            if last < 0:
                last = new_node()
                tip_of[last] = _resolve(value, where >= 0, taxon_index)
            elif last in tip_of:
                raise DataError("tree: unexpected label %r after taxon" % value)
            # else: a label on an internal node (support value, name): ignored
        else:  # ':'
            if last < 0 or pos >= len(tokens) or tokens[pos][0] != "label":
                raise DataError("tree: ':' must follow a subtree and precede a number")
            raw = tokens[pos][1].replace(" ", "_")
            pos += 1
            try:
                length[last] = float(raw)
            except ValueError:
                raise DataError("tree: bad branch length %r" % raw) from None
    if stack:
        raise DataError("tree: %d unclosed '('" % len(stack))
    if pos < len(tokens):
        raise DataError("tree: text after ';'")
    return _assemble(parent, length, tip_of, taxon_index)


def _assemble(parent: list[int], length: list[float], tip_of: dict[int, int],
              taxon_index: Mapping[str, int]) -> Tree:
    """Renumber parsed nodes: tips by taxon index, internal nodes in postorder with the root last."""
    n_tips = len(set(int(v) for v in taxon_index.values()))
    seen: dict[int, int] = {}
    for node, tip in tip_of.items():
        if tip in seen:
            raise DataError("tree: taxon number %d appears twice" % (tip + 1))
        seen[tip] = node
    missing = sorted(set(range(n_tips)) - set(seen))
    if missing or len(seen) != n_tips:
        names = {int(v): k for k, v in taxon_index.items()}
        raise DataError("tree: missing taxa: %s" % ", ".join(names.get(i, str(i + 1)) for i in missing[:10]))
    if len(parent) == 1 or not tip_of:
        raise DataError("tree: needs at least two taxa")
    adj: list[dict[int, float]] = [dict() for _ in range(len(parent))]
    for v, p in enumerate(parent):
        if p >= 0:
            adj[v][p] = adj[p][v] = length[v]
    mapping = {node: tip for node, tip in tip_of.items()}
    internal = [v for v in range(len(parent)) if v not in mapping]
    order = {v: n_tips + i for i, v in enumerate(internal)}
    order.update(mapping)
    relabelled = [dict() for _ in range(len(parent))]
    for v in range(len(parent)):
        relabelled[order[v]] = {order[w]: l for w, l in adj[v].items()}
    root = order[next(v for v, p in enumerate(parent) if p < 0)]
    return _tree_from_adjacency(n_tips, relabelled, root)
