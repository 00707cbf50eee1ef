"""Topology constraints: MrBayes' `constraint NAME [hard|negative|partial] = taxa [: taxa]` and `prset
topologypr=constraints(NAME, ...)` on unrooted trees.

A hard constraint S asks for the split S | rest; a negative one forbids it; a partial one A : B asks for
a split with A on one side and B on the other (the other taxa anywhere). The prior on topologies is
uniform over the trees the hard constraints allow, as MrBayes' is (its log prior charges -log of their
number; negative and partial constraints leave the uniform-over-all term, as in MrBayes 3.2.7a). Every
topology proposal that breaks a constraint is rejected (mbgpu.core.constraint_check in the compiled
core, `ConstraintSet.satisfied` in the interpreted sampler), and start trees are drawn inside them.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from mbgpu.errors import CommandError, ModelError
from mbgpu.priors import log_double_factorial_odd
from mbgpu.tree import Tree

KINDS = ("hard", "negative", "partial")
HARD, NEGATIVE, PARTIAL = 0, 1, 2          # kind codes of the compiled check
_RANGE = re.compile(r"^(\d+)(?:-(\d+|\.))?$")       # `3-7`, or `3-.` up to the last taxon


@dataclass(frozen=True)
class Constraint:
    """One constraint over 0-based taxa: `taxa` (S, or A of a partial one) and `other` (B; else empty)."""

    name: str
    kind: str
    taxa: frozenset
    other: frozenset = frozenset()

    def describe(self) -> str:
        """MrBayes' line in the topology prior's description."""
        return '-- %s constraint "%s"' % (self.kind.capitalize(), self.name)


def taxon_list(words: list[str], taxa: list[str], taxsets: dict) -> frozenset:
    """0-based taxa of a NEXUS taxon list: names, 1-based numbers and ranges (`3-7`, `3-.`), taxset names,
    `all`.

    Raises:
        CommandError: an item that is none of these.
    """
    out: set[int] = set()
    lower = {t.lower(): i for i, t in enumerate(taxa)}
    for item in re.sub(r"\s*-\s*", "-", " ".join(words)).split():
        m = _RANGE.match(item)
        if m is not None:
            last = len(taxa) if m.group(2) == "." else int(m.group(2) or m.group(1))
            first = int(m.group(1))
            if not 1 <= first <= last <= len(taxa):
                raise CommandError("taxon range '%s' is outside 1-%d (ntax)" % (item, len(taxa)))
            out.update(range(first - 1, last))
        elif item in taxa or item.lower() in lower:
            out.add(taxa.index(item) if item in taxa else lower[item.lower()])
        elif item.lower() in taxsets:
            out.update(taxsets[item.lower()])
        elif item.lower() == "all":
            out.update(range(len(taxa)))
        else:
            raise CommandError("'%s' is neither a taxon, a taxon number nor a taxset" % item)
    return frozenset(out)


def parse_constraint(words: list[str], taxa: list[str], taxsets: dict) -> Constraint:
    """`NAME [hard|negative|partial] = taxa [: taxa]` (the words after `constraint`).

    Raises:
        CommandError: a malformed definition, an unknown taxon, a partial constraint without ':'.
    """
    if len(words) < 3 or "=" not in words:
        raise CommandError("expected 'constraint NAME [hard|negative|partial] = taxa [: taxa];'")
    eq = words.index("=")
    name, kind = words[0], "hard"
    if eq == 2:
        kind = next((k for k in KINDS if k.startswith(words[1].lower())), "")
        if not kind or not words[1]:
            raise CommandError("constraint %s: '%s' is not a constraint type (hard, negative, partial)"
                               % (name, words[1]))
    elif eq != 1:
        raise CommandError("expected 'constraint NAME [hard|negative|partial] = taxa [: taxa];'")
    body = words[eq + 1:]
    if ":" in body and kind != "partial":
        raise CommandError("constraint %s: only a partial constraint has a ':' part" % name)
    if kind == "partial" and ":" not in body:
        raise CommandError("constraint %s: a partial constraint is 'taxa : taxa'" % name)
    first = body[:body.index(":")] if ":" in body else body
    second = body[body.index(":") + 1:] if ":" in body else []
    if not first or (kind == "partial" and not second):
        raise CommandError("constraint %s names no taxa" % name)
    s, b = taxon_list(first, taxa, taxsets), taxon_list(second, taxa, taxsets)
    if s & b:
        raise CommandError("constraint %s: taxa on both sides of ':'" % name)
    return Constraint(name, kind, s, b)


def _side(split: frozenset, n: int) -> frozenset:
    """A split as its side without taxon 0 (the form Tree.splits uses)."""
    return frozenset(range(n)) - split if 0 in split else split


def _compatible(a: frozenset, b: frozenset, n: int) -> bool:
    """Whether two splits (sides without taxon 0) can be in one tree: nested or disjoint."""
    return a <= b or b <= a or not (a & b)


def trivial(c: Constraint, n: int) -> str | None:
    """Why MrBayes disregards a constraint on n taxa (a side of fewer than two taxa), else None."""
    if c.kind == "partial":
        return "one of its sides holds a single taxon" if min(len(c.taxa), len(c.other)) < 2 else None
    if len(c.taxa) < 2 or n - len(c.taxa) < 2:
        return "it refers to a single tip" if len(c.taxa) < n else "it includes every taxon"
    return None


class ConstraintSet:
    """The constraints of an analysis on n taxa (trivial ones left out by the caller): the topology
    prior they imply, the check of a tree, random start trees inside them, and arrays for the core."""

    def __init__(self, constraints: list[Constraint], n: int):
        self.n, self.items = n, list(constraints)
        self.hard = sorted({_side(c.taxa, n) for c in self.items if c.kind == "hard"}, key=lambda s: (len(s), sorted(s)))
        for i, a in enumerate(self.hard):
            for b in self.hard[i + 1:]:
                if not _compatible(a, b, n):
                    names = [c.name for c in self.items if c.kind == "hard" and _side(c.taxa, n) in (a, b)]
                    raise ModelError("hard constraints %s cannot hold in one tree (their groups overlap without "
                                     "one containing the other)" % " and ".join(names))
        self.children = self._hierarchy()

    def _hierarchy(self) -> dict:
        """Clade (side without taxon 0) -> its maximal sub-clades; the key `None` is the whole tree."""
        children: dict = {c: [] for c in self.hard}
        children[None] = []
        for i, c in enumerate(self.hard):
            parent = next((d for d in self.hard[i + 1:] if c < d), None)
            children[parent].append(c)
        return children

    def _members(self, clade) -> list:
        """A node of the constraint tree: its sub-clades and its own taxa."""
        subs = self.children[clade]
        covered = frozenset().union(*subs) if subs else frozenset()
        own = sorted((clade if clade is not None else frozenset(range(self.n))) - covered)
        return list(subs) + own

    def log_topology_prior(self) -> float:
        """-log of the number of unrooted binary topologies the hard constraints allow (MrBayes' term;
        uniform over all trees when there are none): the product of (2d - 5)!! over the constraint
        tree's nodes of degree d."""
        total = 0.0
        for clade in self.children:
            d = len(self._members(clade)) + (clade is not None)
            total += log_double_factorial_odd(2 * d - 5) if d > 3 else 0.0
        return -total

    def violated(self, tree: Tree) -> Constraint | None:
        """The first constraint `tree` breaks, or None."""
        if not self.items:
            return None
        splits = tree.splits()
        for c in self.items:
            if c.kind == "partial":
                ok = any(_apart(s, c.taxa, c.other) or _apart(frozenset(range(self.n)) - s, c.taxa, c.other)
                         for s in splits)
            else:
                ok = (_side(c.taxa, self.n) in splits) == (c.kind == "hard")
            if not ok:
                return c
        return None

    def random_tree(self, rng: np.random.Generator, brlen: float, tries: int = 10000) -> Tree:
        """A random unrooted tree that satisfies every constraint: the hard ones by construction (random
        resolution of the constraint tree), negative and partial ones by drawing again.

        Raises:
            ModelError: no such tree in `tries` draws.
        """
        index = {"t%d" % i: i for i in range(self.n)}
        for _ in range(tries):
            tree = Tree.from_newick(self._newick(None, rng, brlen) + ";", index).deroot()
            if self.violated(tree) is None:
                return tree
        raise ModelError("no random start tree satisfies the constraints in %d tries (give one: startvals tau=)"
                         % tries)

    def _newick(self, clade, rng: np.random.Generator, brlen: float) -> str:
        """A random binary resolution of a constraint-tree node as Newick (three items left at the top)."""
        items = [self._newick(m, rng, brlen) if isinstance(m, frozenset) else "t%d" % m
                 for m in self._members(clade)]
        keep = 3 if clade is None else 1
        while len(items) > keep:
            i, j = sorted(rng.choice(len(items), 2, replace=False).tolist())
            b, a = items.pop(j), items.pop(i)
            items.append("(%s:%g,%s:%g)" % (a, brlen, b, brlen))
        return "(%s)" % ",".join("%s:%g" % (x, brlen) for x in items) if clade is None else items[0]

    def arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(kind int64[k], a uint64[k, w], b uint64[k, w]) for mbgpu.core.constraint_check: bit sets of
        S and its complement (hard, negative) or of A and B (partial); w = ceil(n / 64)."""
        w = -(-self.n // 64)
        kind = np.array([KINDS.index(c.kind) for c in self.items], dtype=np.int64)
        a = np.zeros((len(self.items), w), dtype=np.uint64)
        b = np.zeros((len(self.items), w), dtype=np.uint64)
        for k, c in enumerate(self.items):
            other = c.other if c.kind == "partial" else frozenset(range(self.n)) - c.taxa
            for bits, taxa in ((a[k], c.taxa), (b[k], other)):
                for t in taxa:
                    bits[t // 64] |= np.uint64(1) << np.uint64(t % 64)
        return kind, a, b


def _apart(side: frozenset, a: frozenset, b: frozenset) -> bool:
    return a <= side and not (b & side)


def named(settings, names) -> list[Constraint]:
    """The constraints `names` of `prset topologypr=constraints(...)` (case-insensitive), in the order
    they were defined (MrBayes lists and checks them so).

    Raises:
        CommandError: a name no `constraint` command defined.
    """
    missing = [n for n in names if str(n).lower() not in settings.constraints]
    if missing:
        raise CommandError("topologypr=constraints(%s): no constraint called '%s' (constraints: %s)"
                           % (",".join(map(str, names)), missing[0],
                              ", ".join(c.name for c in settings.constraints.values()) or "none"))
    wanted = {str(n).lower() for n in names}
    return [c for key, c in settings.constraints.items() if key in wanted]     # MrBayes' order: as defined


def active(settings, divisions=None) -> ConstraintSet | None:
    """The constraints (`prset topologypr=constraints(...)`, trivial ones left out) of the 0-based
    `divisions`' topology (None: of all divisions, one topology), or None."""
    pr = settings.topology_prior(divisions)
    if pr is None or pr.kind != "Constraints":
        return None
    n = settings.matrix.ntax
    return ConstraintSet([c for c in named(settings, pr.args) if trivial(c, n) is None], n)
