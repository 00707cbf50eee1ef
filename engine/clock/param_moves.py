"""Moves of the clock rate and of the tree-prior parameters (MrBayes 3.2.7a proposal.c): Multiplier(Clockrate),
Multiplier(Net_speciation), Slider(Relative_extinction), Slider(Relative_fossilization), Multiplier(Popsize).

Each kernel changes its state arrays in place and returns the log proposal ratio (Hastings ratio with any
Jacobian), or -inf where MrBayes aborts the proposal, the arrays then left as they were. The caller adds the
prior and likelihood ratios (mbgpu.clock): the parts of MrBayes' lnPriorRatio that these moves compute
themselves (tree prior, coalescent θ, parameter prior) are not in the return value. Parameters are float64
arrays (several values for relative_fossilization under fossil-sampling rate shifts; MrBayes changes one,
picked uniformly). Plain loops for numba; random numbers from mbgpu.core.rng.
"""
from __future__ import annotations

import math

import numba

from mbgpu.clock.limits import BRLENS_MAX, BRLENS_MIN, POS_INFINITY, POS_MIN, TIME_MIN
from mbgpu.core import rng
from mbgpu.core.branch_moves import reflect
from mbgpu.jit import JIT_OPTIONS


# MrBayes' default tuning, autotune target and relative weight (clocks.md §4; showmoves of mb-double prints
# lambda 0.811 = 2 ln 1.5, 0.191 = 2 ln 1.1, delta 0.100, target 0.250)
CLOCKRATE_LAMBDA, CLOCKRATE_TARGET, CLOCKRATE_WEIGHT = 2.0 * math.log(1.5), 0.25, 3.0
SPECIATION_LAMBDA, SPECIATION_TARGET, SPECIATION_WEIGHT = 2.0 * math.log(1.1), 0.25, 3.0
EXTINCTION_DELTA, EXTINCTION_TARGET, EXTINCTION_WEIGHT = 0.1, 0.25, 3.0
FOSSILIZATION_DELTA, FOSSILIZATION_TARGET, FOSSILIZATION_WEIGHT = 0.1, 0.25, 3.0
POPSIZE_LAMBDA, POPSIZE_TARGET, POPSIZE_WEIGHT = 2.0 * math.log(1.5), 0.25, 1.0

# value bounds of the moves
CLOCKRATE_MIN, CLOCKRATE_MAX = POS_MIN, POS_INFINITY          # param->min/max of clockrate: assumed, model.c unread
SPECIATION_MIN, SPECIATION_MAX = 0.000001, 1000.0             # speciationpr=exponential (uniform: its bounds)
EXTINCTION_MIN, EXTINCTION_MAX = 0.0, 0.99999
FOSSILIZATION_MIN, FOSSILIZATION_MAX = 0.00001, 1.0
POPSIZE_MIN, POPSIZE_MAX = 0.00001, 10000000.0                # popsizepr other than uniform (uniform: its bounds)


@numba.njit(**JIT_OPTIONS)
def multiply(s, x, lam, lo, hi):
    """(new value, log proposal ratio) of MrBayes' multiplier (Move_PosRealMultiplier, Move_Speciation_M):
    x·exp(λ(u-½)), reflected into [lo, hi] as lo²/x or hi²/x; the ratio is log(new/old)."""
    new = reflect(x * math.exp(lam * (rng.uniform(s) - 0.5)), lo, hi)
    return new, math.log(new / x)


@numba.njit(**JIT_OPTIONS)
def slide(s, x, delta, lo, hi):
    """MrBayes' sliding window (Move_Extinction, Move_Fossilization): x + δ(u-½) with δ at most hi-lo,
    reflected into [lo, hi] as 2lo-x or 2hi-x; symmetric, so its log proposal ratio is 0."""
    if delta > hi - lo:
        delta = hi - lo
    new = x + delta * (rng.uniform(s) - 0.5)
    while new < lo or new > hi:
        if new < lo:
            new = 2.0 * lo - new
        else:
            new = 2.0 * hi - new
    return new


@numba.njit(**JIT_OPTIONS)
def clock_rate_multiplier(s, clock_rate, parent, depth, lam, n_events) -> float:
    """Multiplier(Clockrate) (Move_ClockRate_M): the clock rate (clock_rate[0]) by a multiplier and every
    node depth (substitution units) by the same factor, so node ages (depth / rate) and calibrations stay.
    The tree priors are densities of ages, so the depths add no Jacobian: the ratio is log(new/old), plus
    MrBayes' Σ CPP events × log(factor) when `n_events` (events per node) is not empty. Aborts (-inf) as
    MrBayes when a branch grows past BRLENS_MAX, a branch above BRLENS_MIN falls below it, or one below
    TIME_MIN (a sampled ancestor's, 0) rises above it."""
    old = clock_rate[0]
    new, ln_ratio = multiply(s, old, lam, CLOCKRATE_MIN, CLOCKRATE_MAX)
    factor = new / old
    for v in range(parent.shape[0]):
        p = parent[v]
        if p >= 0:
            old_len = depth[p] - depth[v]
            new_len = old_len * factor
            if (new_len < 0.0 or new_len > BRLENS_MAX or (old_len > BRLENS_MIN and new_len < BRLENS_MIN)
                    or (old_len < TIME_MIN and new_len > TIME_MIN)):
                return -math.inf
    for v in range(parent.shape[0]):
        depth[v] *= factor
    clock_rate[0] = new
    events = 0
    for v in range(n_events.shape[0]):
        if parent[v] >= 0:
            events += n_events[v]
    return ln_ratio + events * math.log(factor)


@numba.njit(**JIT_OPTIONS)
def speciation_multiplier(s, values, lam, lo, hi) -> float:
    """Multiplier(Net_speciation) (Move_Speciation_M): one value (picked uniformly) by a multiplier,
    reflected into [lo, hi] = the uniform prior's bounds or (SPECIATION_MIN, SPECIATION_MAX)."""
    k = rng.randint(s, values.shape[0])
    new, ln_ratio = multiply(s, values[k], lam, lo, hi)
    values[k] = new
    return ln_ratio


@numba.njit(**JIT_OPTIONS)
def extinction_slider(s, values, delta) -> float:
    """Slider(Relative_extinction) (Move_Extinction): one value by a sliding window in [0, 0.99999]."""
    k = rng.randint(s, values.shape[0])
    values[k] = slide(s, values[k], delta, EXTINCTION_MIN, EXTINCTION_MAX)
    return 0.0


@numba.njit(**JIT_OPTIONS)
def fossilization_slider(s, values, delta) -> float:
    """Slider(Relative_fossilization) (Move_Fossilization): one value (one per fossil-sampling interval
    under rate shifts, picked uniformly) by a sliding window in [0.00001, 1]."""
    k = rng.randint(s, values.shape[0])
    values[k] = slide(s, values[k], delta, FOSSILIZATION_MIN, FOSSILIZATION_MAX)
    return 0.0


@numba.njit(**JIT_OPTIONS)
def popsize_multiplier(s, values, lam, lo, hi) -> float:
    """Multiplier(Popsize) (Move_PopSize_M): one value by exp(λ(u-½)), but reflected additively (2lo-x,
    2hi-x) as MrBayes does here, with the multiplier's ratio log(new/old); [lo, hi] = the uniform prior's
    bounds or (POPSIZE_MIN, POPSIZE_MAX)."""
    k = rng.randint(s, values.shape[0])
    old = values[k]
    new = old * math.exp(lam * (rng.uniform(s) - 0.5))
    while new < lo or new > hi:
        if new < lo:
            new = 2.0 * lo - new
        else:
            new = 2.0 * hi - new
    values[k] = new
    return math.log(new / old)
