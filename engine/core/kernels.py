"""The core's likelihood kernels, on partials stored pattern-innermost: (categories, states, patterns).

With patterns innermost every loop over patterns is a plain stride-1 loop that the compiler turns into
SIMD instructions, for any state count (on 4-state data about 2.5x faster than the state-innermost
kernels of mbgpu.likelihood.compiled_kernels, measured on the development VM). A child is either a
compact tip (`states` uint8[P], a value >= S meaning any state), or a vector `x` read at category
`c * xs` (xs 0: a tip's partials, shape (1, S, P)). Rescaling is by exact powers of two and only for
patterns whose largest entry falls below RESCALE_BELOW, as compiled_kernels.rescale_where_needed.
"""
from __future__ import annotations

import math

import numba
import numpy as np

from mbgpu.jit import JIT_OPTIONS
from mbgpu.likelihood.compiled_kernels import RESCALE_BELOW

LOG2 = math.log(2.0)


@numba.njit(**JIT_OPTIONS)
def _child_into(out, compact, states, x, m, n_states):
    """out[i, p] = sum_j m[i, j] x[j, p] (a vector child) or m[i, states[p]] (a compact tip; 1 for 'any')."""
    n_patterns = out.shape[1]
    if compact:
        lut = np.empty(n_states + 1)
        for i in range(n_states):
            for j in range(n_states):
                lut[j] = m[i, j]
            lut[n_states] = 1.0
            row = out[i]
            for p in range(n_patterns):
                row[p] = lut[states[p]]
        return
    for i in range(n_states):
        row = out[i]
        a = m[i, 0]
        x0 = x[0]
        for p in range(n_patterns):
            row[p] = a * x0[p]
        for j in range(1, n_states):
            a = m[i, j]
            xj = x[j]
            for p in range(n_patterns):
                row[p] += a * xj[p]


@numba.njit(**JIT_OPTIONS)
def _vv4(dest, u_all, xs1, a_all, w_all, xs2, b_all):
    """Four states, two vector children: one fused pass per category and state."""
    n_cat, _, n_patterns = dest.shape
    for c in range(n_cat):
        a, b = a_all[c], b_all[c]
        u, w = u_all[c * xs1], w_all[c * xs2]
        u0, u1, u2, u3, w0, w1, w2, w3 = u[0], u[1], u[2], u[3], w[0], w[1], w[2], w[3]
        for i in range(4):
            d = dest[c, i]
            a0, a1, a2, a3 = a[i, 0], a[i, 1], a[i, 2], a[i, 3]
            b0, b1, b2, b3 = b[i, 0], b[i, 1], b[i, 2], b[i, 3]
            for p in range(n_patterns):
                d[p] = ((a0 * u0[p] + a1 * u1[p] + a2 * u2[p] + a3 * u3[p])
                        * (b0 * w0[p] + b1 * w1[p] + b2 * w2[p] + b3 * w3[p]))


@numba.njit(**JIT_OPTIONS)
def _tv4(dest, st, a_all, w_all, xs2, b_all):
    """Four states, a compact tip (states st, matrices a) and a vector child."""
    n_cat, _, n_patterns = dest.shape
    lut = np.ones(5)
    for c in range(n_cat):
        a, b = a_all[c], b_all[c]
        w = w_all[c * xs2]
        w0, w1, w2, w3 = w[0], w[1], w[2], w[3]
        for i in range(4):
            d = dest[c, i]
            lut[0], lut[1], lut[2], lut[3] = a[i, 0], a[i, 1], a[i, 2], a[i, 3]
            b0, b1, b2, b3 = b[i, 0], b[i, 1], b[i, 2], b[i, 3]
            for p in range(n_patterns):
                d[p] = lut[st[p]] * (b0 * w0[p] + b1 * w1[p] + b2 * w2[p] + b3 * w3[p])


@numba.njit(**JIT_OPTIONS)
def _tt4(dest, s1, a_all, s2, b_all):
    """Four states, two compact tips."""
    n_cat, _, n_patterns = dest.shape
    l1 = np.ones(5)
    l2 = np.ones(5)
    for c in range(n_cat):
        a, b = a_all[c], b_all[c]
        for i in range(4):
            d = dest[c, i]
            l1[0], l1[1], l1[2], l1[3] = a[i, 0], a[i, 1], a[i, 2], a[i, 3]
            l2[0], l2[1], l2[2], l2[3] = b[i, 0], b[i, 1], b[i, 2], b[i, 3]
            for p in range(n_patterns):
                d[p] = l1[s1[p]] * l2[s2[p]]


@numba.njit(**JIT_OPTIONS)
def _node4(dest, k1, s1, x1, xs1, m1, k2, s2, x2, xs2, m2):
    """node_update for four states."""
    if not k1 and not k2:
        _vv4(dest, x1, xs1, m1, x2, xs2, m2)
    elif k1 and k2:
        _tt4(dest, s1, m1, s2, m2)
    elif k1:
        _tv4(dest, s1, m1, x2, xs2, m2)
    else:
        _tv4(dest, s2, m2, x1, xs1, m1)


@numba.njit(**JIT_OPTIONS)
def node_update(dest, k1, s1, x1, xs1, m1, k2, s2, x2, xs2, m2, work):
    """dest[c] = (P1 child1) * (P2 child2) per category; k: True for a compact tip child."""
    n_cat, n_states, n_patterns = dest.shape
    if n_states == 4:
        _node4(dest, k1, s1, x1, xs1, m1, k2, s2, x2, xs2, m2)
        return
    w1, w2 = work[0], work[1]
    for c in range(n_cat):
        _child_into(w1, k1, s1, x1[c * xs1], m1[c], n_states)
        _child_into(w2, k2, s2, x2[c * xs2], m2[c], n_states)
        d = dest[c]
        for i in range(n_states):
            a, b, r = w1[i], w2[i], d[i]
            for p in range(n_patterns):
                r[p] = a[p] * b[p]


@numba.njit(**JIT_OPTIONS)
def rescale(dest, scale_row, largest):
    """Patterns whose largest entry is below RESCALE_BELOW are multiplied by the power of two that brings
    it into [0.5, 1); scale_row holds log(1 / factor) (0 elsewhere)."""
    n_cat, n_states, n_patterns = dest.shape
    largest[:] = 0.0
    for c in range(n_cat):
        if n_states == 4:                      # four rows per pass: 2.5x faster than one at a time
            r0, r1, r2, r3 = dest[c, 0], dest[c, 1], dest[c, 2], dest[c, 3]
            for p in range(n_patterns):
                a = r0[p] if r0[p] > r1[p] else r1[p]
                b = r2[p] if r2[p] > r3[p] else r3[p]
                a = a if a > b else b
                largest[p] = a if a > largest[p] else largest[p]
            continue
        for i in range(n_states):
            r = dest[c, i]
            for p in range(n_patterns):
                x = r[p]
                largest[p] = x if x > largest[p] else largest[p]
    for p in range(n_patterns):
        big = largest[p]
        if big >= RESCALE_BELOW or big <= 0.0:
            scale_row[p] = 0.0
            continue
        _m, e = math.frexp(big)
        f = math.ldexp(1.0, -e)
        for c in range(n_cat):
            for i in range(n_states):
                dest[c, i, p] *= f
        scale_row[p] = e * LOG2


@numba.njit(**JIT_OPTIONS)
def _root4(root, kind, states, x, xs, m, freqs, cweights, site):
    """root_sites for four states and an edge child (kind 1: compact tip, 2: vector)."""
    n_cat, _, n_patterns = root.shape
    lut = np.ones((4, 5))
    for c in range(n_cat):
        r0, r1, r2, r3 = root[c, 0], root[c, 1], root[c, 2], root[c, 3]
        w = cweights[c]
        f0, f1, f2, f3 = w * freqs[0], w * freqs[1], w * freqs[2], w * freqs[3]
        a = m[c]
        if kind == 1:
            for i in range(4):
                for j in range(4):
                    lut[i, j] = a[i, j]
            l0, l1, l2, l3 = lut[0], lut[1], lut[2], lut[3]
            for p in range(n_patterns):
                t = states[p]
                site[p] += f0 * r0[p] * l0[t] + f1 * r1[p] * l1[t] + f2 * r2[p] * l2[t] + f3 * r3[p] * l3[t]
            continue
        v = x[c * xs]
        v0, v1, v2, v3 = v[0], v[1], v[2], v[3]
        for p in range(n_patterns):
            y0, y1, y2, y3 = v0[p], v1[p], v2[p], v3[p]
            site[p] += (f0 * r0[p] * (a[0, 0] * y0 + a[0, 1] * y1 + a[0, 2] * y2 + a[0, 3] * y3)
                        + f1 * r1[p] * (a[1, 0] * y0 + a[1, 1] * y1 + a[1, 2] * y2 + a[1, 3] * y3)
                        + f2 * r2[p] * (a[2, 0] * y0 + a[2, 1] * y1 + a[2, 2] * y2 + a[2, 3] * y3)
                        + f3 * r3[p] * (a[3, 0] * y0 + a[3, 1] * y1 + a[3, 2] * y2 + a[3, 3] * y3))


@numba.njit(**JIT_OPTIONS)
def root_sites(root, kind, states, x, xs, m, freqs, cweights, work, site):
    """site[p] = sum_c w_c sum_i f_i root[c, i, p] (P child)[i, p]; kind 0: no edge child."""
    n_cat, n_states, n_patterns = root.shape
    site[:] = 0.0
    if n_states == 4 and kind != 0:
        _root4(root, kind, states, x, xs, m, freqs, cweights, site)
        return
    w1 = work[0]
    for c in range(n_cat):
        if kind == 0:
            for i in range(n_states):
                w1[i, :] = 1.0
        else:
            _child_into(w1, kind == 1, states, x[c * xs], m[c], n_states)
        r = root[c]
        for i in range(n_states):
            f = cweights[c] * freqs[i]
            a, b = r[i], w1[i]
            for p in range(n_patterns):
                site[p] += f * a[p] * b[p]


@numba.njit(**JIT_OPTIONS)
def site_logs(site, scale_row, inv, pinvar, out):
    """ln L_p from the variable-site likelihood, the log scale and the +I term (inv[p]: sum of the
    frequencies of the states every tip allows at p)."""
    log_var = math.log1p(-pinvar) if pinvar > 0.0 else 0.0
    for p in range(site.shape[0]):
        x, scale = site[p], scale_row[p]
        iv = inv[p] if pinvar > 0.0 else 0.0
        if iv <= 0.0:
            out[p] = (math.log(x) if x > 0.0 else -math.inf) + scale + log_var
        elif -scale < 600.0:
            out[p] = scale + math.log((1.0 - pinvar) * x + pinvar * iv * math.exp(-scale))
        else:
            a = (math.log(x) if x > 0.0 else -math.inf) + scale + log_var
            b = math.log(pinvar * iv)
            hi, lo = (a, b) if a > b else (b, a)
            out[p] = hi + math.log1p(math.exp(lo - hi))
