"""Splits (bipartitions) of trees as integer bitsets, normalised like MrBayes, and their counting.

Bit i stands for taxon i (0-based, in translate/taxon order). A split of an unrooted tree is stored
without the outgroup (taxon 0 by default): the side that holds the outgroup is complemented away,
which is how MrBayes prints splits ('.' on the outgroup side). Trees are given as nested tuples from
`mbgpu.output.tfile` (tips are ints, internal nodes tuples of children) or as `mbgpu.tree.Tree`.
"""
from __future__ import annotations

from typing import Iterable, Sequence

import numpy as np

from mbgpu.diagnostics import asdsf_msdsf, split_stddevs


def normalise(bits: int, n_taxa: int, outgroup: int = 0) -> int:
    """The side of a split that excludes the outgroup."""
    full = (1 << n_taxa) - 1
    return bits ^ full if bits >> outgroup & 1 else bits


def _clade_bits(node) -> list[int]:
    """Every interior node's taxa as a bitset, children before parents (the root's last)."""
    out: list[int] = []

    def walk(v) -> int:
        if isinstance(v, int):
            return 1 << v
        b = 0
        for c in v:
            b |= walk(c)
        out.append(b)
        return b

    walk(node)
    return out


def nested_splits(node, n_taxa: int, outgroup: int = 0) -> list[int]:
    """Non-trivial splits (2 <= size <= n-2 after normalising) of a nested-tuple tree."""
    res = []
    for b in _clade_bits(node):
        s = normalise(b, n_taxa, outgroup)
        if 2 <= bin(s).count("1") <= n_taxa - 2:
            res.append(s)
    return sorted(set(res))


def tree_splits(tree, outgroup: int = 0) -> list[int]:
    """Non-trivial normalised splits of an `mbgpu.tree.Tree` (parent-array tree)."""
    n = tree.n_tips
    bits = [0] * tree.n_nodes
    for v in range(n):
        bits[v] = 1 << v
    for v in tree.postorder().tolist():
        p = int(tree.parent[v])
        if p >= 0:
            bits[p] |= bits[v]
    res = set()
    for v in range(n, tree.n_nodes):
        s = normalise(bits[v], n, outgroup)
        if 2 <= bin(s).count("1") <= n - 2:
            res.add(s)
    return sorted(res)


def nested_clades(node, n_taxa: int) -> list[int]:
    """The clades of a rooted nested-tuple tree that MrBayes counts for a clock tree's split frequencies:
    every interior node's taxa but the root's, not normalised (a clade and its complement differ)."""
    return sorted(set(_clade_bits(node)[:-1]))


def rooted_clades(parent, n_tips: int) -> list[int]:
    """nested_clades of a rooted parent-array tree (a clock tree's: mbgpu.clock.chain_tree.ClockTree.state)."""
    n = len(parent)
    kids: list[list[int]] = [[] for _ in range(n)]
    root = -1
    for v in range(n):
        p = int(parent[v])
        if p >= 0:
            kids[p].append(v)
        else:
            root = v
    bits = [0] * n
    order, stack = [], [root]                 # preorder; reversed, every child comes before its parent
    while stack:
        v = stack.pop()
        order.append(v)
        stack.extend(kids[v])
    for v in reversed(order):
        bits[v] = 1 << v if v < n_tips else sum(bits[k] for k in kids[v])
    return sorted({bits[v] for v in range(n_tips, n) if parent[v] >= 0})


def split_string(bits: int, n_taxa: int) -> str:
    """MrBayes' '.**..' picture of a split."""
    return "".join("*" if bits >> i & 1 else "." for i in range(n_taxa))


class SplitCounter:
    """Counts splits per run as trees are sampled; ASDSF/MSDSF at any time, like MrBayes during mcmc.

    MrBayes counts sample k (k = 0 for gen 0) of every run; with relative burn-in it drops the first
    `int(burninfrac * n_samples)` samples before each diagnostic, with absolute burn-in the first
    `burnin` samples. Call `add(run, splits)` once per sampled tree (all runs sample together).
    """

    def __init__(self, n_runs: int, n_taxa: int, *, outgroup: int = 0, minpartfreq: float = 0.10,
                 relburnin: bool = True, burninfrac: float = 0.25, burnin: int = 0):
        self.n_runs, self.n_taxa, self.outgroup = n_runs, n_taxa, outgroup
        self.minpartfreq, self.relburnin = minpartfreq, relburnin
        self.burninfrac, self.burnin = burninfrac, burnin
        self.samples: list[list[tuple[int, ...]]] = [[] for _ in range(n_runs)]
        self.first_kept: int | None = None   # set: drop the samples before this one instead (ss, per step)

    def add(self, run: int, splits: Iterable[int]) -> None:
        """Record one sampled tree's normalised non-trivial splits (see `tree_splits`)."""
        self.samples[run].append(tuple(splits))

    def add_tree(self, run: int, tree) -> None:
        """A sampled tree's splits; a clock tree's (a ClockTree) are its rooted clades, as MrBayes counts them."""
        state = getattr(tree, "state", None)
        self.add(run, rooted_clades(state.parent, state.n_tips) if state is not None else tree_splits(tree, self.outgroup))

    def n_discarded(self) -> int:
        if self.first_kept is not None:
            return self.first_kept
        n = len(self.samples[0])
        return int(self.burninfrac * n) if self.relburnin else self.burnin

    def counts(self) -> tuple[list[int], np.ndarray, int]:
        """(split keys, int[n_splits, n_runs] counts after burn-in, samples per run)."""
        drop = self.n_discarded()
        table: dict[int, list[int]] = {}
        for r, trees in enumerate(self.samples):
            for sp in trees[drop:]:
                for s in sp:
                    table.setdefault(s, [0] * self.n_runs)[r] += 1
        keys = sorted(table)
        arr = np.array([table[k] for k in keys], dtype=np.int64).reshape(len(keys), self.n_runs)
        return keys, arr, max(len(self.samples[0]) - drop, 0)

    def asdsf(self) -> tuple[float, float]:
        """(average, maximum) std dev of split frequencies now; NaN average when no split qualifies."""
        _, arr, n = self.counts()
        if n <= 0 or arr.shape[0] == 0:
            return float("nan"), 0.0
        return asdsf_msdsf(arr, n, self.minpartfreq)


    def pairwise(self) -> list[tuple[int, int, float, float, int]]:
        """(run i, run j, average, maximum, qualifying splits) for every pair of runs i < j (0-based): the
        statistics of `asdsf` on those two runs alone, as MrBayes' allcomps=yes reports them."""
        _, arr, n = self.counts()
        out = []
        for i in range(self.n_runs):
            for j in range(i + 1, self.n_runs):
                pair = arr[:, [i, j]]
                sd = split_stddevs(pair[pair.sum(axis=1) > 0], n, self.minpartfreq) if n > 0 else np.zeros(0)
                total = 0.0
                for v in sd:                       # sequential sum like MrBayes
                    total += float(v)
                avg = total / sd.size if sd.size else float("nan")
                out.append((i, j, avg, float(np.max(sd)) if sd.size else 0.0, int(sd.size)))
        return out


def counts_from_runs(runs: Sequence[Sequence[Sequence[int]]], n_runs: int):
    """Helper: split counts from per-run lists of split lists (already post burn-in)."""
    table: dict[int, list[int]] = {}
    for r, trees in enumerate(runs):
        for sp in trees:
            for s in sp:
                table.setdefault(s, [0] * n_runs)[r] += 1
    keys = sorted(table)
    return keys, np.array([table[k] for k in keys], dtype=np.int64).reshape(len(keys), n_runs)
