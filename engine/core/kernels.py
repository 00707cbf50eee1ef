"""The core's likelihood kernels, on partials stored pattern-innermost: (categories, states, patterns).

With patterns innermost every loop over patterns is a plain stride-1 loop that the compiler turns into
SIMD instructions, for any state count (on 4-state data about 2x faster than the state-innermost
kernels of mbgpu.likelihood.compiled_kernels, measured on the development VM). Every child is a
vector `x` read at category `c * xs` (xs 0: a tip, shape (1, S, P), one-hot or ambiguous). Rescaling
is by exact powers of two and only for patterns whose largest entry falls below RESCALE_BELOW.
"""
from __future__ import annotations

import math

import numba

from mbgpu.jit import JIT_OPTIONS

LOG2 = math.log(2.0)
RESCALE_BELOW = 2.0 ** -64     # patterns whose largest partial is smaller get rescaled


@numba.njit(**JIT_OPTIONS)
def _child_into(out, x, m, n_states):
    """out[i, p] = sum_j m[i, j] x[j, p]."""
    n_patterns = out.shape[1]
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
def node_update(dest, x1, xs1, m1, x2, xs2, m2, work):
    """dest[c] = (P1 child1) * (P2 child2) per category."""
    n_cat, n_states, n_patterns = dest.shape
    if n_states == 4:
        _vv4(dest, x1, xs1, m1, x2, xs2, m2)
        return
    w1, w2 = work[0], work[1]
    for c in range(n_cat):
        _child_into(w1, x1[c * xs1], m1[c], n_states)
        _child_into(w2, x2[c * xs2], m2[c], n_states)
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
def root_sites(root, x, xs, m, freqs, cweights, work, site):
    """site[p] = sum_c w_c sum_i f_i root[c, i, p] (P x)[i, p]: the root's partials times its third
    child's branch."""
    n_cat, n_states, n_patterns = root.shape
    site[:] = 0.0
    w1 = work[0]
    for c in range(n_cat):
        r = root[c]
        if n_states == 4:
            _root4(r, x[c * xs], m[c], cweights[c] * freqs[0], cweights[c] * freqs[1], cweights[c] * freqs[2],
                   cweights[c] * freqs[3], site)
            continue
        _child_into(w1, x[c * xs], m[c], n_states)
        for i in range(n_states):
            f = cweights[c] * freqs[i]
            a, b = r[i], w1[i]
            for p in range(n_patterns):
                site[p] += f * a[p] * b[p]


@numba.njit(**JIT_OPTIONS)
def _root4(r, v, a, f0, f1, f2, f3, site):
    """One category of root_sites for four states, fused."""
    r0, r1, r2, r3 = r[0], r[1], r[2], r[3]
    v0, v1, v2, v3 = v[0], v[1], v[2], v[3]
    for p in range(r.shape[1]):
        y0, y1, y2, y3 = v0[p], v1[p], v2[p], v3[p]
        site[p] += (f0 * r0[p] * (a[0, 0] * y0 + a[0, 1] * y1 + a[0, 2] * y2 + a[0, 3] * y3)
                    + f1 * r1[p] * (a[1, 0] * y0 + a[1, 1] * y1 + a[1, 2] * y2 + a[1, 3] * y3)
                    + f2 * r2[p] * (a[2, 0] * y0 + a[2, 1] * y1 + a[2, 2] * y2 + a[2, 3] * y3)
                    + f3 * r3[p] * (a[3, 0] * y0 + a[3, 1] * y1 + a[3, 2] * y2 + a[3, 3] * y3))


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
