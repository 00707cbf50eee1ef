"""The Mkv correction of `lset coding=variable` (standard data without constant characters), the one home
of it for every likelihood path: ln L -= W ln(1 - P), W the pattern weights' sum and P the probability of
the two unobservable patterns all-0 and all-1 under a binary Mk model with the division's rate categories,
+I and rate multiplier, as MrBayes 3.2.7a's two dummy characters. P comes from the current model every
time (a cached dummy instance would keep the start's gamma shape). Compiled, so the core calls it too.
"""
from __future__ import annotations

import math

import numba
import numpy as np

from mbgpu.jit import JIT_OPTIONS


@numba.njit(**JIT_OPTIONS)
def unobserved_probability(n_tips, parent, brlen, crates, cweights, pinvar, mult):
    """P(all-0) + P(all-1) on the tree (tips 0..n_tips-1, parent -1 at the root; brlen: the branch above each
    node, times `mult`) under binary Mk: P(same state after length x) = 1 - (1 - e^{-2x}) / 2 per category rate. The
    two patterns are equally likely (equal frequencies), so P = 2 ((1 - pinvar) L_0 + pinvar / 2)."""
    n, n_cat = parent.shape[0], crates.shape[0]
    order = _children_first(parent)
    a = np.ones((n, n_cat))           # P(pattern below v | state 0 at v); tips: all-0 pattern
    b = np.ones((n, n_cat))           # ... | state 1 at v
    b[:n_tips] = 0.0
    for r in range(n):
        v = order[r]
        p = parent[v]
        if p < 0:
            continue
        x = brlen[v] * mult
        for k in range(n_cat):
            diff = -0.5 * math.expm1(-2.0 * x * crates[k])
            same = 1.0 - diff
            av, bv = a[v, k], b[v, k]
            a[p, k] *= same * av + diff * bv
            b[p, k] *= diff * av + same * bv
    root = order[n - 1]
    lik = 0.0
    for k in range(n_cat):
        lik += cweights[k] * 0.5 * (a[root, k] + b[root, k])
    return 2.0 * ((1.0 - pinvar) * lik + 0.5 * pinvar)


@numba.njit(**JIT_OPTIONS)
def _children_first(parent):
    """Every node, each after all of its descendants (the root last): a reversed preorder."""
    n = parent.shape[0]
    first_kid = np.full(n, -1, dtype=np.int64)
    sibling = np.full(n, -1, dtype=np.int64)
    root = 0
    for v in range(n - 1, -1, -1):
        p = parent[v]
        if p < 0:
            root = v
        else:
            sibling[v] = first_kid[p]
            first_kid[p] = v
    order = np.empty(n, dtype=np.int64)
    stack = np.empty(n, dtype=np.int64)
    stack[0], top, m = root, 1, 0
    while top > 0:
        top -= 1
        v = stack[top]
        order[n - 1 - m] = v
        m += 1
        u = first_kid[v]
        while u >= 0:
            stack[top] = u
            top += 1
            u = sibling[u]
    return order


@numba.njit(**JIT_OPTIONS)
def correction(weight, n_tips, parent, brlen, crates, cweights, pinvar, mult):
    """What coding=variable adds to ln L: -weight ln(1 - P(unobservable patterns))."""
    return -weight * math.log1p(-unobserved_probability(n_tips, parent, brlen, crates, cweights, pinvar, mult))


@numba.njit(**JIT_OPTIONS)
def chain_corrections(c0, c1, todo, n_tips, parent_p, brlen_p, crates, cweights, pinvar, mult, weight, lnl_p):
    """The core's chains c0 <= c < c1 with todo != 0: their proposal's correction added to lnl_p[c] (model
    row 1, the proposed one, when todo is 2, else row 0)."""
    for c in range(c0, c1):
        if todo[c] != 0:
            row = 1 if todo[c] == 2 else 0
            lnl_p[c] += correction(weight, n_tips, parent_p[c], brlen_p[c], crates[c, row], cweights[c, row],
                                   pinvar[c, row], mult[c, row])


def model_correction(weights: np.ndarray, tree, model, mult: float) -> float:
    """The correction for a Tree under a SubstitutionModel (its rate categories and +I) and multiplier."""
    return float(correction(float(np.sum(weights)), tree.n_tips, np.asarray(tree.parent, dtype=np.int64),
                            np.asarray(tree.brlen, dtype=np.float64), np.asarray(model.category_rates, dtype=float),
                            np.asarray(model.category_weights, dtype=float), float(model.pinvar), float(mult)))
