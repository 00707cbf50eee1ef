"""Effective branch lengths of MrBayes 3.2.7a's relaxed clocks (what the likelihood reads and the `.t`
`[&B IgrBrlens x]` / `[&B TK02Brlens x]` / `[&B CppEvents x]` annotations print), and what the clock tree
moves (NodesliderClock, TreeStretch, ExtSPRClock, NNIClock, Multiplier(Clockrate)) do to the branch rates
when depths or the topology change (the relaxed-clock blocks at the end of those moves in proposal.c).

Branch rates and CPP events stay with node ids: a tree move only changes lengths (and parents), so after it
the caller recomputes the effective lengths and adds the returned proposal term:
- igr / tk02: no proposal term; -inf where MrBayes aborts because an updated effective length left
  [RELBRLENS_MIN, RELBRLENS_MAX] (NodesliderClock, NNIClock and ExtSPRClock check the branches they
  changed, TreeStretch and Multiplier(Clockrate) every branch; ExtSSClock, weight 0 by default, checks
  none: pass no nodes);
- cpp: Σ n_events[v] ln(new length / old length) over the branches whose length the move changed with
  their events kept at the same relative positions (all of them for NodesliderClock, TreeStretch, NNIClock,
  Multiplier(Clockrate); only the pruned branch v for ExtSPRClock, whose other branches move their events
  with `cpp_merge` / `cpp_split`, which keep absolute positions and add nothing).
"""
from __future__ import annotations

import math

import numba
import numpy as np

from mbgpu.clock.limits import RELBRLENS_MAX, RELBRLENS_MIN
from mbgpu.jit import JIT_OPTIONS

IGR, TK02, CPP = 1, 2, 3          # effective_from_lengths' kinds (mbgpu.core.clock_moves' ClockArgs.relaxed)


@numba.njit(**JIT_OPTIONS)
def branch_lengths_of(parent, depth, out) -> None:
    """out[v] = the branch length above v (0 at the root): the `old_length` a tree move records before it
    changes depths, for cpp_length_jacobian."""
    for v in range(parent.shape[0]):
        out[v] = depth[parent[v]] - depth[v] if parent[v] >= 0 else 0.0


@numba.njit(**JIT_OPTIONS)
def igr_effective_lengths(parent, depth, rates, eff) -> None:
    """eff[v] = rates[v] x the branch length above v (UpdateIgrBrachLengths); 0 at the root."""
    _of_depths(IGR, parent, depth, rates, eff)


@numba.njit(**JIT_OPTIONS)
def tk02_effective_lengths(parent, depth, rates, eff) -> None:
    """eff[v] = branch length x (rates[v] + rates[parent]) / 2 (UpdateTK02EvolLengths); 0 at the root."""
    _of_depths(TK02, parent, depth, rates, eff)


@numba.njit(**JIT_OPTIONS)
def _of_depths(kind, parent, depth, rates, eff) -> None:
    """effective_from_lengths (igr / tk02) of the depths' branch lengths."""
    n = parent.shape[0]
    lengths = np.empty(n)
    branch_lengths_of(parent, depth, lengths)
    effective_from_lengths(kind, parent, np.zeros((n, 2), dtype=np.int64), lengths, rates,
                           np.zeros(n, dtype=np.int64), np.zeros((n, 1)), np.ones((n, 1)), eff)


@numba.njit(**JIT_OPTIONS)
def effective_from_lengths(kind, parent, kids, lengths, rates, n_events, positions, multipliers, eff) -> None:
    """eff[v]: the effective length of v's branch of MrBayes' length `lengths[v]` (0 at the root) under the
    relaxed clock `kind`: igr rates[v] x length, tk02 length x (rates[v] + rates[parent]) / 2, cpp
    cpp_effective_from_lengths. The one formula RelaxedState and the compiled core's clock rows use."""
    if kind == CPP:
        cpp_effective_from_lengths(parent, kids, lengths, n_events, positions, multipliers, eff)
        return
    for v in range(parent.shape[0]):
        p = parent[v]
        if p < 0:
            eff[v] = 0.0
        elif kind == IGR:
            eff[v] = rates[v] * lengths[v]
        else:
            eff[v] = lengths[v] * (rates[v] + rates[p]) / 2.0


@numba.njit(**JIT_OPTIONS)
def cpp_branch_factor(positions, multipliers, v: int, k: int) -> float:
    """The mean rate along the branch above v relative to the rate at its bottom (UpdateCppEvolLength):
    the piece between positions i-1 and i runs at the product of multipliers i.. k-1 (0 = top)."""
    if k == 0:
        return 1.0
    x = positions[v, 0] * multipliers[v, 0]
    for i in range(1, k):
        x += positions[v, i] - positions[v, i - 1]
        x *= multipliers[v, i]
    return x + 1.0 - positions[v, k - 1]


@numba.njit(**JIT_OPTIONS)
def cpp_effective_lengths(parent, kids, depth, n_events, positions, multipliers, eff) -> None:
    """cpp_effective_from_lengths with the branch lengths of the depths."""
    lengths = np.empty(parent.shape[0])
    branch_lengths_of(parent, depth, lengths)
    cpp_effective_from_lengths(parent, kids, lengths, n_events, positions, multipliers, eff)


@numba.njit(**JIT_OPTIONS)
def cpp_effective_from_lengths(parent, kids, lengths, n_events, positions, multipliers, eff) -> None:
    """eff[v] = lengths[v] x the rate at the bottom of v's branch (product of all multipliers above the root
    on the path) x cpp_branch_factor (UpdateCppEvolLengths over the whole tree, MrBayes' p->length being
    `lengths`); 0 at the root."""
    n = parent.shape[0]
    base = np.ones(n)                        # rate at the bottom (parent end) of each node's branch
    stack = np.empty(n, dtype=np.int64)
    root = 0
    while parent[root] >= 0:
        root += 1
    stack[0], top = root, 1
    while top > 0:
        top -= 1
        v = stack[top]
        k = n_events[v]
        end = base[v]
        for i in range(k):
            end *= multipliers[v, i]
        eff[v] = lengths[v] * base[v] * cpp_branch_factor(positions, multipliers, v, k) if parent[v] >= 0 else 0.0
        for j in range(2):
            c = kids[v, j]
            if c >= 0:
                base[c] = end
                stack[top] = c
                top += 1


@numba.njit(**JIT_OPTIONS)
def lengths_in_bounds(parent, depth, eff, nodes) -> bool:
    """Whether every listed node with a branch of positive length has its effective length in
    [RELBRLENS_MIN, RELBRLENS_MAX] (the abort test of the igr / tk02 blocks)."""
    for i in range(nodes.shape[0]):
        v = nodes[i]
        if parent[v] >= 0 and depth[parent[v]] - depth[v] > 0.0:
            if eff[v] < RELBRLENS_MIN or eff[v] > RELBRLENS_MAX:
                return False
    return True


@numba.njit(**JIT_OPTIONS)
def igr_after_tree_change(parent, depth, rates, eff, nodes) -> float:
    """Recompute the igr effective lengths after a tree move; 0, or -inf if a listed node's left the
    bounds (the caller's move aborts)."""
    igr_effective_lengths(parent, depth, rates, eff)
    return 0.0 if lengths_in_bounds(parent, depth, eff, nodes) else -math.inf


@numba.njit(**JIT_OPTIONS)
def tk02_after_tree_change(parent, depth, rates, eff, nodes) -> float:
    """Recompute the tk02 effective lengths after a tree move; 0, or -inf if a listed node's left the
    bounds (the caller's move aborts)."""
    tk02_effective_lengths(parent, depth, rates, eff)
    return 0.0 if lengths_in_bounds(parent, depth, eff, nodes) else -math.inf


@numba.njit(**JIT_OPTIONS)
def cpp_length_jacobian(old_length, parent, depth, n_events, nodes) -> float:
    """Σ over the listed nodes of n_events[v] ln(new length / old length): the events keep their relative
    positions, so their absolute positions stretch with the branch (the CPP proposal term of the tree
    moves); `old_length[v]` is the branch length above v before the move."""
    total = 0.0
    for i in range(nodes.shape[0]):
        v = nodes[i]
        if n_events[v] > 0:
            total += n_events[v] * math.log((depth[parent[v]] - depth[v]) / old_length[v])
    return total


@numba.njit(**JIT_OPTIONS)
def cpp_after_tree_change(old_length, parent, kids, depth, n_events, positions, multipliers, eff, nodes) -> float:
    """Recompute the CPP effective lengths after a tree move and return cpp_length_jacobian (listed nodes
    as in the module docstring)."""
    cpp_effective_lengths(parent, kids, depth, n_events, positions, multipliers, eff)
    return cpp_length_jacobian(old_length, parent, depth, n_events, nodes)


@numba.njit(**JIT_OPTIONS)
def cpp_merge(a: int, u: int, n_events, positions, multipliers, len_a: float, len_u: float) -> bool:
    """ExtSPRClock's prune: a's branch (len_a) and its parent u's below it (len_u) become one branch above
    a; u's events follow a's, all at the same absolute places; u keeps none. False if a's row is full."""
    n1, n2 = n_events[a], n_events[u]
    if n1 + n2 > positions.shape[1]:
        return False
    total = len_a + len_u
    for j in range(n1):
        positions[a, j] *= len_a / total
    for j in range(n2):
        positions[a, n1 + j] = (positions[u, j] * len_u + len_a) / total
        multipliers[a, n1 + j] = multipliers[u, j]
    n_events[a], n_events[u] = n1 + n2, 0
    return True


@numba.njit(**JIT_OPTIONS)
def cpp_split(a: int, u: int, n_events, positions, multipliers, len_a: float, len_u: float) -> bool:
    """ExtSPRClock's regraft: u is inserted on the branch above a (length len_a + len_u before), a keeping
    the top len_a; the events above relative position len_a / (len_a + len_u) stay with a, the others go to
    u (which has none), all at the same absolute places. False if u's row is too small."""
    total = len_a + len_u
    cut = len_a / total
    n4 = 0
    while n4 < n_events[a] and positions[a, n4] <= cut:
        n4 += 1
    n5 = n_events[a] - n4
    if n5 > positions.shape[1]:
        return False
    for j in range(n5):
        positions[u, j] = (positions[a, n4 + j] * total - len_a) / len_u
        multipliers[u, j] = multipliers[a, n4 + j]
    for j in range(n4):
        positions[a, j] *= total / len_a
    n_events[a], n_events[u] = n4, n5
    return True
