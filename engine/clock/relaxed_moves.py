"""Moves of MrBayes 3.2.7a's igr and tk02 relaxed clocks (proposal.c): Multiplier(Igrvar) (Move_IgrVar),
Multiplier(IgrBrlens) (Move_IgrBranchRate), Multiplier(TK02var) (Move_Nu) and Multiplier(TK02Brlens)
(Move_TK02BranchRate), as plain loops over the clock-tree arrays of mbgpu.clock.rooted.

State: `rates[v]` is the igr rate of the branch above v, or the tk02 rate of node v (the root's stays 1);
`eff[v]` the effective branch length the likelihood reads (rate x length for igr, length x the mean of the
node's and its parent's rates for tk02; 0 at the root). A move changes the arrays in place and returns its
log proposal ratio, or -inf where MrBayes aborts the move (the caller then restores the state as for any
rejection); the caller recomputes the prior (mbgpu.clock.relaxed plus the hyperprior). Hyperparameter
moves return (new value, log proposal ratio).
"""
from __future__ import annotations

import math

import numba

from mbgpu.clock.limits import RATE_MAX, RATE_MIN, RELBRLENS_MAX, RELBRLENS_MIN, TIME_MIN
from mbgpu.core import rng
from mbgpu.core.branch_moves import reflect      # MrBayes' multiplier reflection (lo²/x, hi²/x)
from mbgpu.jit import JIT_OPTIONS


LAMBDA = 2.0 * math.log(1.1)         # default multiplier tuning of all four moves (showmoves: 0.191)
TARGET_RATE = 0.25                   # autotune target of all four moves
WEIGHT_IGRVAR = 2.0                  # Multiplier(Igrvar)
WEIGHT_IGR_BRLENS = 15.0             # Multiplier(IgrBrlens)
WEIGHT_TK02VAR = 2.0                 # Multiplier(TK02var)
WEIGHT_TK02_BRLENS = 15.0            # Multiplier(TK02Brlens)


@numba.njit(**JIT_OPTIONS)
def var_bounds(floor: float, ceiling: float, uniform_lo: float, uniform_hi: float):
    """Reflection bounds of igrvar / tk02var: (floor, ceiling) = (IGRVAR_MIN, IGRVAR_MAX) or the TK02 ones,
    narrowed to a uniform prior's (lo, hi) as Move_IgrVar / Move_Nu do; pass (0, inf) for other priors."""
    return max(floor, uniform_lo), min(ceiling, uniform_hi)


@numba.njit(**JIT_OPTIONS)
def multiply(s, old: float, tuning: float, lo: float, hi: float):
    """(new, log proposal ratio) of old x exp((1/2 - u) tuning) reflected into [lo, hi] (Move_IgrVar,
    Move_Nu, Move_CPPRate draw it this way round)."""
    new = reflect(old * math.exp((0.5 - rng.uniform(s)) * tuning), lo, hi)
    return new, math.log(new / old)


@numba.njit(**JIT_OPTIONS)
def move_igrvar(s, old: float, tuning: float, lo: float, hi: float):
    """Multiplier(Igrvar), Move_IgrVar: (new igrvar, log proposal ratio); [lo, hi] from var_bounds."""
    return multiply(s, old, tuning, lo, hi)


@numba.njit(**JIT_OPTIONS)
def move_tk02var(s, old: float, tuning: float, lo: float, hi: float):
    """Multiplier(TK02var), Move_Nu: (new tk02var, log proposal ratio); [lo, hi] from var_bounds."""
    return multiply(s, old, tuning, lo, hi)


@numba.njit(**JIT_OPTIONS)
def pick_timed_branch(s, parent, depth) -> int:
    """A node drawn uniformly among the non-root nodes, redrawn while its branch is shorter than TIME_MIN
    (MrBayes' allDownPass[0 .. nNodes-3] draw of Move_IgrBranchRate / Move_TK02BranchRate)."""
    n = parent.shape[0]
    root = 0
    while parent[root] >= 0:
        root += 1
    while True:
        v = rng.randint(s, n - 1)
        if v >= root:
            v += 1
        if depth[parent[v]] - depth[v] >= TIME_MIN:
            return v


@numba.njit(**JIT_OPTIONS)
def _in_bounds(x: float) -> bool:
    return RELBRLENS_MIN <= x <= RELBRLENS_MAX


@numba.njit(**JIT_OPTIONS)
def move_igr_branch_rate(s, parent, depth, rates, eff, tuning: float) -> float:
    """Multiplier(IgrBrlens), Move_IgrBranchRate: one branch rate times exp((1/2 - u) tuning), reflected
    into [RATE_MIN, RATE_MAX]; -inf if its effective length leaves [RELBRLENS_MIN, RELBRLENS_MAX]."""
    v = pick_timed_branch(s, parent, depth)
    old = rates[v]
    new = reflect(old * math.exp((0.5 - rng.uniform(s)) * tuning), RATE_MIN, RATE_MAX)
    rates[v] = new
    eff[v] = new * (depth[parent[v]] - depth[v])
    if not _in_bounds(eff[v]):
        return -math.inf
    return math.log(new / old)


@numba.njit(**JIT_OPTIONS)
def move_tk02_branch_rate(s, parent, kids, depth, rates, eff, tuning: float) -> float:
    """Multiplier(TK02Brlens), Move_TK02BranchRate: one non-root node rate times exp((1/2 - u) tuning),
    reflected into [RATE_MIN, RATE_MAX]; updates the effective lengths of its branch and of its children's
    branches of positive length, -inf if one leaves [RELBRLENS_MIN, RELBRLENS_MAX]."""
    v = pick_timed_branch(s, parent, depth)
    old = rates[v]
    new = reflect(old * math.exp((0.5 - rng.uniform(s)) * tuning), RATE_MIN, RATE_MAX)
    rates[v] = new
    eff[v] = (depth[parent[v]] - depth[v]) * (new + rates[parent[v]]) / 2.0
    if not _in_bounds(eff[v]):
        return -math.inf
    for j in range(2):
        c = kids[v, j]
        if c >= 0 and depth[v] - depth[c] > 0.0:
            eff[c] = (depth[v] - depth[c]) * (rates[c] + new) / 2.0
            if not _in_bounds(eff[c]):
                return -math.inf
    return math.log(new / old)
