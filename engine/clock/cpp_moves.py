"""Moves of MrBayes 3.2.7a's compound Poisson process relaxed clock (proposal.c): Multiplier(Lambda_cpp)
(Move_CPPRate), Add_delete(CppEvents) (Move_AddDeleteCPPEvent), Prior_draw_pos(CppEvents)
(Move_CPPEventPosition) and Prior_draw_mult(CppEvents) (Move_CPPRateMultiplierRnd).

State: `n_events[v]` events on the branch above node v, at relative positions `positions[v, :n]` (sorted,
0 = the top of the branch, the child's end; 1 = its parent's end) with rate multipliers
`multipliers[v, :n]`; the arrays have a fixed capacity (columns) that the caller grows with `grow` before
it fills up (an add into a full row is rejected, which MrBayes never does). `eff` holds the effective branch
lengths (relaxed_lengths.cpp_effective_lengths), refreshed by every move here. Moves return the log proposal
ratio or -inf where MrBayes aborts; the caller recomputes the prior (relaxed.ln_cpp_events + cppRate's).
"""
from __future__ import annotations

import math

import numba
import numpy as np

from mbgpu.clock.distributions import ln_lognormal_pdf
from mbgpu.clock.relaxed_lengths import cpp_effective_lengths
from mbgpu.clock.limits import CPPLAMBDA_MAX, CPPLAMBDA_MIN, CPPMULT_MAX, CPPMULT_MIN, POS_MIN
from mbgpu.clock.relaxed_moves import LAMBDA, multiply
from mbgpu.core import rng
from mbgpu.jit import JIT_OPTIONS


LAMBDA_CPP = LAMBDA                  # Multiplier(Lambda_cpp) tuning (0.191), autotune target 0.25
WEIGHT_CPP_RATE = 2.0                # Multiplier(Lambda_cpp)
WEIGHT_ADD_DELETE = 1.0              # Add_delete(CppEvents), no tuning
WEIGHT_DRAW_POSITION = 2.0           # Prior_draw_pos(CppEvents), no tuning
WEIGHT_DRAW_MULTIPLIER = 2.0         # Prior_draw_mult(CppEvents), no tuning


@numba.njit(**JIT_OPTIONS)
def move_cpp_rate(s, old: float, tuning: float):
    """Multiplier(Lambda_cpp), Move_CPPRate: (new cppRate, log proposal ratio), reflected into
    [CPPLAMBDA_MIN, CPPLAMBDA_MAX]."""
    return multiply(s, old, tuning, CPPLAMBDA_MIN, CPPLAMBDA_MAX)


def grow(positions: np.ndarray, multipliers: np.ndarray, n_events: np.ndarray):
    """(positions, multipliers) with twice the columns when a row is one event short of full (call it
    between generations so that an add never meets a full row); the same arrays otherwise."""
    cap = positions.shape[1]
    if n_events.max(initial=0) < cap - 1:
        return positions, multipliers
    wider_p, wider_m = np.zeros((positions.shape[0], 2 * cap)), np.ones((positions.shape[0], 2 * cap))
    wider_p[:, :cap], wider_m[:, :cap] = positions, multipliers
    return wider_p, wider_m


@numba.njit(**JIT_OPTIONS)
def _lognormal_draw(s, sigma: float) -> float:
    """LogNormalRandomVariable(0, sigma)."""
    return math.exp(sigma * rng.normal(s))


@numba.njit(**JIT_OPTIONS)
def move_cpp_add_delete(s, parent, kids, depth, n_events, positions, multipliers, eff, sigma: float) -> float:
    """Add_delete(CppEvents), Move_AddDeleteCPPEvent: on a uniformly drawn non-root branch add an event
    (always when it has none, else with probability 1/2: position U(0,1), multiplier lognormal(0, sigma))
    or delete a uniformly drawn one; ratio L/(k+1)/q(m) for an add (x 1/2 for a first event)."""
    n = parent.shape[0]
    root = 0
    while parent[root] >= 0:
        root += 1
    v = rng.randint(s, n - 1)
    if v >= root:
        v += 1
    k = n_events[v]
    add = k == 0 or rng.uniform(s) < 0.5
    if add:
        if k == positions.shape[1]:
            return -math.inf
        m = _lognormal_draw(s, sigma)
        pos = rng.uniform(s)
        i = 0
        while i < k and positions[v, i] <= pos:
            i += 1
        for j in range(k, i, -1):
            positions[v, j] = positions[v, j - 1]
            multipliers[v, j] = multipliers[v, j - 1]
        positions[v, i], multipliers[v, i] = pos, m
    else:
        i = rng.randint(s, k)
        m = multipliers[v, i]
        for j in range(i, k - 1):
            positions[v, j] = positions[v, j + 1]
            multipliers[v, j] = multipliers[v, j + 1]
    n_events[v] = k + 1 if add else k - 1
    cpp_effective_lengths(parent, kids, depth, n_events, positions, multipliers, eff)
    length = depth[parent[v]] - depth[v]
    ln_q = ln_lognormal_pdf(0.0, sigma, m)
    if add:
        return math.log(length / (k + 1)) - ln_q + (math.log(0.5) if k == 0 else 0.0)
    return math.log(k / length) + ln_q + (math.log(2.0) if k == 1 else 0.0)


@numba.njit(**JIT_OPTIONS)
def pick_event(s, n_events):
    """(node, index) of an event drawn uniformly among all events, or (-1, -1) when there is none."""
    total = 0
    for v in range(n_events.shape[0]):
        total += n_events[v]
    if total == 0:
        return -1, -1
    k = rng.randint(s, total)
    for v in range(n_events.shape[0]):
        if k < n_events[v]:
            return v, k
        k -= n_events[v]
    return -1, -1


@numba.njit(**JIT_OPTIONS)
def move_cpp_position(s, parent, kids, depth, n_events, positions, multipliers, eff) -> float:
    """Prior_draw_pos(CppEvents), Move_CPPEventPosition: a uniformly drawn event gets a new U(0,1) position
    on its branch (abort within POS_MIN of an end; -inf when there is no event); ratio 1."""
    v, i = pick_event(s, n_events)
    if v < 0:
        return -math.inf
    pos = rng.uniform(s)
    if pos < POS_MIN or 1.0 - pos < POS_MIN:
        return -math.inf
    m = multipliers[v, i]
    k = n_events[v]
    for j in range(i, k - 1):                        # take the event out, then insert it in order
        positions[v, j] = positions[v, j + 1]
        multipliers[v, j] = multipliers[v, j + 1]
    j = k - 1
    while j > 0 and positions[v, j - 1] > pos:
        positions[v, j] = positions[v, j - 1]
        multipliers[v, j] = multipliers[v, j - 1]
        j -= 1
    positions[v, j], multipliers[v, j] = pos, m
    cpp_effective_lengths(parent, kids, depth, n_events, positions, multipliers, eff)
    return 0.0


@numba.njit(**JIT_OPTIONS)
def move_cpp_multiplier(s, parent, kids, depth, n_events, positions, multipliers, eff, sigma: float) -> float:
    """Prior_draw_mult(CppEvents), Move_CPPRateMultiplierRnd: a uniformly drawn event's multiplier redrawn
    from lognormal(0, sigma) within [CPPMULT_MIN, CPPMULT_MAX]; ratio q(old)/q(new)."""
    v, i = pick_event(s, n_events)
    if v < 0:
        return -math.inf
    old = multipliers[v, i]
    new = _lognormal_draw(s, sigma)
    while new < CPPMULT_MIN or new > CPPMULT_MAX:
        new = _lognormal_draw(s, sigma)
    multipliers[v, i] = new
    cpp_effective_lengths(parent, kids, depth, n_events, positions, multipliers, eff)
    return ln_lognormal_pdf(0.0, sigma, old) - ln_lognormal_pdf(0.0, sigma, new)
