"""The branch-length log prior of unconstrained trees, compiled (mbgpu.priors.brlens_log_prior).

`brlens_table(prior, n_tips)` turns the `brlenspr` value into (kind, args); `brlens_log_prior` computes
the term from a chain's arrays: exponential(lambda), uniform(lo, hi) or gammadir(aT, bT, a, c) with
the Dirichlet normalisation precomputed (it depends only on the numbers of terminal and internal edges).
"""
from __future__ import annotations

import math

import numba
import numpy as np

from mbgpu.jit import JIT_OPTIONS

EXPONENTIAL, UNIFORM, GAMMADIR, CLOCK = 0, 1, 2, 3      # CLOCK: a clock tree's terms (mbgpu.core.clock_moves)


def brlens_table(prior, n_tips: int) -> tuple[int, np.ndarray] | None:
    """(kind, args) of an unconstrained brlens prior on an unrooted tree of n_tips; None if not handled."""
    sub = getattr(prior, "sub", None)
    if prior.kind != "Unconstrained" or sub is None:
        return None
    args = [float(a) for a in sub.args]
    if sub.kind == "Exponential":
        return EXPONENTIAL, np.array(args[:1] + [0.0] * 4)
    if sub.kind == "Uniform":
        return UNIFORM, np.array(args[:2] + [0.0] * 3)
    if sub.kind == "GammaDir":
        a_t, b_t, a, c = args
        n_term, n_int = n_tips, n_tips - 3
        total = n_term * a + n_int * a * c
        norm = math.lgamma(total) - n_term * math.lgamma(a) - (n_int * math.lgamma(a * c) if n_int else 0.0)
        return GAMMADIR, np.array([a_t, b_t, a, c, norm])
    return None


@numba.njit(**JIT_OPTIONS)
def brlens_log_prior(kind, args, parent, brlen, n_tips):
    """log prior of the branch lengths of one tree (every node but the root)."""
    n = parent.shape[0]
    if kind == EXPONENTIAL:
        lam, total, count = args[0], 0.0, 0
        for v in range(n):
            if parent[v] >= 0:
                total += brlen[v]
                count += 1
        return count * math.log(lam) - lam * total
    if kind == UNIFORM:
        return -(n - 1) * math.log(args[1] - args[0])
    a_t, b_t, a, c, norm = args[0], args[1], args[2], args[3], args[4]
    tl = 0.0
    for v in range(n):
        if parent[v] >= 0:
            tl += brlen[v]
    log_tl = math.log(tl)
    log_dir = norm
    for v in range(n):
        if parent[v] >= 0:
            alpha = a if v < n_tips else a * c
            log_dir += (alpha - 1.0) * (math.log(brlen[v]) - log_tl)
    head = a_t * math.log(b_t) - math.lgamma(a_t)
    return head + (a_t - 1.0) * log_tl - b_t * tl + log_dir - (n - 2) * log_tl
