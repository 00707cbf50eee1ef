"""Compiled branch-length moves of unrooted trees: Multiplier(V), Nodeslider(V), TLMultiplier(V).

Ports of mbgpu.moves.branch (MrBayes Move_BrLen, Move_NodeSlider, Move_TreeLen) acting on one chain's
node arrays (engine/core/trees.py) in place; each returns the log Hastings ratio (log proposal ratio
plus log Jacobian), or -inf for an aborted move (the caller then discards its scratch arrays). The
topology never changes. `lo`, `hi` are the branch-length limits (mbgpu.moves.base.brlen_bounds), `lam`
the move's lambda and `s` the chain's xoshiro state (engine/core/rng.py).

Also MrBayes' multiplicative reflection (`reflect`), the Larget-Simon multiplier (`multiply`) and the
autotuning rule of multipliers (`autotune_multiplier`), as in mbgpu.moves.base.
"""
from __future__ import annotations

import math

import numba

from mbgpu.core.rng import randint, uniform
from mbgpu.jit import JIT_OPTIONS

BRLENS_MIN = 1e-8    # MrBayes bayes.h BRLENS_MIN (as mbgpu.moves.base)
BRLENS_MAX = 100.0   # MrBayes bayes.h BRLENS_MAX
LAMBDA_MIN = 1e-4    # autotuning limits of a multiplier's lambda (as mbgpu.moves.base)
LAMBDA_MAX = 20.0


@numba.njit(**JIT_OPTIONS)
def reflect(x, lo, hi):
    """MrBayes' multiplicative reflection into [lo, hi] (x -> lo^2/x, x -> hi^2/x)."""
    while x < lo or x > hi:
        if x < lo:
            x = lo * lo / x
        if x > hi:
            x = hi * hi / x
    return x


@numba.njit(**JIT_OPTIONS)
def multiply(s, x, lam, lo, hi):
    """Larget-Simon multiplier x exp(lam (u - 1/2)), reflected; returns (new, log proposal ratio)."""
    new = reflect(x * math.exp(lam * (uniform(s) - 0.5)), lo, hi)
    return new, math.log(new / x)


@numba.njit(**JIT_OPTIONS)
def autotune_multiplier_within(value, acceptance_rate, target, batch, lo, hi):
    """MrBayes AutotuneMultiplier: log lambda moves by min(0.01, 1/sqrt(batch)) toward the target rate;
    the new value is kept only strictly inside (lo, hi), else `value` is returned unchanged."""
    delta = min(0.01, 1.0 / math.sqrt(max(batch, 1)))
    new = math.exp(math.log(value) + (delta if acceptance_rate > target else -delta))
    if lo < new < hi:
        return new
    return value


@numba.njit(**JIT_OPTIONS)
def autotune_multiplier(value, acceptance_rate, target, batch):
    """autotune_multiplier_within the limits (LAMBDA_MIN, LAMBDA_MAX) = (1e-4, 20) of mbgpu.moves.base.
    (No default arguments: numba's dispatch from Python is ~100 times slower with them.)"""
    return autotune_multiplier_within(value, acceptance_rate, target, batch, LAMBDA_MIN, LAMBDA_MAX)


@numba.njit(**JIT_OPTIONS)
def branch_multiplier(parent, kids, brlen, n_tips, s, lam, lo, hi):
    """Multiplier(V): one uniformly chosen branch times exp(lam (u - 1/2)), reflected into [lo, hi];
    log Hastings = log(new / old)."""
    n = parent.shape[0]
    v = randint(s, n)
    while parent[v] < 0:                 # every node but the root, uniformly
        v = randint(s, n)
    new, log_h = multiply(s, brlen[v], lam, lo, hi)
    brlen[v] = new
    return log_h


@numba.njit(**JIT_OPTIONS)
def tree_length_multiplier(parent, kids, brlen, n_tips, s, lam, lo, hi):
    """TLMultiplier(V): every branch times one factor exp(lam (u - 1/2)); aborted (-inf) when any
    branch would leave [lo, hi]; log Hastings = (number of branches) log(factor)."""
    scaler = math.exp(lam * (uniform(s) - 0.5))
    n = parent.shape[0]
    for v in range(n):                   # check first: an abort leaves the arrays unchanged
        if parent[v] >= 0:
            b = brlen[v] * scaler
            if b < lo or b > hi:
                return -math.inf
    n_edges = 0
    for v in range(n):
        if parent[v] >= 0:
            brlen[v] = brlen[v] * scaler
            n_edges += 1
    return n_edges * math.log(scaler)


@numba.njit(**JIT_OPTIONS)
def node_slider(parent, kids, brlen, n_tips, s, lam, lo, hi, anchor):
    """Nodeslider(V): pick an internal node p, its branch toward the `anchor` tip and one of its two
    other branches; multiply their summed length m (reflected into [2 lo, 2 hi]) and place p uniformly
    on the path: the other branch gets a uniform length in [max(lo, m - hi), min(hi, m - lo)].

    log Hastings = log(range_new / range_old) + 2 log(m_new / m_old) (MrBayes Move_NodeSlider).
    Returns -inf (aborted) in the degenerate cases of an empty old or new range (the summed length
    exactly at 2 lo or 2 hi), where the Python move raises (division by zero, log of zero).
    """
    n = parent.shape[0]
    p = n_tips + randint(s, n - n_tips)
    # the neighbour of p toward the anchor: the child on the anchor's path to the root when p lies on
    # it (p is an ancestor of the anchor), else p's parent
    down = parent[p]
    prev = -1
    u = anchor
    while u >= 0:
        if u == p:
            down = prev
            break
        prev = u
        u = parent[u]
    # the two other neighbours of p: children, then parent, skipping `down`
    o0 = -1
    o1 = -1
    for j in range(4):
        z = kids[p, j] if j < 3 else parent[p]
        if z >= 0 and z != down:
            if o0 < 0:
                o0 = z
            else:
                o1 = z
    q = o0 if uniform(s) < 0.5 else o1
    e_down = p if parent[p] == down else down     # node holding the branch p-down
    e_q = q if parent[q] == p else p
    old_m = brlen[e_down] + brlen[e_q]
    new_m = old_m * math.exp(lam * (uniform(s) - 0.5))
    while new_m < 2.0 * lo or new_m > 2.0 * hi:
        new_m = 4.0 * lo * lo / new_m if new_m < 2.0 * lo else 4.0 * hi * hi / new_m
    new_min = max(lo, new_m - hi)
    new_max = min(hi, new_m - lo)
    old_min = max(lo, old_m - hi)
    old_max = min(hi, old_m - lo)
    old_range = old_max - old_min
    if not (old_range > 0.0 and new_max > new_min):
        return -math.inf
    x_q = new_min + uniform(s) * (new_max - new_min)
    brlen[e_q] = x_q
    brlen[e_down] = max(new_m - x_q, lo)
    return math.log((new_max - new_min) / old_range) + 2.0 * math.log(new_m / old_m)
