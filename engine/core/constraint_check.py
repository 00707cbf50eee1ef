"""The compiled check of topology constraints (mbgpu.constraints) on one chain's proposed tree: a topology
proposal that breaks one is rejected (log Hastings -inf), as MrBayes rejects moves that break them.

`cons` = (kind int64[k], a uint64[k, w], b uint64[k, w]) from ConstraintSet.arrays(): per constraint its
kind (0 hard, 1 negative, 2 partial) and two taxon bit sets (S and its complement, or A and B). A tree
holds a hard constraint when some branch has S or its complement below it, a negative one when none
does, a partial one when some branch has A and none of B below it, or B and none of A.
"""
from __future__ import annotations

import numba
import numpy as np

from mbgpu.jit import JIT_OPTIONS

HARD, NEGATIVE, PARTIAL = 0, 1, 2


@numba.njit(**JIT_OPTIONS)
def _below(parent, kids, n_tips, w):
    """uint64[N, w]: the taxa below each node (the root's row: every taxon)."""
    n = parent.shape[0]
    bits = np.zeros((n, w), dtype=np.uint64)
    order = np.empty(n, dtype=np.int64)          # preorder from the root, then walked backwards
    root = 0
    while parent[root] >= 0:
        root = parent[root]
    order[0], size = root, 1
    k = 0
    while k < size:
        v = order[k]
        for j in range(kids.shape[1]):
            c = kids[v, j]
            if c >= 0:
                order[size] = c
                size += 1
        k += 1
    for k in range(size - 1, -1, -1):
        v = order[k]
        if v < n_tips:
            bits[v, v // 64] |= np.uint64(1) << np.uint64(v % 64)
        else:
            for j in range(kids.shape[1]):
                c = kids[v, j]
                if c >= 0:
                    for i in range(w):
                        bits[v, i] |= bits[c, i]
    return bits


@numba.njit(**JIT_OPTIONS)
def _equal(x, y):
    for i in range(x.shape[0]):
        if x[i] != y[i]:
            return False
    return True


@numba.njit(**JIT_OPTIONS)
def _apart(x, a, b):
    """Whether bit set x holds all of a and none of b."""
    for i in range(x.shape[0]):
        if (x[i] & a[i]) != a[i] or (x[i] & b[i]) != 0:
            return False
    return True


@numba.njit(**JIT_OPTIONS)
def constraints_hold(parent, kids, n_tips, kind, a, b):
    """Whether the tree (parent, kids of one chain) satisfies every constraint of `cons` = (kind, a, b)."""
    if kind.shape[0] == 0:
        return True
    bits = _below(parent, kids, n_tips, a.shape[1])
    for k in range(kind.shape[0]):
        found = False
        for v in range(parent.shape[0]):
            if parent[v] < 0:
                continue
            x = bits[v]
            if kind[k] == PARTIAL:
                hit = _apart(x, a[k], b[k]) or _apart(x, b[k], a[k])
            else:
                hit = _equal(x, a[k]) or _equal(x, b[k])
            if hit:
                found = True
                break
        if found != (kind[k] != NEGATIVE):
            return False
    return True


def no_constraints(n_tips: int) -> tuple:
    """`cons` of an analysis without constraints (the same types, no rows)."""
    w = -(-n_tips // 64)
    return (np.zeros(0, dtype=np.int64), np.zeros((0, w), dtype=np.uint64), np.zeros((0, w), dtype=np.uint64))


def per_tree(csets, n_tips: int) -> tuple:
    """`cons` of every tree of a chain, one after another, with `first` int64[trees + 1]: tree t's rows are
    first[t]:first[t + 1] (`csets`: per tree a ConstraintSet or None; `prset applyto=(k) topologypr=...`)."""
    parts = [c.arrays() if c is not None else no_constraints(n_tips) for c in csets]
    first = np.cumsum([0] + [len(p[0]) for p in parts]).astype(np.int64)
    return tuple(np.concatenate([p[i] for p in parts]) for i in range(3)) + (first,)
